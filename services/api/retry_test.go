package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
)

// failedEntry is a notification delivery gave up on; a retryable one keeps
// its delivery message, as delivery workers keep it.
func failedEntry(t *testing.T, tenant, key string, retryable bool) ledger.Entry {
	t.Helper()
	e := ledger.Entry{DedupeKey: key, Tenant: tenant, Channel: "email", State: ledger.Failed, Retryable: retryable,
		Reason: "gave up after 10 tries", Tries: 10}
	if retryable {
		d := notification.Delivery{ID: notification.ID(key), DedupeKey: key, Tenant: tenant, Channel: event.ChannelEmail,
			Priority: notification.PriorityNormal, Recipient: notification.Recipient{Address: "olga@zarya.example"}, Template: "purchase_order"}
		body, err := json.Marshal(d)
		require.NoError(t, err)
		e.Delivery = body
	}
	return e
}

func TestAFailedNotificationIsSentBackToDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	key := "acme:PO-1:1:purchase_order:email:olga@zarya.example"
	id := record(t, b, failedEntry(t, "acme", key, true))

	got := b.do(t, http.MethodPost, "/v1/notifications/"+id+"/retry", acmeSend, nil)
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	require.Contains(t, got.body, `"state":"retrying"`)
	sent := heraldtest.StreamMessages(t, b.nats.JS, "NOTIFY")
	require.Len(t, sent, 1)
	require.Equal(t, "notify.email.normal.acme", sent[0].Subject)
	require.Equal(t, key+":resend:1", sent[0].Header.Get("Nats-Msg-Id"))
	l, err := ledger.Open(heraldtest.Context(t), b.nats.JS)
	require.NoError(t, err)
	e, err := l.Get(heraldtest.Context(t), "acme", key)
	require.NoError(t, err)
	require.Equal(t, ledger.Retrying, e.State)
	require.Equal(t, 1, e.Resends)

	again := b.do(t, http.MethodPost, "/v1/notifications/"+id+"/retry", acmeSend, nil)
	require.Equal(t, http.StatusConflict, again.status, again.body)
	require.Contains(t, again.body, "retrying, not failed")
	require.Len(t, heraldtest.StreamMessages(t, b.nats.JS, "NOTIFY"), 1, "a retry in flight is not sent twice")
}

func TestAnAdminRetriesAnyTenantsNotification(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	id := record(t, b, failedEntry(t, "globex", "globex:PO-9:1:purchase_order:email:x@y.example", true))
	got := b.do(t, http.MethodPost, "/v1/notifications/"+id+"/retry?tenant=globex", adminKey, nil)
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	require.Len(t, heraldtest.StreamMessages(t, b.nats.JS, "NOTIFY"), 1)
}

func TestARetryIsRefusedWhenItCannotHelp(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	failed := record(t, b, failedEntry(t, "acme", "acme:PO-2:1:purchase_order:email:a@b.example", true))
	permanent := failedEntry(t, "acme", "acme:PO-3:1:purchase_order:email:a@b.example", false)
	permanent.Reason = "ses: address rejected"
	refused := record(t, b, permanent)
	delivered := record(t, b, ledger.Entry{DedupeKey: "acme:PO-4:1:purchase_order:email:a@b.example", Tenant: "acme",
		Channel: "email", State: ledger.Delivered, Provider: "ses"})

	for name, c := range map[string]struct {
		key, id, query string
		status         int
		says           string
	}{
		"failed for good":      {acmeSend, refused, "", http.StatusConflict, "failed for good (ses: address rejected)"},
		"delivered":            {acmeSend, delivered, "", http.StatusConflict, "was delivered"},
		"another tenant's":     {globexSend, failed, "", http.StatusNotFound, "no notification"},
		"naming its tenant":    {globexSend, failed, "?tenant=acme", http.StatusNotFound, "no notification"},
		"one never recorded":   {acmeSend, notification.ID("acme:nothing"), "", http.StatusNotFound, "no notification"},
		"admin, no tenant":     {adminKey, failed, "", http.StatusUnprocessableEntity, "?tenant="},
		"without a key":        {"", failed, "", http.StatusUnauthorized, "API key is required"},
		"with a read-only key": {acmeRead, failed, "", http.StatusForbidden, "scope send"},
	} {
		got := b.do(t, http.MethodPost, "/v1/notifications/"+c.id+"/retry"+c.query, c.key, nil)
		require.Equal(t, c.status, got.status, "%s: %s", name, got.body)
		require.Contains(t, got.body, c.says, name)
	}
	require.Empty(t, heraldtest.StreamMessages(t, b.nats.JS, "NOTIFY"))
}
