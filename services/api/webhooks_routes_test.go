package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/webhooks"
)

const endpoints = "/v1/webhooks/endpoints"

// createEndpoint registers an endpoint through the API with key.
func (b *bundle) createEndpoint(t *testing.T, key, url string) api.CreatedWebhookEndpoint {
	t.Helper()
	got := b.sendJSON(t, http.MethodPost, endpoints, key, `{"url":"`+url+`","description":"ERP"}`)
	require.Equal(t, http.StatusCreated, got.status, got.body)
	var e api.CreatedWebhookEndpoint
	require.NoError(t, json.Unmarshal([]byte(got.body), &e))
	return e
}

// listEndpoints is what GET /v1/webhooks/endpoints answers key.
func (b *bundle) listEndpoints(t *testing.T, key, query string) []api.WebhookEndpoint {
	t.Helper()
	got := b.do(t, http.MethodGet, endpoints+query, key, nil)
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.NotContains(t, got.body, "whsec_", "a listing shows no secret")
	require.NotContains(t, got.body, `"secret"`)
	var out struct{ Endpoints []api.WebhookEndpoint }
	require.NoError(t, json.Unmarshal([]byte(got.body), &out))
	return out.Endpoints
}

func endpointIDs(list []api.WebhookEndpoint) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.ID
	}
	return out
}

// A tenant's key registers, lists, enables and removes its own webhook
// endpoints through the API; the secret is shown once, on creation, and is
// the one the store signs with; an admin key names the tenant.
func TestATenantManagesItsWebhookEndpoints(t *testing.T) {
	t.Parallel()
	keys := keyring(t)
	b := setup(t, api.Config{Keyring: keys})
	ctx := heraldtest.Context(t)
	store, err := webhooks.Open(ctx, b.nats.JS, keys)
	require.NoError(t, err)

	made := b.createEndpoint(t, acmeSend, "https://erp.acme.example/herald")
	require.Regexp(t, `^we_[a-z0-9]+$`, made.ID)
	require.Equal(t, "active", made.Status)
	require.Equal(t, webhooks.DefaultEvents, made.Events)
	stored, err := store.Get(ctx, "acme", made.ID)
	require.NoError(t, err)
	secrets, err := store.Secrets("acme", stored)
	require.NoError(t, err)
	shown, err := webhooks.ParseSecret(made.Secret)
	require.NoError(t, err)
	require.Equal(t, [][]byte{shown}, secrets, "the secret shown is the one webhooks are signed with")

	require.Equal(t, []string{made.ID}, endpointIDs(b.listEndpoints(t, acmeRead, "")))
	require.Equal(t, []string{made.ID}, endpointIDs(b.listEndpoints(t, adminKey, "?tenant=acme")))
	require.Equal(t, http.StatusUnprocessableEntity, b.do(t, http.MethodGet, endpoints, adminKey, nil).status, "an admin key names the tenant")
	bad := b.sendJSON(t, http.MethodPost, endpoints, acmeSend, `{"url":"ftp://erp.acme.example/herald"}`)
	require.Equal(t, http.StatusUnprocessableEntity, bad.status, bad.body)

	_, _, err = store.Disable(ctx, "acme", made.ID, "the endpoint answered 410 Gone", "ntf_test")
	require.NoError(t, err)
	enabled := b.do(t, http.MethodPost, endpoints+"/"+made.ID+"/enable", acmeSend, nil)
	require.Equal(t, http.StatusOK, enabled.status, enabled.body)
	require.Equal(t, `"active"`, jsonField(t, enabled.body, "status"))
	require.NotContains(t, enabled.body, "disabled_reason")

	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, endpoints+"/"+made.ID, acmeSend, nil).status)
	require.Empty(t, b.listEndpoints(t, acmeRead, ""))
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodDelete, endpoints+"/"+made.ID, acmeSend, nil).status, "already removed")
}

// Every webhook route needs a key, and the scope it names: reading lists,
// sending changes.
func TestTheWebhookRoutesNeedTheirScope(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{Keyring: keyring(t)})
	made := b.createEndpoint(t, acmeSend, "https://erp.acme.example/herald")
	for _, r := range []struct{ method, path, body string }{
		{http.MethodPost, endpoints, `{"url":"https://erp.acme.example/other"}`},
		{http.MethodDelete, endpoints + "/" + made.ID, ""},
		{http.MethodPost, endpoints + "/" + made.ID + "/enable", ""},
		{http.MethodPost, endpoints + "/" + made.ID + "/redeliver", `{"message":"ntf_x","dry_run":true}`},
	} {
		for key, status := range map[string]int{acmeRead: http.StatusForbidden, "": http.StatusUnauthorized} {
			got := b.sendJSON(t, r.method, r.path, key, r.body)
			require.Equal(t, status, got.status, "%s %s with %q: %s", r.method, r.path, key, got.body)
		}
	}
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodGet, endpoints, "", nil).status)
	require.Equal(t, http.StatusForbidden, b.do(t, http.MethodGet, endpoints, acmeSend, nil).status)
	require.Equal(t, []string{made.ID}, endpointIDs(b.listEndpoints(t, acmeRead, "")), "nothing was changed")
}

