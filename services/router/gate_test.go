package router_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/tenant"
)

// holding admits every tenant, but holds globex's events in Admit until
// released: an event being routed for as long as the test wants.
type holding struct {
	entered, release chan struct{}
	once, released   sync.Once
}

func newHolding() *holding {
	return &holding{entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *holding) Admit(id string, _ bool) error {
	if id == "globex" {
		h.once.Do(func() { close(h.entered) })
		<-h.release
	}
	return nil
}

// Release lets globex's events be routed.
func (h *holding) Release() { h.released.Do(func() { close(h.release) }) }

func (h *holding) Plan(string, tenant.Plans) (string, tenant.Plan) { return "", tenant.Plan{} }

// startHeld starts a router whose fan-out waits patience at most for the
// events being routed, fans out acme's topic "sevilla" of members (the
// first with sms off) page at a time, and is routing one of globex's
// orders, held in the registry, before acme's alert arrives.
func startHeld(t *testing.T, patience time.Duration, members, page int) (*heraldtest.NATS, *router.Service, *holding) {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	topic(t, n, "sevilla", members)
	h := newHolding()
	r, err := router.New(n.JS, router.Config{FanoutPage: page, Channels: []event.Channel{event.ChannelSMS}, Registry: h})
	require.NoError(t, err)
	router.SetFanoutPatience(r, patience)
	require.NoError(t, r.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })
	t.Cleanup(h.Release)

	publishOn(t, n, "orders.created", orderFor(t, "evt-globex", "globex"))
	select {
	case <-h.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("globex's order was never routed")
	}
	publishOn(t, n, "inventory.low_stock", stockAlert(t, map[string]any{"role": "warehouse", "topic": "sevilla"}))
	return n, r, h
}

// While another tenant's event is being routed, a fan-out plans and
// publishes nothing: its pages wait for the router to be free, and go on
// when it is.
func TestAFanoutWaitsForTheEventsBeingRouted(t *testing.T) {
	t.Parallel()
	n, r, h := startHeld(t, time.Hour, 8, 3)

	require.Eventually(t, func() bool { return router.FanoutWaits(r) > 0 }, 30*time.Second, 10*time.Millisecond,
		"the fan-out waits for globex's order")
	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "NOTIFY"), "no delivery of the topic's while an order is routed")

	h.Release()
	require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "NOTIFY")) == 7 },
		30*time.Second, 20*time.Millisecond, "the seven members with sms on, once the order is routed")
}

// A router never free of events still fans out: each wait is bounded.
func TestAFanoutIsNotStarvedByEventsBeingRouted(t *testing.T) {
	t.Parallel()
	n, _, _ := startHeld(t, 10*time.Millisecond, 8, 3)

	require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "NOTIFY")) == 7 },
		30*time.Second, 20*time.Millisecond, "the seven members with sms on, while globex's order is still routed")
}

// While an event is routed, a page's deliveries go a part at a time, the
// gate asked before each: an event arriving mid-page waits behind one
// part's stores, not the page's.
func TestAFanoutPublishesAPartAtATimeWhileEventsAreRouted(t *testing.T) {
	t.Parallel()
	n, r, _ := startHeld(t, time.Millisecond, 40, 39)

	require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "NOTIFY")) == 39 },
		30*time.Second, 20*time.Millisecond, "the 39 members with sms on")
	// The first page plans 38 deliveries (u-000 has sms off), the second 1:
	// the gate is asked before each page and before each part.
	parts := (38+router.FanoutWindow-1)/router.FanoutWindow + 1
	require.Equal(t, 2+parts, router.FanoutWaits(r))
}

// A fan-out alone never rests: the event that started it is not another
// event it should make room for.
func TestAFanoutAloneDoesNotRest(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	topic(t, n, "sevilla", 40)
	r, err := router.New(n.JS, router.Config{FanoutPage: 3, Channels: []event.Channel{event.ChannelSMS}})
	require.NoError(t, err)
	require.NoError(t, r.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })

	publishOn(t, n, "inventory.low_stock", stockAlert(t, map[string]any{"role": "warehouse", "topic": "sevilla"}))
	require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "NOTIFY")) == 39 },
		30*time.Second, 20*time.Millisecond, "the 39 members with sms on")
	require.Zero(t, router.FanoutRests(r))
}
