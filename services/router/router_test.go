package router_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/router"
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
	m, err := docs.GetLastMsgForSubject(ctx, "docs.render.purchase_order")
	require.NoError(t, err)
	var req documents.Request
	require.NoError(t, json.Unmarshal(m.Data, &req))
	require.Len(t, req.Deliveries, 2, "with both deliveries waiting for it")
	require.Equal(t, documents.MsgID(req.Object), m.Header.Get(jetstream.MsgIDHeader))
}
