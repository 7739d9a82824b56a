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
	// waits counts the yields that found an event being routed.
	waits int
}

func newGate(patience time.Duration) *gate {
	idle := make(chan struct{})
	close(idle)
	return &gate{idle: idle, patience: patience}
}

// enter holds the gate while an event is routed; leave releases it.
func (g *gate) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy == 0 {
		g.idle = make(chan struct{})
	}
	g.busy++
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy--
	if g.busy == 0 {
		close(g.idle)
	}
}

// yield waits until no event is being routed, for the gate's patience at
// most, or until ctx ends.
func (g *gate) yield(ctx context.Context) {
	g.mu.Lock()
	idle := g.idle
	if g.busy > 0 {
		g.waits++
	}
	g.mu.Unlock()
	select {
	case <-idle:
		return
	default:
	}
	t := time.NewTimer(g.patience)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	case <-ctx.Done():
	}
}
