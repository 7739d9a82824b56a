package consumer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A fair loop's workers cover a provider's latency: Concurrency of them
// keep that many sends in flight, which a provider answering in 200 ms
// needs. With one answering at once they queue on the cores instead —
// 192 sends in flight on two cores made each wait for the others, and a
// small tenant's one delivery waited behind the lot (beside a 50,000
// burst its p99 was 2.6–4.8× its p99 alone; with 36 in flight, 1.9–2.2×).
// limiter keeps least in flight for the cores, and adds what covers the
// time handlers spend waiting outside — what they report with Waited, a
// provider's answer:
//
//	limit = least × (1 + 2 × waited / worked)
//
// over the last window of handlings (at least one limit's worth, 16 at
// the fewest), worked being the rest of their time: a provider that
// answers at once leaves least, one that takes ten times a send's own
// work 21 × least — twice what keeps the cores busy meanwhile — up to
// most. The waits are the handler's to tell, because from outside a
// send slowed by the provider and one slowed by the sends beside it look
// alike: more in flight helps the first and hurts the second. A worker
// holds its slot from one handling to the next (keep) and gives it up
// only when the limit comes below the slots held: a slot handed over at
// every handling woke a waiting worker for nothing each time, and cost a
// third of a burst's throughput.
type limiter struct {
	mu       sync.Mutex
	limit    int
	min, max int
	inflight int
	// room tells a waiting worker that one may start.
	room chan struct{}

	// The window: handlings, their time and the part spent waiting.
	n            int
	took, waited time.Duration
}

// minWindow is the fewest handlings a window sums.
const minWindow = 16

// newLimiter starts at least, the limit it never goes under; most is the
// limit it never goes over.
func newLimiter(least, most int) *limiter {
	least = max(min(least, most), 1)
	return &limiter{limit: least, min: least, max: most, room: make(chan struct{}, 1)}
}

// acquire waits until one more may start, or quit closes (false).
func (l *limiter) acquire(quit <-chan struct{}) bool {
	for !l.tryAcquire() {
		select {
		case <-quit:
			return false
		case <-l.room:
		}
	}
	return true
}

// tryAcquire starts one if the limit allows, and passes the room on to
// the next waiting worker if more may start still.
func (l *limiter) tryAcquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight >= l.limit {
		return false
	}
	l.inflight++
	if l.inflight < l.limit {
		l.signal()
	}
	return true
}

// keep samples a handling that took took, waited of it outside, and
// says whether its worker keeps its slot: false, the slot given up, when
// the limit came down below the slots held.
func (l *limiter) keep(took, waited time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if took > 0 {
		l.sample(took, min(waited, took))
	}
	if l.inflight > l.limit {
		l.inflight--
		return false
	}
	return true
}

// leave gives a slot back.
func (l *limiter) leave() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	if l.inflight < l.limit {
		l.signal()
	}
}

func (l *limiter) signal() {
	select {
	case l.room <- struct{}{}:
	default:
	}
}

// sample adds a handling to the window, and sets the limit once the
// window holds enough. l.mu is held.
func (l *limiter) sample(took, waited time.Duration) {
	l.n++
	l.took += took
	l.waited += waited
	if l.n < max(l.limit, minWindow) {
		return
	}
	worked := max(l.took-l.waited, time.Microsecond)
	target := float64(l.min) * (1 + 2*float64(l.waited)/float64(worked))
	l.limit = int(min(max(target, float64(l.min)), float64(l.max)))
	l.n, l.took, l.waited = 0, 0, 0
	if l.inflight < l.limit {
		l.signal() // room for a waiting worker
	}
}

// waitedKey finds a handling's waits in its context.
type waitedKey struct{}

// Waited tells the fair loop handling ctx's message that its handler
// spent d waiting outside — on a provider's answer — rather than working
// or queueing on the cores: the loop's limit on handlers in flight grows
// with that share (limiter). Outside a fair loop with a limit it does
// nothing.
func Waited(ctx context.Context, d time.Duration) {
	if w, ok := ctx.Value(waitedKey{}).(*atomic.Int64); ok {
		w.Add(int64(d))
	}
}

// withWaits gives a handling's context a sum of the waits its handler
// tells.
func withWaits(ctx context.Context) (context.Context, *atomic.Int64) {
	w := new(atomic.Int64)
	return context.WithValue(ctx, waitedKey{}, w), w
}

// Limit is how many may be in flight at once now.
func (l *limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// FairWork is what a fair loop did for no delivery since it started, and
// how many handlers its limit lets run at once now.
type FairWork struct {
	// IdleWakes are workers woken to find no key in line.
	IdleWakes int64
	// EmptyPulls are pulls that found nothing.
	EmptyPulls int64
	// Limit is the handlers in flight the limit allows now; 0 without
	// MinConcurrency (Concurrency, whenever there is work).
	Limit int
}

// Work is what f did for no delivery, and its limit now.
func (f *Fair) Work() FairWork {
	w := FairWork{IdleWakes: f.idleWakes.Load(), EmptyPulls: f.emptyPulls.Load()}
	if f.limit != nil {
		w.Limit = f.limit.Limit()
	}
	return w
}
