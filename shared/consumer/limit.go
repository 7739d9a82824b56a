package consumer

import (
	"slices"
	"sync"
	"time"
)

// A fair loop's workers cover a provider's latency: Concurrency of them
// keep that many sends in flight, which a provider answering in 200 ms
// needs. With one answering at once they queue on the cores instead —
// 192 sends in flight on two cores made each wait for the others, and a
// small tenant's one delivery waited behind the lot. limiter keeps the
// sends in flight near what the cores sustain and grows only while more
// in flight does not make each slower: a gradient limit.
//
// It learns in windows of at least one limit's worth of handlings (16 at
// the fewest). At each window's end it compares the window's mean
// handling time with the best (lowest) mean of the last probeEvery
// windows — the baseline — and sets
//
//	limit = limit × gradient + limit/4,  gradient = 1.25 × baseline / mean ∈ [½, 1]
//
// so that the limit grows by a quarter while handling takes what it took
// with fewer in flight (a provider's latency: the sends wait on the
// network), and shrinks when it takes longer (they wait on each other).
// Every probeEvery windows one runs at half the limit, so that the
// baseline is what fewer in flight take now, not what they took before a
// change: a provider that answered slowly and now answers at once, whose
// sends now queue, is found out — and if half as many went clearly
// faster (by more than tolerance), the limit stays at half. A window that never had half the limit
// in flight (the work, not the limit, set how many ran) does not grow it.
type limiter struct {
	mu       sync.Mutex
	limit    float64
	min, max int
	inflight int
	// room tells a waiting worker that one may start.
	room chan struct{}

	// The window: handlings, their total time, and the most in flight.
	n    int
	sum  time.Duration
	peak int
	// means are the last windows' mean handling times; windows counts
	// them, for the probes.
	means   []time.Duration
	windows int
	probing bool
}

const (
	// probeEvery is how many windows run between probes, and how many
	// windows' means the baseline is the best of.
	probeEvery = 16
	// minWindow is the fewest handlings a window averages.
	minWindow = 16
	// tolerance is how much slower than the baseline a window may be
	// before the limit shrinks: noise (a collection, another process on
	// the cores) is not taken for sends queueing, which a probe at half
	// the limit shows as twice as slow.
	tolerance = 1.25
)

// newLimiter starts at least, the limit it never goes under; most is the
// limit it never goes over.
func newLimiter(least, most int) *limiter {
	least = max(min(least, most), 1)
	return &limiter{limit: float64(least), min: least, max: most, room: make(chan struct{}, 1)}
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
	if l.inflight >= l.current() {
		return false
	}
	l.inflight++
	l.peak = max(l.peak, l.inflight)
	if l.inflight < l.current() {
		l.signal()
	}
	return true
}

// release ends one, which took took (zero: it handled nothing, and is
// not a sample).
func (l *limiter) release(took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	if took > 0 {
		l.sample(took)
	}
	if l.inflight < l.current() {
		l.signal()
	}
}

func (l *limiter) signal() {
	select {
	case l.room <- struct{}{}:
	default:
	}
}

// current is how many may be in flight now: the limit, halved during a
// probe. l.mu is held.
func (l *limiter) current() int {
	if l.probing {
		return max(int(l.limit)/2, l.min)
	}
	return int(l.limit)
}

// sample adds a handling's time to the window, and ends the window once
// it holds enough. l.mu is held.
func (l *limiter) sample(took time.Duration) {
	l.n++
	l.sum += took
	if l.n < max(l.current(), minWindow) {
		return
	}
	mean, ran := l.sum/time.Duration(l.n), l.current()
	limited := l.peak < ran/2
	probed := l.probing
	l.n, l.sum, l.peak = 0, 0, l.inflight
	l.means = append(l.means, mean)
	if len(l.means) > probeEvery {
		l.means = slices.Delete(l.means, 0, 1)
	}
	l.windows++
	l.probing = l.windows%probeEvery == 0
	if probed {
		// Half as many in flight went clearly faster: they were
		// queueing on each other, and half is the limit now.
		if before := l.means[max(len(l.means)-2, 0)]; tolerance*float64(mean) < float64(before) {
			l.limit = float64(ran)
		}
		return // otherwise the probe is only a baseline
	}
	gradient := min(max(tolerance*float64(slices.Min(l.means))/float64(mean), 0.5), 1)
	next := l.limit*gradient + l.limit/4
	if limited {
		next = min(next, l.limit)
	}
	l.limit = min(max(next, float64(l.min)), float64(l.max))
}

// Limit is how many may be in flight at once now.
func (l *limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.current()
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
