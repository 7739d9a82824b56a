package router_test

import (
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/streams"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// When deliveries cannot be stored, the event is not acknowledged: it is
// routed again once NOTIFY is back, and nothing is lost.
func TestEventWaitsUntilDeliveriesAreStored(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	require.NoError(t, n.JS.DeleteStream(ctx, "NOTIFY"))

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
	require.Eventually(t, func() bool {
		info, err := consumer.Info(ctx)
		require.NoError(t, err)
		return info.NumRedelivered > 0 || info.NumAckPending > 0
	}, 5*time.Second, 20*time.Millisecond)
	info, err := consumer.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, info.AckFloor.Stream, "not acknowledged while NOTIFY is missing")

	report, err := streams.Apply(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())

	require.Eventually(t, func() bool {
		s, err := n.JS.Stream(ctx, "NOTIFY")
		require.NoError(t, err)
		si, err := s.Info(ctx)
		require.NoError(t, err)
		ci, err := consumer.Info(ctx)
		require.NoError(t, err)
		return si.State.Msgs == 2 && ci.AckFloor.Stream == 1
	}, 10*time.Second, 50*time.Millisecond, "routed once NOTIFY is back: two deliveries, event acknowledged")
}
