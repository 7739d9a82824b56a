package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/tenant"
)

// sendJSON sends body as application/json.
func (b *bundle) sendJSON(t *testing.T, method, path, key, body string) answer {
	t.Helper()
	return b.do(t, method, path, key, []byte(body), "Content-Type", "application/json")
}

func TestAnAdminRegistersAndChangesTenants(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	created := b.sendJSON(t, http.MethodPost, "/v1/tenants", adminKey,
		`{"id":"acme","name":"Acme Corp","plan":"startup","from":"Acme <orders@acme.example>"}`)
	require.Equal(t, http.StatusCreated, created.status, created.body)
	require.Contains(t, created.body, `"status":"active"`)

	changed := b.sendJSON(t, http.MethodPatch, "/v1/tenants/acme", adminKey, `{"status":"suspended","providers":["acme-ses","sendgrid"]}`)
	require.Equal(t, http.StatusOK, changed.status, changed.body)
	got := b.do(t, http.MethodGet, "/v1/tenants/acme", adminKey, nil)
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.JSONEq(t, `{"id":"acme","name":"Acme Corp","plan":"startup","status":"suspended","from":"Acme <orders@acme.example>",
		"providers":["acme-ses","sendgrid"],"created_at":`+jsonField(t, got.body, "created_at")+`,
		"updated_at":`+jsonField(t, got.body, "updated_at")+`}`, got.body)

	list := b.do(t, http.MethodGet, "/v1/tenants", adminKey, nil)
	require.Equal(t, http.StatusOK, list.status, list.body)
	require.Contains(t, list.body, `"id":"acme"`)
}

func TestTenantWritesAreRefusedWithTheReason(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	heraldtest.RegisterTenants(t, b.nats.JS, "acme")
	for name, c := range map[string]struct {
		method, path, body string
		status             int
		says               string
	}{
		"a taken id":           {http.MethodPost, "/v1/tenants", `{"id":"acme","plan":"free"}`, http.StatusConflict, "already registered"},
		"an unknown plan":      {http.MethodPost, "/v1/tenants", `{"id":"initech","plan":"gold"}`, http.StatusUnprocessableEntity, `plan: \"gold\" is not a plan`},
		"not a tenant id":      {http.MethodPost, "/v1/tenants", `{"id":"a.b","plan":"free"}`, http.StatusUnprocessableEntity, "id"},
		"a bad from":           {http.MethodPatch, "/v1/tenants/acme", `{"from":"not an address"}`, http.StatusUnprocessableEntity, "from:"},
		"a provider twice":     {http.MethodPatch, "/v1/tenants/acme", `{"providers":["a","a"]}`, http.StatusUnprocessableEntity, "already in the chain"},
		"changing one unknown": {http.MethodPatch, "/v1/tenants/initech", `{"plan":"free"}`, http.StatusNotFound, "not registered"},
	} {
		got := b.sendJSON(t, c.method, c.path, adminKey, c.body)
		require.Equal(t, c.status, got.status, "%s: %s", name, got.body)
		require.Contains(t, got.body, c.says, name)
	}
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/tenants/initech", adminKey, nil).status)
}

// An admin sets a tenant's retention as herald tenants set --retention
// does: shown as written, one period at a time, refused naming the field.
func TestAnAdminSetsATenantsRetention(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	created := b.sendJSON(t, http.MethodPost, "/v1/tenants", adminKey, `{"id":"acme","plan":"startup","retention":{"payloads":"60d"}}`)
	require.Equal(t, http.StatusCreated, created.status, created.body)
	require.Contains(t, created.body, `"retention":{"payloads":"60d"}`)

	changed := b.sendJSON(t, http.MethodPatch, "/v1/tenants/acme", adminKey, `{"retention":{"history":"30d","inbox":"120d"}}`)
	require.Equal(t, http.StatusOK, changed.status, changed.body)
	got := b.do(t, http.MethodGet, "/v1/tenants/acme", adminKey, nil)
	require.Equal(t, `{"history":"30d","payloads":"60d","inbox":"120d"}`, jsonField(t, got.body, "retention"), "a period left out stays")

	for body, says := range map[string]string{
		`{"retention":{"history":"12h"}}`:                    `retention.history: 12h is shorter than a day`,
		`{"retention":{"history":"91d"}}`:                    `retention.history: 91d is longer than the ledger keeps notifications (90d, ledger.retention)`,
		`{"retention":{"payloads":"soon","history":"1d,x"}}`: `retention.history: \"1d,x\" is not a period like 90d or 12h; retention.payloads: \"soon\" is not a period`,
	} {
		refused := b.sendJSON(t, http.MethodPatch, "/v1/tenants/acme", adminKey, body)
		require.Equal(t, http.StatusUnprocessableEntity, refused.status, refused.body)
		require.Contains(t, refused.body, says, body)
	}
	refused := b.sendJSON(t, http.MethodPost, "/v1/tenants", adminKey, `{"id":"initech","plan":"free","retention":{"payloads":"1x"}}`)
	require.Equal(t, http.StatusUnprocessableEntity, refused.status, refused.body)
	require.Contains(t, refused.body, `retention.payloads: \"1x\" is not a period`)

	reset := b.sendJSON(t, http.MethodPatch, "/v1/tenants/acme", adminKey, `{"retention":{"history":"","payloads":"","inbox":""}}`)
	require.Equal(t, http.StatusOK, reset.status, reset.body)
	require.NotContains(t, reset.body, "retention", "the platform's again")
}

