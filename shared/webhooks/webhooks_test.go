package webhooks_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

func open(t *testing.T) *webhooks.Store {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	key, err := vault.ParseKey([]byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="))
	require.NoError(t, err)
	keys, err := vault.NewKeyring(key)
	require.NoError(t, err)
	s, err := webhooks.Open(heraldtest.Context(t), n.JS, keys)
	require.NoError(t, err)
	return s
}

func TestEndpointsAreEachTenantsOwn(t *testing.T) {
	t.Parallel()
	s, ctx := open(t), heraldtest.Context(t)
	e, secret, err := s.Create(ctx, "acme", webhooks.New{URL: "https://erp.acme.example/hook"})
	require.NoError(t, err)
	require.Equal(t, []string{"notification.*", "report.*", "webhook.*", "tenant.*"}, e.Events, "every notification's outcome, providers' reports, news of the endpoints and of the tenant's quotas, by default")
	require.True(t, e.Wants("notification.delivered"))
	require.True(t, e.Wants("webhook.endpoint_disabled"))
	require.Equal(t, "https://erp.acme.example/…", e.ShownURL(), "shown without its path")
	require.True(t, e.Wants("tenant.quota.warning"))

	_, err = s.Find(ctx, "globex", e.ID)
	require.ErrorIs(t, err, webhooks.ErrNotFound, "another tenant's endpoint is not found")
	got, err := s.Find(ctx, "acme", "https://erp.acme.example/hook")
	require.NoError(t, err, "found by URL too")
	secrets, err := s.Secrets("acme", got)
	require.NoError(t, err)
	key, err := webhooks.ParseSecret(secret)
	require.NoError(t, err)
	require.Equal(t, [][]byte{key}, secrets)
	_, err = s.Secrets("globex", got)
	require.Error(t, err, "a sealed secret opens only for its own tenant and endpoint")

	_, _, err = s.Create(ctx, "acme", webhooks.New{URL: "ftp://erp.acme.example/secret-token"})
	require.EqualError(t, err, "url: ftp://erp.acme.example/… is not an http(s) URL with a host")
}

// An endpoint's texts are listed in tables and pages: none may hold a
// control character, and the refusal names the field without the text.
func TestAnEndpointsTextsHoldNoControlCharacters(t *testing.T) {
	t.Parallel()
	s, ctx := open(t), heraldtest.Context(t)
	for _, c := range []struct {
		new  webhooks.New
		want string
	}{
		{webhooks.New{URL: "https://erp.acme.example/\u009bhook"}, "url: holds a control character (U+009B at byte 25)"},
		{webhooks.New{URL: "https://erp.acme.example/hook", Description: "ERP\x1b]0;pwned\x07"}, "description: holds a control character (U+001B at byte 3)"},
		{webhooks.New{URL: "https://erp.acme.example/hook", Description: "ERP\u2028prod"}, "description: holds a control character (U+2028 at byte 3)"},
	} {
		_, _, err := s.Create(ctx, "acme", c.new)
		require.EqualError(t, err, c.want)
	}
	_, _, err := s.Create(ctx, "acme", webhooks.New{URL: "https://erp.acme.example/hook", Events: []string{"notification.\x1b*"}})
	require.ErrorContains(t, err, "events: ")
	list, err := s.List(ctx, "acme")
	require.NoError(t, err)
	require.Empty(t, list, "nothing refused is kept")
}

func TestHealthIsKeptAndDisablingSaysWhy(t *testing.T) {
	t.Parallel()
	s, ctx := open(t), heraldtest.Context(t)
	e, _, err := s.Create(ctx, "acme", webhooks.New{URL: "https://erp.acme.example/hook", Events: []string{"notification.failed"}})
	require.NoError(t, err)
	first := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	since, err := s.Failed(ctx, "acme", e.ID, first)
	require.NoError(t, err)
	require.Equal(t, first, since)
	since, err = s.Failed(ctx, "acme", e.ID, first.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, first, since, "failing since the first failure")
	e, err = s.Get(ctx, "acme", e.ID)
	require.NoError(t, err)
	require.NoError(t, s.Answered(ctx, "acme", e))
	e, err = s.Get(ctx, "acme", e.ID)
	require.NoError(t, err)
	require.True(t, e.FailingSince.IsZero(), "an answer ends the failing")

	d, disabled, err := s.Disable(ctx, "acme", e.ID, "the endpoint answered 410 Gone", "ntf_1")
	require.NoError(t, err)
	require.True(t, disabled, "this call disabled it")
	require.False(t, d.DisabledAt.IsZero())
	again, disabled, err := s.Disable(ctx, "acme", e.ID, "failing since yesterday", "ntf_2")
	require.NoError(t, err)
	require.False(t, disabled, "disabled already: only the first to disable it tells the tenant")
	require.Equal(t, d.DisabledAt, again.DisabledAt)
	e, err = s.Get(ctx, "acme", e.ID)
	require.NoError(t, err)
	require.Equal(t, webhooks.Disabled, e.Status)
	require.Equal(t, "the endpoint answered 410 Gone", e.DisabledReason, "the first reason stays")
	require.Equal(t, d.DisabledAt, e.DisabledAt)
	require.False(t, e.Wants("notification.failed"), "a disabled endpoint wants nothing")
	require.NoError(t, s.Enable(ctx, "acme", e.ID))
	e, err = s.Get(ctx, "acme", e.ID)
	require.NoError(t, err)
	require.True(t, e.Wants("notification.failed"))
	require.True(t, e.DisabledAt.IsZero())
}

func TestARotatedOutSecretSignsUntilItsGraceEnds(t *testing.T) {
	t.Parallel()
	s, ctx := open(t), heraldtest.Context(t)
	e, _, err := s.Create(ctx, "acme", webhooks.New{URL: "https://erp.acme.example/hook"})
	require.NoError(t, err)
	_, err = s.Rotate(ctx, "acme", e.ID, 50*time.Millisecond)
	require.NoError(t, err)
	e, err = s.Get(ctx, "acme", e.ID)
	require.NoError(t, err)
	secrets, err := s.Secrets("acme", e)
	require.NoError(t, err)
	require.Len(t, secrets, 2)
	require.Eventually(t, func() bool {
		secrets, err := s.Secrets("acme", e)
		return err == nil && len(secrets) == 1
	}, 5*time.Second, 10*time.Millisecond, "past its grace, the old secret no longer signs")
}

// Resealing moves every secret that still signs under the new key; a
// secret under a key the rotation lacks is named in the error and kept as
// it is, while the tenant's others are resealed all the same.
func TestResealMovesSecretsUnderTheNewKey(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	key := func() vault.Key {
		k, err := vault.GenerateKeyFile(filepath.Join(t.TempDir(), "key"))
		require.NoError(t, err)
		return k
	}
	oldKey, lostKey, newKey := key(), key(), key()
	storeUnder := func(keys ...vault.Key) *webhooks.Store {
		ring, err := vault.NewKeyring(keys[0], keys[1:]...)
		require.NoError(t, err)
		s, err := webhooks.Open(ctx, n.JS, ring)
		require.NoError(t, err)
		return s
	}
	a, _, err := storeUnder(oldKey).Create(ctx, "acme", webhooks.New{URL: "https://erp.acme.example/hook"})
	require.NoError(t, err)
	lost, _, err := storeUnder(lostKey).Create(ctx, "acme", webhooks.New{URL: "https://erp.acme.example/other"})
	require.NoError(t, err)
	g, _, err := storeUnder(oldKey).Create(ctx, "globex", webhooks.New{URL: "https://globex.example/hook"})
	require.NoError(t, err)

	ring, err := vault.NewKeyring(newKey, oldKey)
	require.NoError(t, err)
	var calls int
	r, err := webhooks.Reseal(ctx, storeUnder(newKey, oldKey), ring, func(done, total int) { calls++; require.Equal(t, 2, total) })
	require.ErrorContains(t, err, `webhooks: tenant "acme" endpoint `+lost.ID+`: vault: sealed under a key this keyring does not hold: key `+lostKey.ID())
	require.Equal(t, webhooks.Resealing{Total: 3, Resealed: 2}, r)
	require.Equal(t, 2, calls, "progress after each tenant")

	only := storeUnder(newKey)
	for tenant, id := range map[string]string{"acme": a.ID, "globex": g.ID} {
		e, err := only.Get(ctx, tenant, id)
		require.NoError(t, err)
		_, err = only.Secrets(tenant, e)
		require.NoError(t, err, "the new key alone opens it")
	}
	e, err := storeUnder(lostKey).Get(ctx, "acme", lost.ID)
	require.NoError(t, err)
	_, err = storeUnder(lostKey).Secrets("acme", e)
	require.NoError(t, err, "what could not be opened is left as it was")
}

// A secret that stops signing leaves the bucket, not only its latest
// revision: once an endpoint is removed, or a rotated-out secret is dropped
// past its grace, no revision the bucket still holds has a ciphertext of it
// that the key reads — nor, for the endpoint, its id. The tenant's other
// endpoint keeps signing with the secrets it has.
func TestASecretThatStopsSigningLeavesNoRevisionBehind(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	raw := []byte("0123456789abcdef0123456789abcdef")
	key, err := vault.ParseKey(raw)
	require.NoError(t, err)
	ring, err := vault.NewKeyring(key)
	require.NoError(t, err)
	s, err := webhooks.Open(ctx, n.JS, ring)
	require.NoError(t, err)

	kept, dropped, err := s.Create(ctx, "acme", webhooks.New{URL: "https://erp.acme.example/hook"})
	require.NoError(t, err)
	gone, goneFirst, err := s.Create(ctx, "acme", webhooks.New{URL: "https://old.acme.example/hook"})
	require.NoError(t, err)
	goneSecond, err := s.Rotate(ctx, "acme", gone.ID, time.Hour)
	require.NoError(t, err)
	_, err = s.Failed(ctx, "acme", gone.ID, time.Now())
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "acme", gone.ID))
	_, err = s.Rotate(ctx, "acme", kept.ID, 0)
	require.NoError(t, err)
	current, err := s.Rotate(ctx, "acme", kept.ID, time.Hour) // drops the first, past its grace
	require.NoError(t, err)

	revisions := heraldtest.StreamMessages(t, n.JS, "KV_"+webhooks.Bucket)
	require.NotEmpty(t, revisions)
	for _, m := range revisions {
		require.False(t, strings.Contains(string(m.Data), gone.ID), "revision %d names the removed endpoint", m.Sequence)
	}
	var read int
	for _, box := range heraldtest.SealedInStreams(t, n.JS) {
		text, ok := heraldtest.Reads(t, raw, box)
		require.True(t, ok, "every secret in the bucket is sealed under the key")
		for i, secret := range []string{goneFirst, goneSecond, dropped} {
			require.False(t, text == secret, "revision %d holds stopped secret #%d", box.Seq, i)
		}
		read++
	}
	require.GreaterOrEqual(t, read, 2, "the scan reads the secrets still signing")

	e, err := s.Get(ctx, "acme", kept.ID)
	require.NoError(t, err)
	secrets, err := s.Secrets("acme", e)
	require.NoError(t, err)
	want, err := webhooks.ParseSecret(current)
	require.NoError(t, err)
	require.Contains(t, secrets, want)
}
