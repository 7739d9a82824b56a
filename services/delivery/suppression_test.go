package delivery_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/suppression"
)

// A notification to an address its tenant suppressed is not sent: no
// provider is called, no try spent, nothing dead-lettered; the ledger says
// suppressed, with why, and so does a status event. Once the suppression is
// lifted, the next notification to the address goes out.
func TestASuppressedAddressIsNotSentTo(t *testing.T) {
	t.Parallel()
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	ctx := heraldtest.Context(t)
	store, err := suppression.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	_, err = store.Add(ctx, suppression.Entry{Tenant: "acme", Address: "Olga@Zarya.example", Reason: suppression.HardBounce,
		Detail: "550 5.1.1 user unknown", Source: "sendgrid:ev-1"})
	require.NoError(t, err)
	_, err = store.Add(ctx, suppression.Entry{Tenant: "globex", Address: "someone@else.example", Reason: suppression.Manual})
	require.NoError(t, err)
	// The worker's own copy of the suppressions, which the test watches too.
	cache, err := suppression.Watch(ctx, b.nats.JS)
	require.NoError(t, err)
	t.Cleanup(cache.Stop)
	b.svc = b.worker(t, b.nats.JS, func(c *config) { c.Suppressions = cache })

	b.publish(t, 0)
	b.waitSettled(t)
	require.Zero(t, b.ses.Calls(), "no provider was called")
	require.Empty(t, b.dlq(t), "a suppression is not a failure")
	e := b.ledgerEntry(t, 0)
	require.Equal(t, ledger.Suppressed, e.State)
	require.Zero(t, e.Tries)
	require.Contains(t, e.Reason, "suppressed: hard bounce since ")
	require.Contains(t, e.Reason, "(550 5.1.1 user unknown)")
	var states []string
	for _, st := range heraldtest.Outcomes(t, b.nats.JS) {
		if st.DedupeKey == e.DedupeKey {
			states = append(states, st.Type)
		}
	}
	require.Equal(t, []string{"notification.suppressed"}, states)

	require.NoError(t, store.Remove(ctx, "acme", "", "olga@zarya.example", ""))
	require.Eventually(t, func() bool {
		_, err := cache.Blocks(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "")
		return errors.Is(err, suppression.ErrNotFound)
	}, 5*time.Second, 5*time.Millisecond, "the worker hears of the lifting by watch")
	b.publish(t, 1)
	b.waitSettled(t)
	require.Equal(t, 1, b.ses.Calls())
	require.Equal(t, ledger.Delivered, b.ledgerEntry(t, 1).State)
}
