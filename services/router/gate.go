package router

import (
	"context"
	"sync"
	"time"
)

// fanoutWindow is how many of a page's deliveries are published at once:
// the fan-out asks the gate before each such part, so an event routed
// meanwhile waits behind at most this many stores, not a page's 1,000.
// Waiting for each part's acks costs the fan-out little at this size; 64
// left the neighbour's p99 higher, 8 no lower (docs/BENCHMARKS.md).
const fanoutWindow = 16

// fanoutPatience is how long a fan-out waits for the events being routed
// before it publishes its next part anyway: a router kept busy by events
// without pause still fans out, a window per fanoutPatience at least.
const fanoutPatience = 100 * time.Millisecond

// fanoutShare is the share of the time a fan-out works while the router
// routes other events (one within fanoutRecent): it rests in between. The
// gate alone cannot keep the CPU free for them: an event is published,
// stored and pulled before the router knows of it, and on two cores a
// fan-out that never rests leaves those steps to the operating system's
// time slices, milliseconds each. 0.5 left another tenant's p99 at about
// 2× its own alone, 0.4 at 1.8×, 0.33 at 1.6× (docs/BENCHMARKS.md).
const fanoutShare = 0.4

// fanoutRecent is how long after another event the fan-out keeps to its
// share; a pause of the fan-out's longer than this is not work.
const fanoutRecent = time.Second

// minRest is the shortest rest worth a timer: a shorter one is carried
// over to the next.
const minRest = time.Millisecond

// gate lets the events being routed go ahead of the fan-out's pages. On
// two cores the fan-out and the server storing its deliveries take all
// the CPU there is; an event routed beside them waits for it at every
// step (its pull, its publishes, their acks), ten times as long as alone.
// So each event holds the gate while it is routed, and the fan-out waits
// for the gate to be free before it plans a page or publishes a part of
// one.
type gate struct {
	mu   sync.Mutex
	busy int
	// idle is closed while no event is being routed.
	idle chan struct{}
	// patience bounds a yield (fanoutPatience).
	patience time.Duration
	// waits counts the yields that found an event being routed, rests
	// those that rested.
	waits, rests int
	// share and recent are fanoutShare and fanoutRecent.
	share  float64
	recent time.Duration
	// routed is when an event was last routed (one that started no
	// fan-out of its own); resumed is when the fan-out last went on, and
	// worked how long it has worked since it last rested.
	routed, resumed time.Time
	worked          time.Duration
}

func newGate(patience time.Duration) *gate {
	idle := make(chan struct{})
	close(idle)
	return &gate{idle: idle, patience: patience, share: fanoutShare, recent: fanoutRecent}
}

// enter holds the gate while an event is routed; leave releases it,
// saying whether the event started a fan-out (which is then no other
// event the fan-out should rest for).
func (g *gate) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy == 0 {
		g.idle = make(chan struct{})
	}
	g.busy++
}

func (g *gate) leave(fansOut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy--
	if g.busy == 0 {
		close(g.idle)
	}
	if !fansOut {
		g.routed = time.Now()
	}
}

// yield waits until no event is being routed, for the gate's patience at
// most, or until ctx ends; then, while other events flow, rests as long
// as keeps the fan-out to its share of the time.
func (g *gate) yield(ctx context.Context) {
	g.mu.Lock()
	idle := g.idle
	if g.busy > 0 {
		g.waits++
	}
	rest := g.rest(time.Now())
	g.mu.Unlock()
	select {
	case <-idle:
	default:
		sleep(ctx, g.patience, idle)
	}
	sleep(ctx, rest, nil)
	g.mu.Lock()
	g.resumed = time.Now()
	g.mu.Unlock()
}

// rest is how long the fan-out, asking at now, rests; g.mu is held.
func (g *gate) rest(now time.Time) time.Duration {
	if worked := now.Sub(g.resumed); worked < g.recent {
		g.worked += worked
	}
	if g.busy == 0 && now.Sub(g.routed) >= g.recent {
		g.worked = 0
		return 0
	}
	rest := time.Duration(float64(g.worked) * (1 - g.share) / g.share)
	if rest < minRest {
		return 0
	}
	g.worked = 0
	g.rests++
	return rest
}

// sleep waits d, or until done is closed or ctx ends.
func sleep(ctx context.Context, d time.Duration, done <-chan struct{}) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}
