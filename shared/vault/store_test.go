package vault_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
)

type testBundle struct {
	n     *heraldtest.NATS
	store *vault.Store
	key   vault.Key
	kv    jetstream.KeyValue
}

// setup opens a store on a fresh server, sealing under a new key.
func setup(t *testing.T) testBundle {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	key, _ := newKey(t)
	store, err := vault.Open(heraldtest.Context(t), n.JS, keyring(t, key))
	require.NoError(t, err)
	kv, err := n.JS.KeyValue(heraldtest.Context(t), vault.Bucket)
	require.NoError(t, err)
	return testBundle{n: n, store: store, key: key, kv: kv}
}

// requireSame says got is want, decrypted: every setting and every secret.
func requireSame(t *testing.T, want, got vault.Credential) {
	t.Helper()
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, want.Type, got.Type)
	require.Equal(t, [...]any{want.Endpoint, want.Region, want.Host, want.Port, want.Username, want.TLS,
		want.AccountSID, want.From, want.MessagingServiceSID, want.OriginationIdentity, want.ConfigurationSet},
		[...]any{got.Endpoint, got.Region, got.Host, got.Port, got.Username, got.TLS,
			got.AccountSID, got.From, got.MessagingServiceSID, got.OriginationIdentity, got.ConfigurationSet})
	require.True(t, want.AccessKeyID.Reveal() == got.AccessKeyID.Reveal() && want.SecretAccessKey.Reveal() == got.SecretAccessKey.Reveal() &&
		want.APIKey.Reveal() == got.APIKey.Reveal() && want.Password.Reveal() == got.Password.Reveal() &&
		want.AuthToken.Reveal() == got.AuthToken.Reveal(),
		"%s: the secrets decrypt to what was stored", want.Name)
}

func TestPutGetListDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	stored := []vault.Credential{sesCredential(), sendgridCredential(), smtpCredential(), twilioCredential(), awssmsCredential()}
	for _, c := range stored {
		require.NoError(t, b.store.Put(ctx, "acme", c))
	}
	require.NoError(t, b.store.Put(ctx, "globex", sendgridCredential()))

	for _, want := range stored {
		got, err := b.store.Get(ctx, "acme", want.Name)
		require.NoError(t, err)
		requireSame(t, want, got)
		require.False(t, got.CreatedAt.IsZero())
	}

	list, err := b.store.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 5, "acme's only")
	names := make([]string, len(list))
	for i, info := range list {
		names[i] = info.Name
	}
	require.Equal(t, []string{"acme-ses", "acme-sms", "acme-twilio", "relay", "sendgrid"}, names)
	require.Equal(t, vault.Info{Name: "relay", Type: "smtp", Host: "smtp.acme.example", Port: 587, Username: "herald", TLS: "mandatory",
		Preview: "****aple", KeyID: b.key.ID(), CreatedAt: list[3].CreatedAt, UpdatedAt: list[3].UpdatedAt}, list[3])
	require.Equal(t, vault.Info{Name: "acme-twilio", Type: "twilio", Endpoint: "http://127.0.0.1:3001",
		AccountSID: "AC0123456789abcdef0123456789abcdef", From: "+15005550006",
		Preview: "****d1c0", KeyID: b.key.ID(), CreatedAt: list[2].CreatedAt, UpdatedAt: list[2].UpdatedAt}, list[2])
	listed, err := json.Marshal(list)
	require.NoError(t, err)
	for _, secret := range secrets {
		require.False(t, strings.Contains(string(listed), secret[:8]), "a secret is listed")
	}

	// Replacing keeps the creation time and takes the new secret.
	first, err := b.store.Get(ctx, "acme", "sendgrid")
	require.NoError(t, err)
	replaced := sendgridCredential()
	replaced.APIKey = vault.NewSecret("SG.the-next-key-after-a-leak-0000")
	require.NoError(t, b.store.Put(ctx, "acme", replaced))
	got, err := b.store.Get(ctx, "acme", "sendgrid")
	require.NoError(t, err)
	requireSame(t, replaced, got)
	require.Equal(t, first.CreatedAt, got.CreatedAt)
	require.False(t, got.UpdatedAt.Before(first.UpdatedAt))

	require.NoError(t, b.store.Delete(ctx, "acme", "sendgrid"))
	_, err = b.store.Get(ctx, "acme", "sendgrid")
	require.ErrorIs(t, err, vault.ErrNotFound)
	require.ErrorIs(t, b.store.Delete(ctx, "acme", "sendgrid"), vault.ErrNotFound)
	_, err = b.store.Get(ctx, "globex", "sendgrid")
	require.NoError(t, err, "globex's credential of the same name stays")
	list, err = b.store.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 4)

	history, err := b.kv.History(ctx, vault.BucketKey("acme", "sendgrid"))
	require.NoError(t, err)
	require.Len(t, history, 1, "removing leaves a marker, and no ciphertext")
	require.Empty(t, history[0].Value())
}

func TestPutRefusesWhatItCannotStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	require.ErrorContains(t, b.store.Put(ctx, "acme.eu", sesCredential()), `vault: tenant "acme.eu" is not a tenant id`)
	bad := sesCredential()
	bad.Region = ""
	require.ErrorContains(t, b.store.Put(ctx, "acme", bad), "vault: region: is required for ses")
	_, err := b.store.Get(ctx, "acme", "a.b")
	require.ErrorIs(t, err, vault.ErrNotFound)
	_, err = b.store.List(ctx, "*")
	require.ErrorContains(t, err, `tenant "*" is not a tenant id`)

	// Listing and removing need no key; storing and reading do.
	require.NoError(t, b.store.Put(ctx, "acme", sendgridCredential()))
	keyless, err := vault.Open(ctx, b.n.JS, nil)
	require.NoError(t, err)
	list, err := keyless.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 1)
	_, err = keyless.Get(ctx, "acme", "sendgrid")
	require.ErrorIs(t, err, vault.ErrNoKey)
	require.ErrorIs(t, keyless.Put(ctx, "acme", smtpCredential()), vault.ErrNoKey)
	require.NoError(t, keyless.Delete(ctx, "acme", "sendgrid"))
}

// A sealed record copied to another tenant or another provider name does
// not decrypt; nor does one sealed under a key the store does not hold.
func TestSealedRecordsAreBoundToTheirPlaceAndKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	require.NoError(t, b.store.Put(ctx, "acme", sendgridCredential()))
	entry, err := b.kv.Get(ctx, vault.BucketKey("acme", "sendgrid"))
	require.NoError(t, err)

	for _, key := range []string{vault.BucketKey("globex", "sendgrid"), vault.BucketKey("acme", "sendgrid-eu")} {
		_, err := b.kv.Put(ctx, key, entry.Value())
		require.NoError(t, err)
	}
	_, err = b.store.Get(ctx, "globex", "sendgrid")
	require.ErrorIs(t, err, vault.ErrDecrypt)
	require.ErrorContains(t, err, "globex.sendgrid: vault: does not decrypt under key "+b.key.ID())
	_, err = b.store.Get(ctx, "acme", "sendgrid-eu")
	require.ErrorIs(t, err, vault.ErrDecrypt)

	// Where the tenant ends and the name begins is part of the binding:
	// acme's credential x is not acm's credential ex, though both read
	// "acmex" run together.
	x := sendgridCredential()
	x.Name = "x"
	require.NoError(t, b.store.Put(ctx, "acme", x))
	entry, err = b.kv.Get(ctx, vault.BucketKey("acme", "x"))
	require.NoError(t, err)
	_, err = b.kv.Put(ctx, vault.BucketKey("acm", "ex"), entry.Value())
	require.NoError(t, err)
	_, err = b.store.Get(ctx, "acm", "ex")
	require.ErrorIs(t, err, vault.ErrDecrypt)
	require.ErrorContains(t, err, "acm.ex: vault: does not decrypt under key "+b.key.ID())

	other, _ := newKey(t)
	stranger, err := vault.Open(ctx, b.n.JS, keyring(t, other))
	require.NoError(t, err)
	_, err = stranger.Get(ctx, "acme", "sendgrid")
	require.ErrorIs(t, err, vault.ErrUnknownKey)
	require.ErrorContains(t, err, "key "+b.key.ID())
}

// The settings kept in the clear are for show: whoever edits the bucket
// without the key cannot point the secret at another endpoint.
func TestGetSendsOnlyWhereTheSealSays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	require.NoError(t, b.store.Put(ctx, "acme", sendgridCredential()))
	key := vault.BucketKey("acme", "sendgrid")
	entry, err := b.kv.Get(ctx, key)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(entry.Value(), &rec))
	rec["settings"] = map[string]any{"endpoint": "https://attacker.example"}
	edited, err := json.Marshal(rec)
	require.NoError(t, err)
	_, err = b.kv.Put(ctx, key, edited)
	require.NoError(t, err)

	got, err := b.store.Get(ctx, "acme", "sendgrid")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:3000", got.Endpoint)
}
