package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// tenant is the tenant every event of a run is for.
const tenant = "bench"

// workload is the events of one run and when each was published.
type workload struct {
	run        string
	channel    event.Channel
	orders     int
	recipients int
	dupRatio   float64
	// address is where recipient r of order i is reached on channel (the
	// far side's address, set before publishing).
	address   func(i, r int) string
	published []atomic.Int64 // unix nanos, per order
	sent      atomic.Int64
}

func newWorkload(cfg Config) *workload {
	return &workload{run: strconv.FormatUint(rand.Uint64()%1e6, 36), channel: cfg.Channel, orders: cfg.Orders, recipients: cfg.Recipients,
		dupRatio: cfg.DuplicateRatio, published: make([]atomic.Int64, cfg.Orders)}
}

func (w *workload) orderID(i int) string { return fmt.Sprintf("B%s-%07d", w.run, i) }

// event is order i as a publisher sends it.
func (w *workload) event(i int, id string) []byte {
	rs := make([]event.Recipient, w.recipients)
	for r := range rs {
		rs[r] = event.Recipient{Name: fmt.Sprintf("Buyer %d", r), Role: "buyer", Channels: []event.Channel{w.channel}}
		switch addr := w.address(i, r); w.channel {
		case event.ChannelEmail:
			rs[r].Email = addr
		case event.ChannelSMS, event.ChannelWhatsApp:
			rs[r].Phone = addr
		case event.ChannelWebhook:
			rs[r].Webhook = addr
		}
	}
	ev := map[string]any{
		"specversion": "1.0", "id": id, "source": "/bench", "type": "order.created", "tenant": tenant,
		"time": "2026-11-30T09:00:00Z",
		"data": map[string]any{
			"order": map[string]any{
				"id": w.orderID(i), "kind": "purchase", "revision": 1, "currency": "EUR", "locale": "es",
				"buyer": map[string]any{"name": "Frutas del Sur S.L."}, "supplier": map[string]any{"name": "Молочная ферма «Заря»"},
				"lines": []map[string]any{
					{"sku": "MILK-1L", "description": "Leche entera 1 L", "quantity": "120", "unit": "ud", "unit_price": "0.89", "tax_rate": "0.10"},
					{"sku": "KEFIR-05", "description": "Кефир 0,5 л", "quantity": "48", "unit": "ud", "unit_price": "1.25", "tax_rate": "0.10"},
				},
				"totals": map[string]any{"net": "166.80", "tax": "16.68", "gross": "183.48"},
			},
			"recipients": rs,
		},
	}
	b, _ := json.Marshal(ev)
	return b
}

// publishedAt is when order orderID was published.
func (w *workload) publishedAt(orderID string) (time.Time, bool) {
	_, n, ok := strings.Cut(orderID, "-")
	i, err := strconv.Atoi(n)
	if !ok || err != nil || i < 0 || i >= w.orders {
		return time.Time{}, false
	}
	ns := w.published[i].Load()
	return time.Unix(0, ns), ns != 0
}

// publish sends every order, then the duplicates: at once (rate 0) or on an
// open-loop schedule. Each order's publish time is its scheduled time, so
// a publisher falling behind shows as latency instead of hiding it.
func (w *workload) publish(ctx context.Context, js jetstream.JetStream, rate float64) error {
	start := time.Now()
	pub := newPublisher(js)
	send := func(i int, id string) error {
		msg := nats.NewMsg("orders.created")
		msg.Data = w.event(i, id)
		msg.Header.Set(jetstream.MsgIDHeader, id)
		return pub.send(msg)
	}
	var err error
	dups := int(float64(w.orders) * w.dupRatio)
	for i := 0; i < w.orders && err == nil && ctx.Err() == nil; i++ {
		at := start
		if rate > 0 {
			at = start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
			time.Sleep(time.Until(at))
		} else {
			at = time.Now()
		}
		w.published[i].Store(at.UnixNano())
		id := fmt.Sprintf("evt-%s-%d", w.run, i)
		err = send(i, id)
		if err == nil && i < dups/2 {
			err = send(i, id) // again at once: the duplicate window drops it
		}
		w.sent.Add(1)
	}
	for i := dups / 2; i < dups && err == nil && ctx.Err() == nil; i++ {
		err = send(i, fmt.Sprintf("evt-%s-%d-again", w.run, i)) // a new event id: only the ledger stops it
	}
	if perr := pub.wait(); err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("bench: publishing: %w", err)
	}
	return ctx.Err()
}

// publisher publishes asynchronously, up to 4,096 messages awaiting their
// acknowledgement (a send waits for room as long as an acknowledgement
// may take), and remembers the first that failed.
type publisher struct {
	js      jetstream.JetStream
	pending chan jetstream.PubAckFuture
	errs    chan error
}

func newPublisher(js jetstream.JetStream) *publisher {
	p := &publisher{js: js, pending: make(chan jetstream.PubAckFuture, 4096), errs: make(chan error, 1)}
	go func() {
		var first error
		for f := range p.pending {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				if first == nil {
					first = err
				}
			}
		}
		p.errs <- first
	}()
	return p
}

func (p *publisher) send(msg *nats.Msg) error {
	f, err := p.js.PublishMsgAsync(msg, jetstream.WithStallWait(notification.AckTimeout))
	if err != nil {
		return err
	}
	p.pending <- f
	return nil
}

// wait returns once every message sent is acknowledged, with the first
// error; the publisher is spent.
func (p *publisher) wait() error {
	close(p.pending)
	return <-p.errs
}

// wait watches the far side until every notification arrived, or nothing
// more arrives for timeout, then reports.
func (w *workload) wait(ctx context.Context, p *receipts, timeout time.Duration, progress func(Progress)) (Report, error) {
	expected := w.orders * w.recipients
	r := Report{Orders: w.orders, Recipients: w.recipients, Expected: expected}
	if err := awaitReceipts(ctx, p, expected, &w.sent, timeout, progress); err != nil {
		return r, err
	}
	r.Delivered, r.Duplicates = p.counts()
	r.Lost = expected - r.Delivered
	p.mu.Lock()
	h := p.hist
	r.Latency = Latency{
		P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)), P99: ms(h.ValueAtQuantile(99)), Max: ms(h.Max()),
	}
	r.Histogram = hdrhistogram.Import(h.Export())
	p.mu.Unlock()
	return r, nil
}

func ms(us int64) float64 { return float64(us) / 1000 }

// awaitReceipts watches the far side until expected deliveries arrived, or
// nothing more arrives for timeout, then a moment more: anything still
// arriving would be a duplicate.
func awaitReceipts(ctx context.Context, got *receipts, expected int, sent *atomic.Int64, timeout time.Duration, progress func(Progress)) error {
	last, lastChange := -1, time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		delivered, _ := got.counts()
		if progress != nil {
			progress(Progress{Published: int(sent.Load()), Delivered: delivered, Expected: expected})
		}
		if delivered != last {
			last, lastChange = delivered, time.Now()
		}
		if delivered >= expected || time.Since(lastChange) > timeout {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	time.Sleep(500 * time.Millisecond)
	return nil
}