// A tenant key with read reads its own tenant, and no other: another
// tenant reads as one not registered.
func TestATenantKeyReadsItsOwnTenantOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	heraldtest.RegisterTenants(t, b.nats.JS, "acme", "globex")
	own := b.do(t, http.MethodGet, "/v1/tenants/acme", acmeRead, nil)
	require.Equal(t, http.StatusOK, own.status, own.body)
	require.Contains(t, own.body, `"id":"acme"`)
	other := b.do(t, http.MethodGet, "/v1/tenants/globex", acmeRead, nil)
	unknown := b.do(t, http.MethodGet, "/v1/tenants/initech", acmeRead, nil)
	require.Equal(t, http.StatusNotFound, other.status, other.body)
	require.Equal(t, http.StatusNotFound, unknown.status, unknown.body)
	require.Equal(t, strings.ReplaceAll(unknown.body, "initech", "ID"), strings.ReplaceAll(other.body, "globex", "ID"),
		"another tenant reads as one not registered")
	require.Equal(t, http.StatusForbidden, b.do(t, http.MethodGet, "/v1/tenants/acme", acmeSend, nil).status)
}

// Every admin route refuses a tenant key (403) whatever its scopes, and a
// request without a key (401), before it reads or writes anything.
func TestAdminRoutesAreForAdminKeysOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	heraldtest.RegisterTenants(t, b.nats.JS, "acme")
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/v1/tenants", ""},
		{http.MethodPost, "/v1/tenants", `{"id":"initech","plan":"free"}`},
		{http.MethodPatch, "/v1/tenants/acme", `{"status":"suspended"}`},
		{http.MethodGet, "/v1/keys", ""},
		{http.MethodPost, "/v1/keys", `{"tenant":"acme"}`},
		{http.MethodDelete, "/v1/keys/abcdefghijkl", ""},
		{http.MethodGet, "/v1/tenants/acme/providers", ""},
		{http.MethodGet, "/v1/tenants/acme/providers/sg", ""},
		{http.MethodPut, "/v1/tenants/acme/providers/sg", `{"type":"sendgrid","api_key":"SG.0123456789abcdef"}`},
		{http.MethodDelete, "/v1/tenants/acme/providers/sg", ""},
		{http.MethodGet, "/v1/dlq", ""},
		{http.MethodGet, "/v1/dlq/1", ""},
		{http.MethodPost, "/v1/dlq/1/redrive", ""},
	}
	for _, r := range routes {
		for key, status := range map[string]int{acmeSend: http.StatusForbidden, acmeRead: http.StatusForbidden, "": http.StatusUnauthorized} {
			got := b.sendJSON(t, r.method, r.path, key, r.body)
			require.Equal(t, status, got.status, "%s %s with %q: %s", r.method, r.path, key, got.body)
		}
	}
	got := b.do(t, http.MethodGet, "/v1/tenants/acme", adminKey, nil)
	require.Contains(t, got.body, `"status":"active"`, "nothing was changed")
}

// A plan a tenant could not be stored with stops the API before it serves.
func TestAPlanNameThatCannotBeStoredIsRefused(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATS(t)
	_, err := api.New(n.JS, api.Config{Authenticator: testKeys, Plans: tenant.Plans{"gold.plus": {}}})
	require.ErrorContains(t, err, `plans.gold.plus: "gold.plus" is not a plan name`)
}
