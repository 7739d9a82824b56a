package apikey_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/streams"
)

type testBundle struct {
	ctx  context.Context
	js   jetstream.JetStream
	kv   jetstream.KeyValue // the bucket, raw
	keys *apikey.Keys
}

func setup(t testing.TB) testBundle {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	return bundle(t, n.JS)
}

func bundle(t testing.TB, js jetstream.JetStream) testBundle {
	t.Helper()
	ctx := heraldtest.Context(t)
	keys, err := apikey.Open(ctx, js)
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx, apikey.Bucket)
	require.NoError(t, err)
	return testBundle{ctx: ctx, js: js, kv: kv, keys: keys}
}

// digest is what the bucket keeps of a secret.
func digest(secret []byte) string {
	sum := sha256.Sum256(secret)
	return hex.EncodeToString(sum[:])
}

var keyPattern = regexp.MustCompile(`^hk_[a-z2-7]{12}_[a-z2-7]{52}$`)

func TestCreateGetListRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t)

	plain, acme, err := b.keys.Create(b.ctx, apikey.Spec{Tenant: "acme", Name: "billing backend"})
	require.NoError(t, err)
	require.Regexp(t, keyPattern, plain)
	require.True(t, strings.HasPrefix(plain, "hk_"+acme.ID+"_"), "the key names its id")
	require.Equal(t, []apikey.Scope{apikey.Send, apikey.Read}, acme.Scopes, "send and read unless told")
	require.False(t, acme.Created.IsZero())

	_, reader, err := b.keys.Create(b.ctx, apikey.Spec{Tenant: "globex", Scopes: []apikey.Scope{apikey.Read, apikey.Read}})
	require.NoError(t, err)
	require.Equal(t, []apikey.Scope{apikey.Read}, reader.Scopes)
	_, admin, err := b.keys.Create(b.ctx, apikey.Spec{Admin: true, Name: "ops"})
	require.NoError(t, err)
	require.Equal(t, []apikey.Scope{apikey.Admin}, admin.Scopes)
	require.Empty(t, admin.Tenant)

	got, err := b.keys.Get(b.ctx, acme.ID)
	require.NoError(t, err)
	require.Equal(t, acme.ID, got.ID)
	require.Equal(t, "billing backend", got.Name)

	all, err := b.keys.List(b.ctx, "")
	require.NoError(t, err)
	require.Equal(t, []string{acme.ID, reader.ID, admin.ID}, ids(all), "oldest first")
	only, err := b.keys.List(b.ctx, "globex")
	require.NoError(t, err)
	require.Equal(t, []string{reader.ID}, ids(only))

	require.NoError(t, b.keys.Revoke(b.ctx, acme.ID))
	got, err = b.keys.Get(b.ctx, acme.ID)
	require.NoError(t, err)
	require.False(t, got.Revoked.IsZero(), "the record stays, revoked")
	require.NoError(t, b.keys.Revoke(b.ctx, acme.ID), "revoking twice is no error")
	again, err := b.keys.Get(b.ctx, acme.ID)
	require.NoError(t, err)
	require.Equal(t, got.Revoked, again.Revoked, "and changes nothing")

	for _, id := range []string{"aaaaaaaaaaaa", "no.such>key", ""} {
		_, err = b.keys.Get(b.ctx, id)
		require.ErrorIs(t, err, apikey.ErrNotFound, id)
		require.ErrorIs(t, b.keys.Revoke(b.ctx, id), apikey.ErrNotFound, id)
	}
}

func ids(keys []apikey.Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.ID
	}
	return out
}

func TestCreateRefusesWhatCannotBe(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		spec apikey.Spec
		want string
	}{
		{apikey.Spec{}, "tenant: required (or an admin or observer key)"},
		{apikey.Spec{Observer: true, Tenant: "acme"}, "an observer key is neither an admin's nor a tenant's"},
		{apikey.Spec{Observer: true, Admin: true}, "an observer key is neither an admin's nor a tenant's"},
		{apikey.Spec{Observer: true, Scopes: []apikey.Scope{apikey.Read}}, "scopes: an observer key has the observe scope only"},
		{apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Observe}}, `scopes: unknown scope "observe"`},
		{apikey.Spec{Tenant: "acme.eu"}, `tenant: "acme.eu" is not a tenant id`},
		{apikey.Spec{Tenant: "a b"}, `tenant: "a b" is not a tenant id`},
		{apikey.Spec{Admin: true, Tenant: "acme"}, "tenant: an admin key belongs to no tenant"},
		{apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send, apikey.Admin}}, "scopes: a tenant key cannot have the admin scope"},
		{apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{"write"}}, `scopes: unknown scope "write"`},
		{apikey.Spec{Admin: true, Scopes: []apikey.Scope{apikey.Admin, apikey.Read}}, "scopes: an admin key has the admin scope only"},
		{apikey.Spec{Tenant: "acme", Name: "line\nbreak"}, "name: only printable characters"},
		{apikey.Spec{Tenant: "acme", Name: "line\u2028separator"}, "name: only printable characters: it holds a control character (U+2028 at byte 4)"},
		{apikey.Spec{Tenant: "acme", Name: "clear\x1b[2J"}, "name: only printable characters"},
		{apikey.Spec{Tenant: "acme", Name: strings.Repeat("n", 201)}, "name: at most 200 characters"},
	} {
		_, _, err := b.keys.Create(b.ctx, c.spec)
		require.ErrorIs(t, err, apikey.ErrBadSpec, c.want)
		require.ErrorContains(t, err, c.want)
	}
	all, err := b.keys.List(b.ctx, "")
	require.NoError(t, err)
	require.Empty(t, all, "nothing refused was stored")
}

// Only a digest of the secret is kept: neither the bucket's values nor any
// file of the JetStream store holds the secret, in any spelling.
func TestTheSecretIsNeverStored(t *testing.T) {
	t.Parallel()
	dir := heraldtest.StoreDir(t)
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: dir})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	report, err := streams.Apply(heraldtest.Context(t), js, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	b := bundle(t, js)

	var secrets, digests [][]byte
	for _, spec := range []apikey.Spec{{Tenant: "acme"}, {Admin: true}} {
		plain, key, err := b.keys.Create(b.ctx, spec)
		require.NoError(t, err)
		encoded := strings.TrimPrefix(plain, "hk_"+key.ID+"_")
		raw, err := base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding).DecodeString(encoded)
		require.NoError(t, err)
		secrets = append(secrets, []byte(plain), []byte(encoded), raw, []byte(hex.EncodeToString(raw)))
		digests = append(digests, []byte(digest(raw)))

		e, err := b.kv.Get(b.ctx, key.ID)
		require.NoError(t, err)
		require.Contains(t, string(e.Value()), digest(raw), "the record holds the digest")
		for _, s := range secrets {
			require.False(t, bytes.Contains(e.Value(), s), "the record holds the secret")
		}
	}

	nc.Close()
	srv.Shutdown() // everything written reaches the files
	stored := heraldtest.StoredBytes(t, dir)
	for _, s := range secrets {
		require.False(t, strings.Contains(stored, string(s)), "the store holds a secret")
	}
	for _, d := range digests {
		require.True(t, strings.Contains(stored, string(d)), "the store was read where the keys are: digest %s not found", d)
	}
}
