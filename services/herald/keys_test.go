package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/heraldtest"
)

var printedKey = regexp.MustCompile(`(?m)^    (hk_[a-z2-7]{12}_[a-z2-7]{52})$`)

// The key printed once is one the API accepts; the list shows every key
// but no secret and no digest; a revoked key is refused.
func TestKeysCreateListRevoke(t *testing.T) {
	n := heraldtest.StartNATSWithStreams(t)
	t.Setenv("NATS_URL", n.Server.URL())
	t.Setenv("HERALD_CONFIG", "")
	ctx := heraldtest.Context(t)
	keys, err := apikey.Open(ctx, n.JS)
	require.NoError(t, err)
	auth, err := apikey.NewAuthenticator(keys, apikey.AuthConfig{})
	require.NoError(t, err)
	require.NoError(t, auth.Start(ctx))
	t.Cleanup(auth.Stop)
	for _, id := range []string{"acme", "globex"} {
		_, err = herald(t, "tenants", "create", id, "--plan", "startup")
		require.NoError(t, err)
	}

	out, err := herald(t, "keys", "create", "--tenant", "acme", "--name", "billing backend", "--scope", "send")
	require.NoError(t, err)
	m := printedKey.FindStringSubmatch(out)
	require.NotNil(t, m, "no key printed")
	plain := m[1]
	id, err := apikey.Parse(plain)
	require.NoError(t, err)
	// Failures quote the output: not the key, even a test's.
	out = strings.ReplaceAll(out, plain, "<the key>")
	require.Equal(t, "Created a key of tenant acme, id "+id+", scopes send.\n\n    <the key>\n\n"+
		"This key will not be shown again: Herald keeps only a hash of it. Store it now.\n", out)
	require.Eventually(t, func() bool {
		k, err := auth.Authenticate(ctx, plain)
		return err == nil && k.Tenant == "acme" && k.Allows(apikey.Send) && !k.Allows(apikey.Read)
	}, soon, tick, "the printed key is the one stored")

	out, err = herald(t, "keys", "create", "--tenant", "globex", "--json")
	require.NoError(t, err)
	var created struct {
		Key    string         `json:"key"`
		ID     string         `json:"id"`
		Tenant string         `json:"tenant"`
		Scopes []apikey.Scope `json:"scopes"`
	}
	require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &created))
	require.True(t, strings.HasPrefix(created.Key, "hk_"+created.ID+"_"))
	out = strings.ReplaceAll(out, created.Key, "<the key>")
	require.Equal(t, "globex", created.Tenant)
	require.Equal(t, []apikey.Scope{apikey.Send, apikey.Read}, created.Scopes)
	require.Contains(t, out, "will not be shown again", "said on stderr")

	out, err = herald(t, "keys", "create", "--admin", "--name", "ops")
	require.NoError(t, err)
	require.Contains(t, out, "Created an admin key, id ")
	require.Contains(t, out, "scopes admin.")

	digests := storedDigests(t, n.JS, id, created.ID)
	out, err = herald(t, "keys", "list")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 1+3+1, out)
	require.Regexp(t, `^ID +TENANT +NAME +SCOPES +CREATED +LAST USED +REVOKED$`, lines[0])
	require.Regexp(t, `^`+id+` +acme +billing backend +send +`+minute+` +(`+minute+`|-) +- *$`, lines[1])
	require.Regexp(t, `^`+created.ID+` +globex +- +send,read `, lines[2])
	require.Regexp(t, `^[a-z2-7]{12} +- +ops +admin `, lines[3])
	require.Equal(t, "3 keys", lines[4])
	for _, secret := range []string{plain, created.Key} {
		require.NotContains(t, out, strings.TrimPrefix(secret, "hk_"+secret[3:15]+"_"))
	}
	for _, d := range digests {
		require.NotContains(t, out, d)
	}

	out, err = herald(t, "keys", "list", "--tenant", "globex", "--json")
	require.NoError(t, err)
	var listed []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &listed))
	require.Len(t, listed, 1)
	require.Equal(t, created.ID, listed[0]["id"])
	require.NotContains(t, listed[0], "key")
	require.NotContains(t, listed[0], "secret_sha256")
	for _, d := range digests {
		require.NotContains(t, out, d)
	}

	out, err = herald(t, "keys", "revoke", id)
	require.NoError(t, err)
	require.Equal(t, "Revoked key "+id+": every replica refuses it within seconds.\n", out)
	require.Eventually(t, func() bool {
		_, err := auth.Authenticate(ctx, plain)
		return err == apikey.ErrUnauthorized
	}, soon, tick)
	out, err = herald(t, "keys", "list", "--tenant", "acme")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^`+id+` .* `+minute+` *\n1 key\n$`, out, "the revoked key stays, with when")
}

// minute is how the list shows a time.
const minute = `\d{4}-\d\d-\d\d \d\d:\d\dZ`

const (
	soon = 5 * time.Second
	tick = 10 * time.Millisecond
)

// storedDigests reads the digests the bucket keeps of the keys' secrets.
func storedDigests(t *testing.T, js jetstream.JetStream, ids ...string) []string {
	t.Helper()
	ctx := heraldtest.Context(t)
	kv, err := js.KeyValue(ctx, apikey.Bucket)
	require.NoError(t, err)
	var out []string
	for _, id := range ids {
		e, err := kv.Get(ctx, id)
		require.NoError(t, err)
		var r struct {
			Digest string `json:"secret_sha256"`
		}
		require.NoError(t, json.Unmarshal(e.Value(), &r))
		require.Len(t, r.Digest, 64)
		out = append(out, r.Digest)
	}
	return out
}

func TestKeysCreateRefuses(t *testing.T) {
	n := heraldtest.StartNATSWithStreams(t)
	t.Setenv("NATS_URL", n.Server.URL())
	t.Setenv("HERALD_CONFIG", "")
	_, err := herald(t, "tenants", "create", "acme", "--plan", "startup")
	require.NoError(t, err)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "create"}, "say whose key it is: --tenant ID, --admin for an operator key, or --observer"},
		{[]string{"keys", "create", "--tenant", "acme", "--admin"}, "tenant: an admin key belongs to no tenant"},
		{[]string{"keys", "create", "--tenant", "acme", "--scope", "admin"}, "scopes: a tenant key cannot have the admin scope"},
		{[]string{"keys", "create", "--tenant", "acme", "--scope", "send,write"}, `--scope: apikey: cannot make that key: unknown scope "write"`},
		{[]string{"keys", "create", "--tenant", "acme.eu"}, `tenant: "acme.eu" is not a tenant id`},
		{[]string{"keys", "create", "--tenant", "initech"}, `tenant "initech" is not registered (herald tenants create initech first)`},
		{[]string{"keys", "revoke", "aaaaaaaaaaaa"}, "apikey: no such key: aaaaaaaaaaaa"},
	} {
		out, err := herald(t, c.args...)
		require.ErrorContains(t, err, c.want, c.args)
		require.NotContains(t, out, "hk_", "no key was printed")
	}
	out, err := herald(t, "keys", "list")
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(out, "\n0 keys\n"), out)
}
