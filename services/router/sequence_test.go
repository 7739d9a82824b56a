package router_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/ordering"
)

// startOrdered starts a router registering ordered routes' revisions in
// seq, with routes (nil: the built-in ones).
func startOrdered(t *testing.T, seq router.Sequences, routes []router.Route) *heraldtest.NATS {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	r, err := router.New(n.JS, router.Config{Sequences: seq, Routes: routes})
	require.NoError(t, err)
	require.NoError(t, r.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })
	return n
}

// publishExample publishes examples/events/<name>.json on subject.
func publishExample(t *testing.T, n *heraldtest.NATS, name, subject string) {
	t.Helper()
	payload, err := os.ReadFile("../../examples/events/" + name + ".json")
	require.NoError(t, err)
	msg := nats.NewMsg(subject)
	msg.Data = payload
	msg.Header.Set(jetstream.MsgIDHeader, name)
	_, err = n.JS.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
}

// waiting are the deliveries waiting in DOCS for revision rev's purchase
// order, once it is there.
func waiting(t *testing.T, n *heraldtest.NATS, rev int) []notification.Delivery {
	t.Helper()
	var out []notification.Delivery
	require.Eventually(t, func() bool {
		out = nil
		for _, m := range heraldtest.StreamMessages(t, n.JS, "DOCS") {
			var req documents.Request
			require.NoError(t, json.Unmarshal(m.Data, &req))
			for _, d := range req.Deliveries {
				if d.Order.Revision == rev {
					out = append(out, d)
				}
			}
		}
		return len(out) > 0
	}, 30*time.Second, 20*time.Millisecond)
	return out
}

// A document route is ordered by default: each revision is registered
// before it is published, and the one published while an earlier one is
// pending says so — the only one a worker asks about.
func TestDocumentRoutesRegisterEachRevision(t *testing.T) {
	t.Parallel()
	seq := ordering.New(heraldtest.RedisClient(t, heraldtest.RedisURL(t)), heraldtest.Prefix())
	n := startOrdered(t, seq, nil)
	publishExample(t, n, "order.created", "orders.created")
	first := waiting(t, n, 1)
	publishExample(t, n, "order.updated", "orders.updated")
	second := waiting(t, n, 2)

	for _, d := range first {
		require.NotNil(t, d.Sequence, "revision 1 to %s is ordered", d.Recipient.Address)
		require.False(t, d.Sequence.Behind, "nothing was pending before revision 1")
		require.Equal(t, notification.SequenceKey(d.Tenant, d.Order.ID, d.Channel, d.Recipient.Address), d.Sequence.Key)
	}
	for _, d := range second {
		require.NotNil(t, d.Sequence)
		require.True(t, d.Sequence.Behind, "revision 1 to %s is still pending", d.Recipient.Address)
	}
}

// ordered: false costs nothing: no sequence, nothing registered.
func TestUnorderedRouteRegistersNothing(t *testing.T) {
	t.Parallel()
	routes := router.DefaultRoutes()
	for i := range routes {
		routes[i].Ordered = new(bool)
	}
	// Sequences on a Redis that is gone: a registration would fail the event.
	r, err := embedded.StartRedis("127.0.0.1:0")
	require.NoError(t, err)
	seq := ordering.New(heraldtest.RedisClient(t, r.URL()), heraldtest.Prefix())
	r.Close()
	n := startOrdered(t, seq, routes)
	publishExample(t, n, "order.created", "orders.created")
	for _, d := range waiting(t, n, 1) {
		require.Nil(t, d.Sequence)
	}
}

// With Redis down, an ordered route's event is not published unregistered:
// it is routed again, and nothing reaches DOCS meanwhile.
func TestRevisionsAreNotPublishedUnregistered(t *testing.T) {
	t.Parallel()
	r, err := embedded.StartRedis("127.0.0.1:0")
	require.NoError(t, err)
	seq := ordering.New(heraldtest.RedisClient(t, r.URL()), heraldtest.Prefix())
	r.Close()
	n := startOrdered(t, seq, nil)
	publishExample(t, n, "order.created", "orders.created")

	c, err := n.JS.Consumer(heraldtest.Context(t), "ORDERS", router.Durable)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := c.Info(heraldtest.Context(t))
		require.NoError(t, err)
		return info.NumRedelivered > 0
	}, 30*time.Second, 50*time.Millisecond, "the event is routed again")
	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "DOCS"), "no revision published unregistered")
}

// A route without a document may be ordered too: its deliveries go
// straight to NOTIFY, encoded before registration — the one found behind
// says so all the same.
func TestOrderedRouteWithoutDocumentMarksTheLaterRevision(t *testing.T) {
	t.Parallel()
	seq := ordering.New(heraldtest.RedisClient(t, heraldtest.RedisURL(t)), heraldtest.Prefix())
	yes := true
	var routes []router.Route
	for _, ev := range []string{"order.created", "order.updated"} {
		routes = append(routes, router.Route{Event: ev, Template: "order_note", Roles: []string{"supplier"},
			Channels: []event.Channel{event.ChannelEmail}, Ordered: &yes})
	}
	n := startOrdered(t, seq, routes)
	// One after the other: the router routes events at once, and a later
	// revision registered before an earlier one is known goes first.
	publishExample(t, n, "order.created", "orders.created")
	require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "NOTIFY")) == 1 }, 30*time.Second, 20*time.Millisecond)
	publishExample(t, n, "order.updated", "orders.updated")

	behind := map[int]bool{}
	require.Eventually(t, func() bool {
		for _, m := range heraldtest.StreamMessages(t, n.JS, "NOTIFY") {
			d, err := notification.Decode(m.Data)
			require.NoError(t, err)
			require.NotNil(t, d.Sequence)
			behind[d.Order.Revision] = d.Sequence.Behind
		}
		return len(behind) == 2
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, map[int]bool{1: false, 2: true}, behind)
}
