package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
)

// crew runs Herald processes against one NATS and Redis, and kills them.
type crew struct {
	t   *testing.T
	cfg app.Config
	mu  sync.Mutex
	all []*app.App
}

func (c *crew) start(services ...string) *app.App {
	c.t.Helper()
	cfg := c.cfg
	cfg.Services = services
	a, err := app.New(cfg, slog.New(slog.NewTextHandler(testWriter{c.t}, &slog.HandlerOptions{Level: slog.LevelError})))
	require.NoError(c.t, err)
	require.NoError(c.t, a.Start(context.Background()))
	c.mu.Lock()
	c.all = append(c.all, a)
	c.mu.Unlock()
	return a
}

// kill stops a process without letting it drain: what it had pulled but not
// started goes back to the server after AckWait; sends under way finish.
func kill(a *app.App) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = a.Stop(ctx)
}

// Thousands of notifications while delivery workers and the router are
// killed and restarted every few seconds, Redis is restarted (losing every
// lease), providers fail on a schedule and events are published twice —
// some past the duplicate windows. Counted at the fake providers: every
// notification exactly once.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos")
	}
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	heraldtest.RegisterTenants(t, n.JS, "acme")
	// A Redis of our own, to restart it: it keeps nothing, as a Redis
	// without persistence loses its leases when it restarts.
	redis := heraldtest.StartRedisServer(t)

	f := fakeProviders(t)
	f.ses.Faults(emailtest.FailEvery(7, sestest.ServerError))
	f.sg.Faults(emailtest.FailEvery(5, sendgridtest.ServerError))
	c := &crew{t: t}
	c.cfg.NATS.URL = n.Server.URL()
	c.cfg.Redis.URL = redis.URL()
	c.cfg.Redis.Prefix = heraldtest.Prefix()
	c.cfg.HTTP.Listen, c.cfg.API.Listen = "127.0.0.1:0", "127.0.0.1:0"
	c.cfg.Streams.SkipApply = true
	f.configure(&c.cfg)
	withoutDocuments(&c.cfg)
	c.cfg.Email.RetryDelay = 20 * time.Millisecond
	// No fault here leaves a send ambiguous (a provider that may have taken
	// a message it did not confirm: the one duplicate Herald allows). A
	// provider call cut short by a loaded machine would: under -race on two
	// cores, SES calls outlast a one-second timeout.
	c.cfg.Email.Timeout = 10 * time.Second
	t.Cleanup(func() {
		for _, a := range c.all {
			_ = a.Stop(context.Background())
		}
	})
	p := &pipeline{nc: n.Conn, js: n.JS}
	shrinkDuplicateWindows(t, p, time.Second)
	// Workers serve the tenant in turn (scheduling.fair): a killed worker
	// had pulled only the deliveries it was sending, which come back
	// after the declared AckWait.

	router := c.start("router")
	workers := []*app.App{c.start("delivery"), c.start("delivery")}

	const events, recipients = 1000, 3
	want := map[string]bool{}
	payloads := make([][]byte, events)
	keys := make([][]string, events) // dedupe keys, by event
	for i := range events {
		payloads[i] = sample(t, "order.created.json", func(m map[string]any) {
			id := fmt.Sprintf("PO-CHAOS-%04d", i)
			m["id"] = "evt-" + id
			data := m["data"].(map[string]any)
			data["order"].(map[string]any)["id"] = id
			var rs []any
			for r := range recipients {
				addr := fmt.Sprintf("buyer%d@customer%d.example", r, i%13)
				rs = append(rs, map[string]any{"role": "buyer", "email": addr, "channels": []any{"email"}})
				key := fmt.Sprintf("acme:%s:1:purchase_order:email:%s", id, addr)
				want[notification.ID(key)] = true
				keys[i] = append(keys[i], key)
			}
			data["recipients"] = rs
		})
	}

	// The router's deliveries, as published: copies of them are published
	// again, past NOTIFY's duplicate window.
	routed := captureDeliveries(t, n.Conn)
	published := make(chan struct{})
	go func() {
		defer close(published)
		for i, body := range payloads {
			publishRetrying(t, p, fmt.Sprintf("evt-%d", i), body)
			if i%20 == 0 { // again at once: the duplicate window drops it
				publishRetrying(t, p, fmt.Sprintf("evt-%d", i), body)
			}
			time.Sleep(8 * time.Millisecond) // a publisher's pace, not a wait
		}
	}()
	// Every 20th event again, once it was delivered and past the duplicate
	// windows: its deliveries, which only the ledger can stop, and the
	// event, which the router takes for new.
	deliveries, err := ledger.Open(heraldtest.Context(t), n.JS)
	require.NoError(t, err)
	ctx, stopAgain := context.WithCancel(context.Background())
	againDone := make(chan struct{})
	go func() {
		defer close(againDone)
		for i := 10; i < events; i += 20 {
			if !waitDelivered(ctx, deliveries, keys[i]) {
				return
			}
			for _, key := range keys[i] {
				msg := routed.get(key)
				if msg == nil {
					t.Errorf("delivered, but the router's copy of %s was not seen", key)
					continue
				}
				publishPastWindow(ctx, p, msg)
			}
			publishPastWindow(ctx, p, newMsg("orders.created", fmt.Sprintf("evt-%d", i), payloads[i]))
		}
	}()
	t.Cleanup(func() { stopAgain(); <-againDone }) // before NATS stops

	kills, restarts := 0, 0
	tick := time.NewTicker(700 * time.Millisecond)
	defer tick.Stop()
	redisRestarted := false
	for done := false; !done; {
		select {
		case <-published:
			done = true
		case <-tick.C:
			i := rand.IntN(len(workers))
			kill(workers[i])
			workers[i] = c.start("delivery")
			kills++
			if kills%3 == 0 {
				kill(router)
				router = c.start("router")
				restarts++
			}
			if kills == 2 && !redisRestarted {
				redis.Restart()
				redisRestarted = true
			}
		}
	}
	t.Logf("published %d events; killed %d workers, restarted the router %d times, Redis restarted: %v", events, kills, restarts, redisRestarted)

	// Minutes, not seconds: under the race detector on a loaded CI machine
	// the restarts' redeliveries take their time.
	if !assertEventually(t, func() bool { return len(f.sent(t)) == events*recipients }, 4*time.Minute) {
		adv := heraldtest.StreamMessages(t, n.JS, "ADVISORIES")
		left := heraldtest.StreamMessages(t, n.JS, "NOTIFY")
		t.Fatalf("not all delivered: %d of %d; %d advisories, %d messages left in NOTIFY", len(f.sent(t)), events*recipients, len(adv), len(left))
	}
	<-againDone
	p.settle(t) // anything still coming would be a duplicate
	sent := f.sent(t)
	var twice []string
	for id, k := range sent {
		if !want[id] {
			t.Errorf("unexpected notification %s", id)
		}
		if k != 1 {
			twice = append(twice, fmt.Sprintf("%s×%d", id, k))
		}
	}
	require.Empty(t, twice, "sent more than once")
	require.Len(t, sent, events*recipients, "none lost")
}

