package consumer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
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

// Messages heard of in small bursts while the loop is ahead of their
// publisher — an order's five deliveries at a trickle — are pulled in a
// pull or two a burst, not one each: a pull takes what is stored, and
// waits for one only when none is.
func TestABurstHeardOfTogetherIsPulledInFewPulls(t *testing.T) {
	t.Parallel()
	n := fairQueue(t, nil)
	a := &allowance{}
	h := &handled{}
	startFair(t, n, h.handle, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}, Batch: 16,
		Config: consumer.Config{Concurrency: 8}, Ready: a.ready})
	const bursts, each = 40, 5
	for b := range bursts {
		for i := range each {
			_, err := n.JS.PublishAsync("q.low.a", []byte(fmt.Sprint(b*each+i)))
			require.NoError(t, err)
		}
		<-n.JS.PublishAsyncComplete()
		h.wait(t, (b+1)*each)
	}
	h.once(t, map[string]int{"q.low.a": bursts * each})
	calls, _ := a.spent()
	t.Logf("%d bursts of %d: %d pulls", bursts, each, calls)
	require.Less(t, calls, bursts*5/2, "what is stored in one pull")
}

// Messages heard of a moment ago and stored by the time their key is
// pulled — every worker was busy — are taken in one pull, not one waited
// for and then the rest.
func TestMessagesStoredBeforeTheirPullAreTakenInOne(t *testing.T) {
	t.Parallel()
	n := fairQueue(t, nil)
	var pulls sync.Map // key → Ready calls
	ready := func(_ context.Context, _, key string, want int) (int, time.Time) {
		c, _ := pulls.LoadOrStore(key, new(atomic.Int64))
		c.(*atomic.Int64).Add(1)
		return want, time.Time{}
	}
	gate := make(chan struct{})
	h := &handled{}
	startFair(t, n, func(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
		if strings.HasPrefix(msg.Subject(), "q.low.busy") {
			<-gate
		}
		return h.handle(ctx, msg)
	}, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}, Batch: 16, Config: consumer.Config{Concurrency: 8}, Ready: ready})
	ctx := heraldtest.Context(t)
	busy := map[string]int{}
	for w := range 8 {
		_, err := n.JS.Publish(ctx, fmt.Sprintf("q.low.busy%d", w), []byte("0"))
		require.NoError(t, err)
		busy[fmt.Sprintf("q.low.busy%d", w)] = 1
	}
	require.Eventually(t, func() bool {
		held := 0
		pulls.Range(func(any, any) bool { held++; return true })
		return held == 8
	}, 10*time.Second, time.Millisecond, "every worker holds a busy key's message")
	for i := range 5 {
		_, err := n.JS.Publish(ctx, "q.low.a", []byte(fmt.Sprint(i)))
		require.NoError(t, err)
	}
	time.Sleep(20 * time.Millisecond) // heard of, stored, and still a moment ago (100 ms)
	close(gate)
	h.wait(t, 13)
	busy["q.low.a"] = 5
	h.once(t, busy)
	c, _ := pulls.Load("a")
	require.EqualValues(t, 1, c.(*atomic.Int64).Load(), "a's five in one pull")
}

// queueing is a handler whose sends share one resource, as sends to a
// provider that answers at once share the cores: each takes 100 µs per
// send in flight, at least 1 ms. With wait set, it spends that long more
// waiting on a provider, and says so (consumer.Waited). It notes the most
// in flight at once.
type queueing struct {
	wait           time.Duration
	inflight, peak atomic.Int64
	handled        handled
}

func (q *queueing) handle(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	n := q.inflight.Add(1)
	defer q.inflight.Add(-1)
	for p := q.peak.Load(); n > p && !q.peak.CompareAndSwap(p, n); p = q.peak.Load() {
	}
	time.Sleep(max(time.Millisecond, time.Duration(n)*100*time.Microsecond))
	if q.wait > 0 {
		time.Sleep(q.wait)
		consumer.Waited(ctx, q.wait)
	}
	return q.handled.handle(ctx, msg)
}

// With MinConcurrency set, a backlog whose sends wait on nothing outside
// — they only queue on each other — is handled MinConcurrency at a time,
// not by every one of the 64 workers; sends that wait on a provider ten
// times as long as their own work have more in flight.
func TestSendsThatQueueOnEachOtherAreNotAllInFlight(t *testing.T) {
	t.Parallel()
	counts := map[string]int{"q.low.a": 1500, "q.low.b": 1500}
	n := fairQueue(t, counts)
	q := &queueing{}
	startFair(t, n, q.handle, consumer.FairConfig{Config: consumer.Config{Concurrency: 64}, MinConcurrency: 4,
		Batch: 16, Classes: []consumer.Class{class("low", 1)}})
	q.handled.wait(t, 3000)
	q.handled.once(t, counts)
	require.LessOrEqual(t, q.peak.Load(), int64(4), "sends in flight at once")
}

func TestSendsThatWaitOnTheProviderAreManyInFlight(t *testing.T) {
	t.Parallel()
	counts := map[string]int{"q.low.a": 600, "q.low.b": 600}
	n := fairQueue(t, counts)
	q := &queueing{wait: 20 * time.Millisecond}
	startFair(t, n, q.handle, consumer.FairConfig{Config: consumer.Config{Concurrency: 64}, MinConcurrency: 4,
		Batch: 16, Classes: []consumer.Class{class("low", 1)}})
	q.handled.wait(t, 1200)
	q.handled.once(t, counts)
	require.Greater(t, q.peak.Load(), int64(16), "more than the least in flight while sends wait on the provider")
}
