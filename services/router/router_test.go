package router_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/streams"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// When what the router planned cannot be stored, the event is not
// acknowledged: it is routed again once the stream is back, and nothing is
// lost.
func TestEventWaitsUntilItsRenderRequestIsStored(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	require.NoError(t, n.JS.DeleteStream(ctx, "DOCS"))

	r, err := router.New(n.JS, router.Config{})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })

	payload, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	msg := nats.NewMsg("orders.created")
	msg.Data = payload
	msg.Header.Set(jetstream.MsgIDHeader, "evt-2026-11-30-0001")
	_, err = n.JS.PublishMsg(ctx, msg)
	require.NoError(t, err)

	consumer, err := n.JS.Consumer(ctx, "ORDERS", router.Durable)
	require.NoError(t, err)
	acked := func() bool {
		info, err := consumer.Info(ctx)
		require.NoError(t, err)
		return info.AckFloor.Stream > 0
	}
	// Longer than the client's own retries on "no responders", so the
	// router must really give the event back and get it again.
	require.Never(t, acked, 1500*time.Millisecond, 50*time.Millisecond, "not acknowledged while DOCS is missing")

	report, err := streams.Apply(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())

	require.Eventually(t, func() bool {
		s, err := n.JS.Stream(ctx, "DOCS")
		require.NoError(t, err)
		si, err := s.Info(ctx)
		require.NoError(t, err)
		ci, err := consumer.Info(ctx)
		require.NoError(t, err)
		return si.State.Msgs == 1 && ci.AckFloor.Stream == 1
	}, 10*time.Second, 50*time.Millisecond, "routed once DOCS is back: one render request, event acknowledged")

	docs, err := n.JS.Stream(ctx, "DOCS")
	require.NoError(t, err)
	m, err := docs.GetLastMsgForSubject(ctx, "docs.render.purchase_order.acme")
	require.NoError(t, err)
	var req documents.Request
	require.NoError(t, json.Unmarshal(m.Data, &req))
	require.Len(t, req.Deliveries, 2, "with both deliveries waiting for it")
	require.Equal(t, documents.MsgID(req), m.Header.Get(jetstream.MsgIDHeader))
}

// start runs a router on n, after edit (if any) changes the ORDERS consumer.
func start(t testing.TB, n *heraldtest.NATS, cfg router.Config, edit func(*jetstream.ConsumerConfig)) {
	t.Helper()
	ctx := heraldtest.Context(t)
	if edit != nil {
		c, err := n.JS.Consumer(ctx, "ORDERS", router.Durable)
		require.NoError(t, err)
		cc := c.CachedInfo().Config
		edit(&cc)
		_, err = n.JS.UpdateConsumer(ctx, "ORDERS", cc)
		require.NoError(t, err)
	}
	r, err := router.New(n.JS, cfg)
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })
}

// orderEvent is the sample order.created event with id, edited.
func orderEvent(t *testing.T, id string, edit func(data map[string]any)) []byte {
	t.Helper()
	b, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["id"] = id
	if edit != nil {
		edit(m["data"].(map[string]any))
	}
	b, err = json.Marshal(m)
	require.NoError(t, err)
	return b
}

func contacts(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"name": fmt.Sprintf("Contact %d", i), "role": "supplier",
			"email": fmt.Sprintf("c%04d@zarya.example", i), "channels": []string{"email"}}
	}
	return out
}

func publishEvent(t *testing.T, n *heraldtest.NATS, payload []byte) {
	t.Helper()
	publishOn(t, n, "orders.created", payload)
}

// publishOn publishes an event on subject, with its id as Nats-Msg-Id.
func publishOn(t *testing.T, n *heraldtest.NATS, subject string, payload []byte) {
	t.Helper()
	var ev struct{ ID string }
	require.NoError(t, json.Unmarshal(payload, &ev))
	msg := nats.NewMsg(subject)
	msg.Data = payload
	msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
	_, err := n.JS.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
}

// settled waits until the router has settled (acked or terminated) the
// first count events in ORDERS.
func settled(t *testing.T, n *heraldtest.NATS, count uint64) {
	t.Helper()
	ctx := heraldtest.Context(t)
	require.Eventually(t, func() bool {
		c, err := n.JS.Consumer(ctx, "ORDERS", router.Durable)
		require.NoError(t, err)
		info := c.CachedInfo()
		return info.AckFloor.Stream >= count && info.NumAckPending == 0
	}, 30*time.Second, 20*time.Millisecond, "the router settles %d events", count)
}