func publishRetrying(t *testing.T, p *pipeline, msgID string, body []byte) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		msg := newMsg("orders.created", msgID, body)
		_, err := p.js.PublishMsg(ctx, msg)
		cancel()
		if err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// publishPastWindow publishes msg until the stream takes it: while the
// stream's duplicate window still holds its Nats-Msg-Id, it is acknowledged
// as a duplicate and dropped.
func publishPastWindow(ctx context.Context, p *pipeline, msg *nats.Msg) {
	pollUntil(ctx, func() bool {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		ack, err := p.js.PublishMsg(pctx, msg)
		return err == nil && !ack.Duplicate
	}, time.Hour)
}

// waitDelivered waits until the ledger records every one of keys as
// delivered; false if that does not happen within two minutes (the test
// then reports what is missing).
func waitDelivered(ctx context.Context, l *ledger.Ledger, keys []string) bool {
	return pollUntil(ctx, func() bool {
		for _, key := range keys {
			if e, err := l.Get(ctx, "acme", key); err != nil || e.State != ledger.Delivered {
				return false
			}
		}
		return true
	}, 2*time.Minute)
}

// routedDeliveries keeps the first copy of each delivery the router
// published, by Nats-Msg-Id (its dedupe key).
type routedDeliveries struct {
	mu   sync.Mutex
	msgs map[string]*nats.Msg
}

// captureDeliveries listens to what the router publishes on NOTIFY's
// subjects, as any subscriber may beside the stream.
func captureDeliveries(t *testing.T, nc *nats.Conn) *routedDeliveries {
	r := &routedDeliveries{msgs: map[string]*nats.Msg{}}
	sub, err := nc.Subscribe("notify.email.>", func(m *nats.Msg) {
		id := m.Header.Get(jetstream.MsgIDHeader)
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.msgs[id]; !ok {
			r.msgs[id] = &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}
		}
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush()) // subscribed before anything is routed
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return r
}

func (r *routedDeliveries) get(key string) *nats.Msg {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msgs[key]
}

func assertEventually(t *testing.T, cond func() bool, within time.Duration) bool {
	return pollUntil(t.Context(), cond, within)
}

// pollUntil checks cond every 100 ms until it holds, within passes or ctx
// ends; it reports whether cond held.
func pollUntil(ctx context.Context, cond func() bool, within time.Duration) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			return cond()
		case <-ctx.Done():
			return false
		}
	}
	return true
}
