package webhooks

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/vault"
)

// A redelivery reads a bounded part of the ledger: a range of a day at
// most, and no more of the tenant's ledger writes — outcomes or not — than
// its bound (here 18, in place of MaxLedgerReads): past it, it is refused,
// saying how far it got; other tenants' writes are not read.
func TestARedeliveryReadsABoundedPartOfTheLedger(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	key, err := vault.ParseKey([]byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="))
	require.NoError(t, err)
	keys, err := vault.NewKeyring(key)
	require.NoError(t, err)
	s, err := Open(ctx, n.JS, keys)
	require.NoError(t, err)
	l, err := ledger.Open(ctx, n.JS)
	require.NoError(t, err)
	since := time.Now().Add(-time.Minute)
	e, _, err := s.Create(ctx, "acme", New{URL: "https://erp.acme.example/hook"})
	require.NoError(t, err)
	// acme: six webhooks, each claimed then delivered, and six emails:
	// eighteen writes; globex: twenty.
	for i := range 6 {
		d := notification.Delivery{ID: notification.ID(fmt.Sprintf("acme:w%d", i)), DedupeKey: fmt.Sprintf("acme:w%d", i), Tenant: "acme",
			Channel: event.ChannelWebhook, Recipient: notification.Recipient{Address: e.ID}, Template: notification.FeedTemplate,
			Payload: json.RawMessage(`{"type":"notification.delivered","timestamp":"2026-12-01T08:00:00Z","data":{}}`)}
		raw, err := json.Marshal(d)
		require.NoError(t, err)
		w := ledger.Entry{DedupeKey: d.DedupeKey, NotificationID: d.ID, Tenant: "acme", Channel: "webhook", State: ledger.Sending}
		require.NoError(t, l.Put(ctx, &w))
		w.State, w.Delivery = ledger.Delivered, raw
		require.NoError(t, l.Put(ctx, &w))
		require.NoError(t, l.Put(ctx, &ledger.Entry{DedupeKey: fmt.Sprintf("acme:e%d", i), NotificationID: notification.ID(fmt.Sprintf("acme:e%d", i)),
			Tenant: "acme", Channel: "email", State: ledger.Delivered}))
	}
	for i := range 20 {
		require.NoError(t, l.Put(ctx, &ledger.Entry{DedupeKey: fmt.Sprintf("globex:e%d", i), NotificationID: notification.ID(fmt.Sprintf("globex:e%d", i)),
			Tenant: "globex", Channel: "email", State: ledger.Delivered}))
	}

	r := Redelivery{Tenant: "acme", Since: since, DryRun: true, maxReads: 18}
	out, err := s.Redeliver(ctx, n.JS, l, r, nil)
	require.NoError(t, err)
	require.Len(t, out.Sent, 6, "eighteen writes are within the bound")

	r.maxReads = 17
	_, err = s.Redeliver(ctx, n.JS, l, r, nil)
	var bad BadRedelivery
	require.ErrorAs(t, err, &bad)
	require.Contains(t, bad.Reason, "the range holds more than 17 of the tenant's ledger writes, the most one redelivery reads (the first 17 end before ")

	r = Redelivery{Tenant: "acme", Since: since.Add(-MaxRange), DryRun: true}
	_, err = s.Redeliver(ctx, n.JS, l, r, nil)
	require.ErrorAs(t, err, &bad)
	require.Contains(t, bad.Reason, "more than the 24h0m0s one redelivery may read; narrow it (since, until)")
	r.Until = since.Add(-time.Minute)
	out, err = s.Redeliver(ctx, n.JS, l, r, nil)
	require.NoError(t, err, "a day, however long ago")
	require.Empty(t, out.Sent)
}