// webhookSent writes what the ledger keeps of a webhook delivered to
// tenant's endpoint, and returns its notification id.
func webhookSent(t *testing.T, b *bundle, tenant, endpoint string) string {
	t.Helper()
	ctx := heraldtest.Context(t)
	key := tenant + ":hook-1"
	d := notification.Delivery{ID: notification.ID(key), DedupeKey: key, Tenant: tenant, Channel: event.ChannelWebhook,
		Priority: notification.PriorityNormal, Recipient: notification.Recipient{Address: endpoint}, Template: notification.FeedTemplate,
		Locale: "en", Payload: json.RawMessage(`{"type":"notification.delivered","timestamp":"2026-12-01T08:00:00Z","data":{}}`),
		Event: notification.EventRef{ID: "evt-1", Type: "notification.delivered"}, CreatedAt: time.Now()}
	raw, err := json.Marshal(d)
	require.NoError(t, err)
	l, err := ledger.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	require.NoError(t, l.Put(ctx, &ledger.Entry{DedupeKey: key, NotificationID: d.ID, Tenant: tenant, Channel: "webhook",
		State: ledger.Delivered, Delivery: raw}))
	return d.ID
}

// alike asserts that two refusals say the same, but for the id each
// names: nothing tells that one of them exists.
func alike(t *testing.T, other, unknown answer, otherID, unknownID, what string) {
	t.Helper()
	require.Equal(t, unknown.status, other.status, "%s: %s", what, other.body)
	require.Equal(t, strings.ReplaceAll(unknown.body, unknownID, "ID"), strings.ReplaceAll(other.body, otherID, "ID"), what)
}

// A tenant's key cannot reach another tenant's endpoints, nor redeliver
// its webhooks: another's endpoint or webhook is answered as one that does
// not exist, and naming the other tenant is refused whatever it names.
func TestATenantCannotReachAnothersWebhookEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{Keyring: keyring(t)})
	acme := b.createEndpoint(t, acmeSend, "https://erp.acme.example/herald")
	globex := b.createEndpoint(t, globexSend, "https://erp.globex.example/herald")
	hook := webhookSent(t, b, "globex", globex.ID)
	const unknownEndpoint, unknownHook = "we_unknown", "ntf_unknown"
	require.Equal(t, []string{globex.ID}, endpointIDs(b.listEndpoints(t, globexRead, "")))
	require.Equal(t, []string{acme.ID}, endpointIDs(b.listEndpoints(t, acmeRead, "")), "globex's endpoint is not acme's")

	for _, r := range []struct{ method, path, body string }{
		{http.MethodDelete, endpoints + "/%s", ""},
		{http.MethodPost, endpoints + "/%s/enable", ""},
		{http.MethodPost, endpoints + "/%s/redeliver", `{"message":"` + hook + `","dry_run":true}`},
	} {
		what := r.method + " " + r.path
		other := b.sendJSON(t, r.method, strings.Replace(r.path, "%s", globex.ID, 1), acmeSend, r.body)
		unknown := b.sendJSON(t, r.method, strings.Replace(r.path, "%s", unknownEndpoint, 1), acmeSend, r.body)
		require.Equal(t, http.StatusNotFound, unknown.status, "%s: %s", what, unknown.body)
		alike(t, other, unknown, globex.ID, unknownEndpoint, what)
	}
	redeliver := endpoints + "/" + acme.ID + "/redeliver"
	other := b.sendJSON(t, http.MethodPost, redeliver, acmeSend, `{"message":"`+hook+`","dry_run":true}`)
	unknown := b.sendJSON(t, http.MethodPost, redeliver, acmeSend, `{"message":"`+unknownHook+`","dry_run":true}`)
	require.Equal(t, http.StatusUnprocessableEntity, unknown.status, unknown.body)
	alike(t, other, unknown, hook, unknownHook, "globex's webhook, through acme's endpoint")

	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, endpoints, ""},
		{http.MethodPost, endpoints, `{"url":"https://evil.example/hook"}`},
		{http.MethodDelete, endpoints + "/" + globex.ID, ""},
		{http.MethodPost, endpoints + "/" + globex.ID + "/enable", ""},
		{http.MethodPost, endpoints + "/" + globex.ID + "/redeliver", `{"message":"` + hook + `","dry_run":true}`},
	} {
		key := acmeSend
		if r.method == http.MethodGet {
			key = acmeRead
		}
		got := b.sendJSON(t, r.method, r.path+"?tenant=globex", key, r.body)
		require.Equal(t, http.StatusForbidden, got.status, "%s %s?tenant=globex: %s", r.method, r.path, got.body)
		require.Contains(t, got.body, "this key manages tenant acme's endpoints only")
	}

	require.Equal(t, []string{globex.ID}, endpointIDs(b.listEndpoints(t, globexRead, "")), "globex's endpoint is still there")
	own := b.sendJSON(t, http.MethodPost, endpoints+"/"+globex.ID+"/redeliver", globexSend, `{"message":"`+hook+`","dry_run":true}`)
	require.Equal(t, http.StatusAccepted, own.status, "globex redelivers its own webhook: %s", own.body)
	stream, err := b.nats.JS.Stream(heraldtest.Context(t), "NOTIFY")
	require.NoError(t, err)
	info, err := stream.Info(heraldtest.Context(t))
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "nothing was sent")
}
