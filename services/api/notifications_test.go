package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/report"
)

// record writes a notification's ledger entry as delivery workers do.
func record(t *testing.T, b *bundle, e ledger.Entry) string {
	t.Helper()
	ctx := heraldtest.Context(t)
	l, err := ledger.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	e.NotificationID = notification.ID(e.DedupeKey)
	require.NoError(t, l.Put(ctx, &e))
	return e.NotificationID
}

var tried = time.Date(2026, 11, 30, 9, 0, 5, 0, time.UTC)

func TestANotificationIsReadByItsTenantOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	id := record(t, b, ledger.Entry{DedupeKey: "acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example", Tenant: "acme",
		Channel: "email", State: ledger.Delivered, Provider: "sendgrid", ProviderMessageID: "sg-1", Tries: 2,
		Attempts: []ledger.Attempt{
			{Time: tried, Delivery: 1, Error: "ses: HTTP 503"},
			{Time: tried.Add(time.Minute), Delivery: 2, Provider: "sendgrid"},
		},
		Reports: []report.Report{{Provider: "sendgrid", MessageID: "sg-1", EventID: "ev-1", Kind: report.Bounced, Hard: true,
			Recipient: "olga@zarya.example", Detail: "5.1.1 user unknown", Time: tried.Add(2 * time.Minute)}}})

	got := b.do(t, http.MethodGet, "/v1/notifications/"+id, acmeRead, nil)
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.JSONEq(t, `{"id":"`+id+`","tenant":"acme","channel":"email","state":"delivered","provider":"sendgrid",
		"provider_message_id":"sg-1","tries":2,"attempts":[
			{"time":"2026-11-30T09:00:05Z","error_class":"transient","error":"ses: HTTP 503"},
			{"time":"2026-11-30T09:01:05Z","provider":"sendgrid"}],
		"reports":[{"time":"2026-11-30T09:02:05Z","kind":"bounced","hard":true,"provider":"sendgrid",
			"detail":"5.1.1 user unknown","event_id":"ev-1"}],
		"updated_at":`+jsonField(t, got.body, "updated_at")+`}`, got.body)

	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/notifications/"+id+"?tenant=acme", adminKey, nil).status)
	for name, c := range map[string]struct {
		key, id string
		status  int
	}{
		"another tenant's":     {globexRead, id, http.StatusNotFound},
		"naming its tenant":    {globexRead, id + "?tenant=acme", http.StatusNotFound},
		"admin, no tenant":     {adminKey, id, http.StatusUnprocessableEntity},
		"one never recorded":   {acmeRead, notification.ID("acme:nothing"), http.StatusNotFound},
		"not an id":            {acmeRead, "deliveries", http.StatusNotFound},
		"without a key":        {"", id, http.StatusUnauthorized},
		"with a send-only key": {acmeSend, id, http.StatusForbidden},
	} {
		got := b.do(t, http.MethodGet, "/v1/notifications/"+c.id, c.key, nil)
		require.Equal(t, c.status, got.status, "%s: %s", name, got.body)
		require.Equal(t, "application/problem+json", got.header.Get("Content-Type"), name)
	}
	nothing := notification.ID("acme:nothing")
	notFound := b.do(t, http.MethodGet, "/v1/notifications/"+nothing, globexRead, nil)
	another := b.do(t, http.MethodGet, "/v1/notifications/"+id, globexRead, nil)
	require.Equal(t, strings.ReplaceAll(notFound.body, nothing, "ID"), strings.ReplaceAll(another.body, id, "ID"),
		"another tenant's reads as what does not exist")
}

// A permanent refusal is the last try of a notification failed for good;
// an ambiguous try says so.
func TestAttemptsSayTheirErrorClass(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	id := record(t, b, ledger.Entry{DedupeKey: "acme:PO-7:1:purchase_order:email:x@y.example", Tenant: "acme",
		Channel: "email", State: ledger.Failed, Reason: "ses: address rejected", Tries: 2,
		Attempts: []ledger.Attempt{
			{Time: tried, Delivery: 1, Error: "ses: timeout after accepting", Ambiguous: true},
			{Time: tried.Add(time.Minute), Delivery: 2, Error: "ses: address rejected"},
		}})
	got := b.do(t, http.MethodGet, "/v1/notifications/"+id, acmeRead, nil)
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.Contains(t, got.body, `"error_class":"ambiguous","error":"ses: timeout after accepting"`)
	require.Contains(t, got.body, `"error_class":"permanent","error":"ses: address rejected"`)
	require.Contains(t, got.body, `"state":"failed","reason":"ses: address rejected"`)
}
