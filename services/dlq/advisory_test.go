package dlq_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// exhaust publishes data to NOTIFY and takes it from email-normal, once,
// without settling it: with MaxDeliver 1, the server gives up on it when
// the ack wait ends and says so in a MAX_DELIVERIES advisory.
func (b *bundle) exhaust(t *testing.T, data []byte) {
	t.Helper()
	ctx := heraldtest.Context(t)
	cons, err := b.nats.JS.Consumer(ctx, "NOTIFY", "email-normal")
	require.NoError(t, err)
	cfg := cons.CachedInfo().Config
	cfg.MaxDeliver, cfg.AckWait = 1, 100*time.Millisecond
	cons, err = b.nats.JS.UpdateConsumer(ctx, "NOTIFY", cfg)
	require.NoError(t, err)
	_, err = b.nats.JS.Publish(ctx, "notify.email.normal.acme", data)
	require.NoError(t, err)
	msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	require.NoError(t, err)
	require.Equal(t, data, msg.Data())
}

// dlq reads the DLQ's entries.
func (b *bundle) dlq(t *testing.T) []*jetstream.RawStreamMsg {
	t.Helper()
	return heraldtest.StreamMessages(t, b.nats.JS, dlq.Stream)
}

// padded is a JSON payload of exactly n bytes for tenant acme.
func padded(n int) []byte {
	head := `{"tenant":"acme","pad":"`
	return []byte(head + strings.Repeat("x", n-len(head)-2) + `"}`)
}

// A message near max_payload fitted its stream but not a DLQ entry (the
// entry adds headers): it is dead-lettered with its payload in the object
// store instead of being retried forever.
func TestAnExhaustedMessageNearMaxPayloadIsDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	data := padded(int(b.nats.Conn.MaxPayload()) - 100)
	b.exhaust(t, data)
	b.service(t, dlq.SweepConfig{}, nil)

	require.Eventually(t, func() bool { return len(b.dlq(t)) == 1 }, 20*time.Second, 20*time.Millisecond)
	entry := b.dlq(t)[0]
	require.Equal(t, "dlq.NOTIFY.email-normal", entry.Subject)
	require.Equal(t, "NOTIFY/1", entry.Header.Get(deadletter.HeaderPayloadObject))
	got, err := deadletter.Payload(heraldtest.Context(t), b.nats.JS, entry.Header, entry.Data)
	require.NoError(t, err)
	require.Equal(t, data, got)
	require.Eventually(t, func() bool { return len(b.notify(t)) == 0 }, 10*time.Second, 20*time.Millisecond,
		"kept in the DLQ, the original leaves its work queue")
}

// A message the DLQ refuses for good (larger than its max_msg_size) cannot
// be copied, however often the advisory is retried: the advisory itself is
// dead-lettered with the reason, and the message stays where it is.
func TestAnAdvisoryWhoseMessageTheDLQRefusesEndsInTheDLQ(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	s, err := b.nats.JS.Stream(ctx, dlq.Stream)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.MaxMsgSize = 4 << 10
	_, err = b.nats.JS.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	data := padded(8 << 10)
	b.exhaust(t, data)
	b.service(t, dlq.SweepConfig{}, nil)

	require.Eventually(t, func() bool { return len(b.dlq(t)) == 1 }, 20*time.Second, 20*time.Millisecond)
	entry := b.dlq(t)[0]
	require.Equal(t, "dlq.ADVISORIES.dlq", entry.Subject)
	require.Equal(t, "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.NOTIFY.email-normal", entry.Header.Get(deadletter.HeaderSubject))
	reason := entry.Header.Get(deadletter.HeaderReason)
	require.Contains(t, reason, "could not dead-letter NOTIFY #1 (exhausted 1 deliveries to email-normal)")
	require.Contains(t, reason, "message size exceeds maximum allowed")
	require.Contains(t, string(entry.Data), `"stream_seq":1`, "the entry keeps the advisory")
	notify := b.notify(t)
	require.Len(t, notify, 1, "the message it could not copy stays in its stream")
	require.Equal(t, data, notify[0].Data)
	c, err := b.nats.JS.Consumer(ctx, dlq.AdvisoryStream, dlq.AdvisoryDurable)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := c.Info(ctx)
		require.NoError(t, err)
		return info.NumAckPending == 0 && info.NumPending == 0
	}, 10*time.Second, 20*time.Millisecond, "the advisory is settled, not retried forever")

	// Once the DLQ takes larger entries, redriving the advisory's entry
	// tries the copy again.
	cfg.MaxMsgSize = 8 << 20
	_, err = b.nats.JS.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	x, err := dlq.OpenEntries(ctx, b.nats.JS)
	require.NoError(t, err)
	e, err := x.Get(ctx, 1)
	require.NoError(t, err)
	_, err = x.Redrive(ctx, e)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(b.notify(t)) == 0 }, 20*time.Second, 20*time.Millisecond)
	entries := b.dlq(t)
	require.Len(t, entries, 2)
	require.Equal(t, "dlq.NOTIFY.email-normal", entries[1].Subject)
	require.Equal(t, data, entries[1].Data)
}

// An advisory about a stream that no longer exists names a message that is
// gone with it: the advisory is dead-lettered, not retried forever.
func TestAnAdvisoryForAStreamThatIsGoneEndsInTheDLQ(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.nats.JS.Publish(heraldtest.Context(t), "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.GONE.worker",
		[]byte(`{"type":"io.nats.jetstream.advisory.v1.max_deliver","stream":"GONE","consumer":"worker","stream_seq":3,"deliveries":5}`))
	require.NoError(t, err)
	b.service(t, dlq.SweepConfig{}, nil)

	require.Eventually(t, func() bool { return len(b.dlq(t)) == 1 }, 20*time.Second, 20*time.Millisecond)
	entry := b.dlq(t)[0]
	require.Equal(t, "dlq.ADVISORIES.dlq", entry.Subject)
	require.Contains(t, entry.Header.Get(deadletter.HeaderReason), "could not dead-letter GONE #3")
	require.Contains(t, entry.Header.Get(deadletter.HeaderReason), "stream not found")
}
