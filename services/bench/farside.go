package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/provider"
)

// The far side of a run is what the delivery workers hand notifications
// to: an in-process provider (email, sms) or loopback HTTP endpoints
// (webhook). Whatever the channel, it behaves as the knobs say (faults)
// and counts what it accepted the same way (receipts).

// faults is the far side's behaviour: how long a call takes, and the share
// of calls that fail transiently.
type faults struct {
	latency time.Duration
	rate    float64
	n       atomic.Int64 // calls failed
}

// call waits the latency, then says whether this call fails; a call cut
// short by ctx returns its error.
func (f *faults) call(ctx context.Context) (fail bool, err error) {
	if f.latency > 0 {
		t := time.NewTimer(f.latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	if f.rate > 0 && rand.Float64() < f.rate {
		f.n.Add(1)
		return true, nil
	}
	return false, nil
}

// receipts counts what the far side accepted, by notification id, and
// records each notification's end-to-end latency when it is first
// accepted: in all, and per tenant.
type receipts struct {
	sched    schedule
	mu       sync.Mutex
	accepted map[string]int // notification id → acceptances
	hist     *hdrhistogram.Histogram
	tenants  map[string]*tally
	order    []string // tenants, in the order of first acceptances
	last     time.Time
	seq      atomic.Int64
}

// schedule says when the order a notification belongs to was published.
type schedule interface {
	publishedAt(orderID string) (time.Time, bool)
}

// tally is one tenant's acceptances.
type tally struct {
	delivered, duplicates int
	hist                  *hdrhistogram.Histogram
	first, last           time.Time
}

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)
}

func newReceipts(s schedule) *receipts {
	return &receipts{sched: s, accepted: map[string]int{}, hist: newHistogram(), tenants: map[string]*tally{}}
}

// accept counts notification id, which belongs to order orderID of
// tenant, as accepted now, and returns a message id for its receipt.
func (r *receipts) accept(id, tenant, orderID string) string {
	now := time.Now()
	r.mu.Lock()
	t := r.tenants[tenant]
	if t == nil {
		t = &tally{hist: newHistogram(), first: now}
		r.tenants[tenant] = t
	}
	r.accepted[id]++
	if r.accepted[id] == 1 {
		t.delivered++
		r.order = append(r.order, tenant)
		if published, ok := r.sched.publishedAt(orderID); ok {
			_ = r.hist.RecordValue(now.Sub(published).Microseconds())
			_ = t.hist.RecordValue(now.Sub(published).Microseconds())
		}
	} else {
		t.duplicates++
	}
	r.last, t.last = now, now
	r.mu.Unlock()
	return "bench-" + strconv.FormatInt(r.seq.Add(1), 10)
}

func (r *receipts) counts() (delivered, duplicates int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.accepted {
		delivered++
		duplicates += n - 1
	}
	return delivered, duplicates
}

// tenant is a copy of tenant's tally (zero before its first acceptance).
func (r *receipts) tenant(tenant string) tally {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tenants[tenant]
	if t == nil {
		return tally{hist: newHistogram()}
	}
	c := *t
	c.hist = hdrhistogram.Import(t.hist.Export())
	return c
}

// leftAfter is how many of tenant's acceptances came after other's last
// one; 0 if other has none.
func (r *receipts) leftAfter(tenant, other string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i := len(r.order) - 1; i >= 0 && r.order[i] != other; i-- {
		if r.order[i] == tenant {
			n++
		}
	}
	if !slices.Contains(r.order, other) {
		return 0
	}
	return n
}

func (r *receipts) lastAccept() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// orderOf is the tenant and order id in a dedupe key
// (tenant:order:revision:…).
func orderOf(dedupeKey string) (tenant, order string) {
	parts := strings.SplitN(dedupeKey, ":", 3)
	if len(parts) < 2 {
		return "", ""
	}
	return parts[0], parts[1]
}

// fakeProvider is the in-process provider of the email and sms channels:
// it accepts after the latency, or fails transiently as often as the
// fault rate says.
type fakeProvider struct {
	faults   *faults
	receipts *receipts
}

func (p fakeProvider) send(ctx context.Context, id, dedupeKey string) (provider.Receipt, error) {
	fail, err := p.faults.call(ctx)
	if err != nil {
		return provider.Receipt{}, err
	}
	if fail {
		return provider.Receipt{}, &provider.TransientError{Err: errors.New("bench: injected fault")}
	}
	tenant, order := orderOf(dedupeKey)
	return provider.Receipt{MessageID: p.receipts.accept(id, tenant, order)}, nil
}

// emailProvider is the fake as an email.Provider.
type emailProvider struct{ fakeProvider }

func (p emailProvider) Send(ctx context.Context, m email.Message) (provider.Receipt, error) {
	return p.send(ctx, m.ID, m.DedupeKey)
}

// smsProvider is the fake as an sms.Provider.
type smsProvider struct{ fakeProvider }

func (p smsProvider) Send(ctx context.Context, m sms.Message) (provider.Receipt, error) {
	return p.send(ctx, m.ID, m.DedupeKey)
}

// farSide is one channel's far side, as the run wires it.
type farSide struct {
	// channel is the real adapter the delivery workers send through, and
	// platform its providers' names.
	channel  delivery.Channel
	platform []string
	// address is where recipient r of order i is reached on the channel.
	address func(i, r int) string
	// badSignatures counts requests refused as not signed by Herald
	// (webhook only).
	badSignatures func() int
	close         func()
}

// startFarSide builds the far side of cfg.Channel.
func (e *env) startFarSide(ctx context.Context, cfg Config, f *faults, r *receipts) (*farSide, error) {
	fake := fakeProvider{faults: f, receipts: r}
	none := func() int { return 0 }
	switch cfg.Channel {
	case event.ChannelEmail:
		ch, err := email.NewChannel(email.ChannelConfig{From: "Bench <bench@herald.invalid>", Providers: []email.Named{{Name: "bench", Provider: emailProvider{fake}}}})
		if err != nil {
			return nil, err
		}
		return &farSide{channel: ch, platform: []string{"bench"}, badSignatures: none, close: func() {},
			address: func(i, r int) string { return fmt.Sprintf("buyer%d@customer%d.example", r, i%97) }}, nil
	case event.ChannelSMS:
		ch, err := sms.NewChannel(sms.ChannelConfig{Channel: event.ChannelSMS, Providers: []sms.Named{{Name: "bench", Provider: smsProvider{fake}}}})
		if err != nil {
			return nil, err
		}
		return &farSide{channel: ch, platform: []string{"bench"}, badSignatures: none, close: func() {},
			address: func(i, r int) string { return fmt.Sprintf("+3460%03d%04d", i%97, r) }}, nil
	case event.ChannelWebhook:
		return e.startWebhooks(ctx, cfg, f, r)
	}
	return nil, fmt.Errorf("bench: channel %q is not one of email, sms, webhook", cfg.Channel)
}
