package api_test

import (
	"crypto/rand"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
)

// keyring is a vault keyring under a random master key.
func keyring(t *testing.T) *vault.Keyring {
	t.Helper()
	raw := make([]byte, vault.KeySize)
	_, _ = rand.Read(raw)
	k, err := vault.ParseKey(raw)
	require.NoError(t, err)
	r, err := vault.NewKeyring(k)
	require.NoError(t, err)
	return r
}

const (
	sendgridKey  = "SG.tenant-secret-0123456789-WXYZ"
	smtpPassword = "smtp-password-that-is-long-9876"
)

// A provider account goes in with its secret and comes out with a masked
// preview only, from every route; the vault opens it for the sender.
func TestAProviderSecretIsNeverAnswered(t *testing.T) {
	t.Parallel()
	keys := keyring(t)
	b := setup(t, api.Config{Keyring: keys})
	heraldtest.RegisterTenants(t, b.nats.JS, "acme")
	var bodies []string
	answer := func(a answer) answer { bodies = append(bodies, a.body); return a }

	put := answer(b.sendJSON(t, http.MethodPut, "/v1/tenants/acme/providers/acme-sg", adminKey,
		`{"type":"sendgrid","api_key":"`+sendgridKey+`"}`))
	require.Equal(t, http.StatusOK, put.status, put.body)
	require.Contains(t, put.body, `"preview":"****WXYZ"`)
	require.Contains(t, put.body, `"key_id":"`+keys.Current().ID()+`"`)
	smtp := answer(b.sendJSON(t, http.MethodPut, "/v1/tenants/acme/providers/acme-smtp", adminKey,
		`{"type":"smtp","host":"smtp.acme.example","port":587,"username":"orders","password":"`+smtpPassword+`"}`))
	require.Equal(t, http.StatusOK, smtp.status, smtp.body)

	got := answer(b.do(t, http.MethodGet, "/v1/tenants/acme/providers/acme-sg", adminKey, nil))
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.Contains(t, got.body, `"type":"sendgrid"`)
	list := answer(b.do(t, http.MethodGet, "/v1/tenants/acme/providers", adminKey, nil))
	require.Equal(t, http.StatusOK, list.status, list.body)
	require.Contains(t, list.body, `"name":"acme-sg"`)
	require.Contains(t, list.body, `"name":"acme-smtp"`)
	for _, body := range bodies {
		require.NotContains(t, body, sendgridKey[:len(sendgridKey)-4])
		require.NotContains(t, body, smtpPassword[:len(smtpPassword)-4])
	}

	store, err := vault.Open(heraldtest.Context(t), b.nats.JS, keys)
	require.NoError(t, err)
	c, err := store.Get(heraldtest.Context(t), "acme", "acme-sg")
	require.NoError(t, err)
	require.Equal(t, sendgridKey, c.APIKey.Reveal(), "stored as given, for the sender")

	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/v1/tenants/acme/providers/acme-sg", adminKey, nil).status)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/tenants/acme/providers/acme-sg", adminKey, nil).status)
}

func TestProviderAccountsAreRefusedWithTheReason(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{Keyring: keyring(t)})
	heraldtest.RegisterTenants(t, b.nats.JS, "acme")
	for name, c := range map[string]struct {
		method, path, body string
		status             int
		says               string
	}{
		"a missing secret":       {http.MethodPut, "/v1/tenants/acme/providers/sg", `{"type":"sendgrid"}`, http.StatusUnprocessableEntity, "api_key: is required"},
		"another type's field":   {http.MethodPut, "/v1/tenants/acme/providers/sg", `{"type":"sendgrid","api_key":"` + sendgridKey + `","host":"x"}`, http.StatusUnprocessableEntity, "host: is not used by sendgrid"},
		"not a provider name":    {http.MethodPut, "/v1/tenants/acme/providers/a.b", `{"type":"sendgrid","api_key":"` + sendgridKey + `"}`, http.StatusUnprocessableEntity, "not a provider name"},
		"an unregistered tenant": {http.MethodPut, "/v1/tenants/initech/providers/sg", `{"type":"sendgrid","api_key":"` + sendgridKey + `"}`, http.StatusNotFound, "not registered"},
		"an unknown provider":    {http.MethodGet, "/v1/tenants/acme/providers/sg", "", http.StatusNotFound, "no provider named sg"},
		"removing one unknown":   {http.MethodDelete, "/v1/tenants/acme/providers/sg", "", http.StatusNotFound, "no such provider"},
		"listing for no tenant":  {http.MethodGet, "/v1/tenants/initech/providers", "", http.StatusNotFound, "not registered"},
	} {
		got := b.sendJSON(t, c.method, c.path, adminKey, c.body)
		require.Equal(t, c.status, got.status, "%s: %s", name, got.body)
		require.Contains(t, got.body, c.says, name)
		require.NotContains(t, got.body, sendgridKey[:len(sendgridKey)-4], name)
	}
}

// Without a master key nothing can be sealed: every provider route says
// so, and nothing is stored.
func TestProviderRoutesNeedAMasterKey(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	heraldtest.RegisterTenants(t, b.nats.JS, "acme")
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/tenants/acme/providers", ""},
		{http.MethodGet, "/v1/tenants/acme/providers/sg", ""},
		{http.MethodPut, "/v1/tenants/acme/providers/sg", `{"type":"sendgrid","api_key":"` + sendgridKey + `"}`},
		{http.MethodDelete, "/v1/tenants/acme/providers/sg", ""},
	} {
		got := b.sendJSON(t, r.method, r.path, adminKey, r.body)
		require.Equal(t, http.StatusServiceUnavailable, got.status, "%s %s: %s", r.method, r.path, got.body)
		require.Contains(t, got.body, "no master key configured")
	}
	require.Empty(t, heraldtest.StreamMessages(t, b.nats.JS, "KV_credentials"))
}
