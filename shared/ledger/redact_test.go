package ledger_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/report"
)

// A redacted entry holds the address in none of the revisions the bucket
// keeps, yet stays delivered at its key — the worker that gets the
// message again finds it by the dedupe key it always had — and the
// rewrite is no outcome for the ledger's readers; a later write of the
// entry (a provider's report) lands on the same key.
func TestARedactedEntryStaysDeliveredWithoutTheAddress(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	l, err := ledger.Open(ctx, n.JS)
	require.NoError(t, err)
	e, err := l.Get(ctx, "acme", key)
	require.NoError(t, err)
	e.NotificationID, e.Channel, e.Recipient, e.State = "ntf_x", "email", "olga+orders@zarya.example", ledger.Sending
	e.Delivery = json.RawMessage(`{"recipient":{"address":"olga+orders@zarya.example"}}`)
	require.NoError(t, l.Put(ctx, &e))
	e.State, e.Provider, e.ProviderMessageID = ledger.Delivered, "ses", "m-1"
	e.Record(ledger.Attempt{Time: time.Now(), Delivery: 1, Provider: "ses", Note: "to olga+orders@zarya.example"})
	e.Report(report.Report{Provider: "ses", MessageID: "m-1", EventID: "ev-1", Kind: report.Delivered, Recipient: "olga+orders@zarya.example"})
	require.NoError(t, l.Put(ctx, &e))
	id := "ntf_" + strings.TrimPrefix(ledger.Key("acme", key), "acme.")
	mask := func(s string) string { return strings.ReplaceAll(s, "olga+orders@zarya.example", "erased:1f2e") }

	changed, err := l.Redact(ctx, "acme", id, mask)
	require.NoError(t, err)
	require.True(t, changed)

	msgs := heraldtest.StreamMessages(t, n.JS, "KV_deliveries")
	require.Len(t, msgs, 1, "the earlier revisions went with the rewrite")
	require.NotContains(t, string(msgs[0].Data), "olga")
	var written ledger.Entry
	require.NoError(t, json.Unmarshal(msgs[0].Data, &written))
	require.False(t, written.Outcome(), "the rewrite tells no outcome again")
	require.Empty(t, heraldtest.Outcomes(t, n.JS))

	again, err := l.Get(ctx, "acme", key)
	require.NoError(t, err)
	require.True(t, again.Exists(), "found by the dedupe key the message carries")
	require.Equal(t, ledger.Delivered, again.State)
	require.Equal(t, "erased:1f2e", again.Recipient)
	require.Equal(t, "acme:PO-2026-0042:1:purchase_order:email:erased:1f2e", again.DedupeKey)
	require.Equal(t, 1, again.Tries)
	require.Empty(t, again.Delivery)

	again.Report(report.Report{Provider: "ses", MessageID: "m-1", EventID: "ev-2", Kind: report.Opened})
	require.NoError(t, l.Put(ctx, &again), "a later write of the redacted entry")
	byID, err := l.ByID(ctx, "acme", id)
	require.NoError(t, err)
	require.Len(t, byID.Reports, 2, "on the same key")

	changed, err = l.Redact(ctx, "acme", id, mask)
	require.NoError(t, err)
	require.False(t, changed, "nothing left to redact")
}

// An entry a worker holds is not rewritten under it; a failed but
// retryable one becomes failed for good, its delivery message gone.
func TestRedactLeavesAnEntryInFlightAndRetiresARetryableOne(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	l, err := ledger.Open(ctx, n.JS)
	require.NoError(t, err)
	mask := func(s string) string { return strings.ReplaceAll(s, "olga", "erased") }
	put := func(dedupe string, state ledger.State, retryable bool) string {
		e, err := l.Get(ctx, "acme", dedupe)
		require.NoError(t, err)
		e.Recipient, e.State, e.Retryable, e.Delivery = "olga@zarya.example", state, retryable, json.RawMessage(`{"to":"olga"}`)
		require.NoError(t, l.Put(ctx, &e))
		return "ntf_" + strings.TrimPrefix(ledger.Key("acme", dedupe), "acme.")
	}
	sending := put("acme:o1:1:po:email:olga@zarya.example", ledger.Sending, false)
	_, err = l.Redact(ctx, "acme", sending, mask)
	require.ErrorIs(t, err, ledger.ErrInFlight)
	e, err := l.ByID(ctx, "acme", sending)
	require.NoError(t, err)
	require.Equal(t, "olga@zarya.example", e.Recipient, "untouched")

	failed := put("acme:o2:1:po:email:olga@zarya.example", ledger.Failed, true)
	_, err = l.Redact(ctx, "acme", failed, mask)
	require.NoError(t, err)
	e, err = l.ByID(ctx, "acme", failed)
	require.NoError(t, err)
	require.Equal(t, ledger.Failed, e.State)
	require.False(t, e.Retryable, "nobody is left to resend it to")
	require.Empty(t, e.Delivery)

	_, err = l.Redact(ctx, "acme", "ntf_"+strings.Repeat("0", 64), mask)
	require.ErrorIs(t, err, ledger.ErrNotFound)

	ids, err := l.To(ctx, "acme", []string{"OLGA@zarya.example"})
	require.NoError(t, err)
	require.Equal(t, []string{sending}, ids, "the redacted one names her no more")
	ids, err = l.To(ctx, "globex", []string{"olga@zarya.example"})
	require.NoError(t, err)
	require.Empty(t, ids)
}