// A document with more waiting deliveries than one message holds is asked
// for in parts, each within the connection's max payload and stored under
// its own id; the same event routed again asks for the same parts, which
// DOCS drops as duplicates.
func TestALargeFanOutIsRequestedInPartsThatFit(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	start(t, n, router.Config{MaxRecipients: 1400}, nil)
	fanOut := func(data map[string]any) { data["recipients"] = contacts(1400) }
	publishEvent(t, n, orderEvent(t, "evt-fan-out", fanOut))
	settled(t, n, 1)

	parts := heraldtest.StreamMessages(t, n.JS, "DOCS")
	require.Greater(t, len(parts), 1, "1,400 deliveries do not fit one message")
	seen := map[string]bool{}
	for _, m := range parts {
		require.LessOrEqual(t, int64(len(m.Data)), n.Conn.MaxPayload()-documents.Headroom)
		var req documents.Request
		require.NoError(t, json.Unmarshal(m.Data, &req))
		require.Equal(t, "acme/PO-2026-0042/purchase_order-r1.pdf", req.Object)
		require.Equal(t, documents.MsgID(req), m.Header.Get(jetstream.MsgIDHeader))
		for _, d := range req.Deliveries {
			require.False(t, seen[d.DedupeKey], "in one part only: %s", d.DedupeKey)
			seen[d.DedupeKey] = true
		}
	}
	require.Len(t, seen, 1400, "every delivery waits in some part")

	publishEvent(t, n, orderEvent(t, "evt-fan-out-again", fanOut))
	settled(t, n, 2)
	require.Len(t, heraldtest.StreamMessages(t, n.JS, "DOCS"), len(parts), "the same parts again: duplicates")
}

// Events that can never be routed whole are dead-lettered on their first
// delivery, with a reason that says what to change: too many recipients, or
// a document too large for any message.
func TestEventsThatCanNeverBeRoutedAreDeadLetteredAtOnce(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	start(t, n, router.Config{MaxRecipients: 3}, nil)

	publishEvent(t, n, orderEvent(t, "evt-crowd", func(data map[string]any) { data["recipients"] = contacts(4) }))
	// An event just under the max payload: its order fits, but the render
	// request repeats the order and adds a delivery.
	target := int(n.Conn.MaxPayload()) - 4<<10
	huge := func(size int) []byte {
		return orderEvent(t, "evt-huge", func(data map[string]any) {
			line := data["order"].(map[string]any)["lines"].([]any)[0].(map[string]any)
			line["description"] = strings.Repeat("x", size)
		})
	}
	publishEvent(t, n, huge(target-len(huge(0))))
	settled(t, n, 2)

	entries := map[string]*jetstream.RawStreamMsg{}
	for _, e := range heraldtest.StreamMessages(t, n.JS, "DLQ") {
		entries[e.Header.Get(deadletter.HeaderMsgID)] = e
	}
	require.Len(t, entries, 2)
	crowd, big := entries["evt-crowd"], entries["evt-huge"]
	require.NotNil(t, crowd)
	require.NotNil(t, big)
	require.Equal(t, "data.recipients: 4 recipients, more than router.max_recipients (3)", crowd.Header.Get(deadletter.HeaderReason))
	require.Contains(t, big.Header.Get(deadletter.HeaderReason), "too large for the NATS max payload: render request acme/PO-2026-0042/purchase_order-r1.pdf")
	for _, e := range entries {
		require.Equal(t, "1", e.Header.Get(deadletter.HeaderDeliveries), "not retried")
	}
	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "DOCS"))
}

// When routing fails on the event's last allowed delivery — its render
// request, or the record of what it created, not stored — the router
// dead-letters it with the failure itself, not the DLQ service's guess.
func TestTheLastTryDeadLettersWithTheRealError(t *testing.T) {
	t.Parallel()
	for stream, want := range map[string]string{
		"DOCS":   "gave up after 2 deliveries: routing failed: requesting acme/PO-2026-0042/purchase_order-r1.pdf",
		"STATUS": "gave up after 2 deliveries: routing failed: recording the accepted notifications",
	} {
		t.Run(stream, func(t *testing.T) {
			t.Parallel()
			n := heraldtest.StartNATSWithStreams(t)
			require.NoError(t, n.JS.DeleteStream(heraldtest.Context(t), stream))
			start(t, n, router.Config{}, func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 2 })
			publishEvent(t, n, orderEvent(t, "evt-2026-11-30-0001", nil))

			require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "DLQ")) == 1 }, 30*time.Second, 20*time.Millisecond)
			entry := heraldtest.StreamMessages(t, n.JS, "DLQ")[0]
			require.Equal(t, "2", entry.Header.Get(deadletter.HeaderDeliveries))
			reason := entry.Header.Get(deadletter.HeaderReason)
			require.Contains(t, reason, want)
			require.Contains(t, reason, "no response from stream")
			settled(t, n, 1)
		})
	}
}

// A confirmation and a cancellation name an order and reach nobody: with
// the default routes neither is routed, each is acknowledged and counted
// as unrouted, and neither is dead-lettered nor sends or renders anything.
// (A workflow waiting on the order ends on them.)
func TestOrderSignalsAreAcknowledgedAsUnrouted(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	reader := sdkmetric.NewManualReader()
	r, err := router.New(n.JS, router.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })

	for _, name := range []string{"confirmed", "cancelled"} {
		payload, err := os.ReadFile("../../examples/events/order." + name + ".json")
		require.NoError(t, err)
		publishOn(t, n, "orders."+name, payload)
	}
	settled(t, n, 2)

	require.Equal(t, map[string]int64{"unrouted": 2}, heraldtest.Counts(t, reader, "herald.router.events", "outcome"))
	require.Equal(t, map[string]int64{"order.confirmed": 1, "order.cancelled": 1}, heraldtest.Counts(t, reader, "herald.router.events", "type"))
	for _, stream := range []string{"DLQ", "NOTIFY", "DOCS"} {
		require.Empty(t, heraldtest.StreamMessages(t, n.JS, stream), stream)
	}
}
