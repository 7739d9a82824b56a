package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// At a trickle — one message at a time, each handled before the next is
// published — no key is pulled again only to find it has none: a key
// that had just handed over its last message went back in line for an
// empty pull, a round trip per delivery.
func TestATricklePullsNothingInVain(t *testing.T) {
	t.Parallel()
	n := fairQueue(t, nil)
	h := &handled{}
	f, err := consumer.StartFair(heraldtest.Context(t), h.handle, consumer.FairConfig{
		Config: consumer.Config{JetStream: n.JS, Concurrency: 8}, Stream: "Q", Classes: []consumer.Class{class("low", 1)}})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, f.Stop(ctx))
	})
	const trickle = 100
	ctx := heraldtest.Context(t)
	for i := range trickle {
		_, err := n.JS.Publish(ctx, "q.low.a", []byte(fmt.Sprint(i)))
		require.NoError(t, err)
		h.wait(t, i+1)
	}
	h.once(t, map[string]int{"q.low.a": trickle})
	w := f.Work()
	require.LessOrEqual(t, w.EmptyPulls, int64(trickle/10), "pulls that found nothing")
}

// queueing is a handler whose sends share one resource, as sends to a
// provider that answers at once share the cores: each takes 100 µs per
// send in flight, at least 1 ms. It notes the most in flight at once.
type queueing struct {
	inflight, peak atomic.Int64
	handled        handled
}

func (q *queueing) handle(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	n := q.inflight.Add(1)
	defer q.inflight.Add(-1)
	for p := q.peak.Load(); n > p && !q.peak.CompareAndSwap(p, n); p = q.peak.Load() {
	}
	time.Sleep(max(time.Millisecond, time.Duration(n)*100*time.Microsecond))
	return q.handled.handle(ctx, msg)
}

// With MinConcurrency set, a backlog whose sends only wait on each other
// is not handled by every worker at once: the limit stays near the ten
// in flight the shared resource sustains, under the 64 workers. (Quiet,
// the peak stays under 48; under -race on two busy cores the handlers'
// measured latency is mostly the machine's, and it reached 57 — so the
// bound is the workers, which every peak reaches without the limit.)
func TestSendsThatQueueOnEachOtherAreNotAllInFlight(t *testing.T) {
	t.Parallel()
	counts := map[string]int{"q.low.a": 1500, "q.low.b": 1500}
	n := fairQueue(t, counts)
	q := &queueing{}
	startFair(t, n, q.handle, consumer.FairConfig{Config: consumer.Config{Concurrency: 64}, MinConcurrency: 4,
		Batch: 16, Classes: []consumer.Class{class("low", 1)}})
	q.handled.wait(t, 3000)
	q.handled.once(t, counts)
	require.Less(t, q.peak.Load(), int64(64), "sends in flight at once")
}
