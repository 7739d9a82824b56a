package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// fairQueue is a work-queue stream of keyed subjects q.<class>.<key>,
// with n messages published on each subject counts names.
func fairQueue(t *testing.T, counts map[string]int) *heraldtest.NATS {
	t.Helper()
	n := heraldtest.StartNATS(t)
	ctx := heraldtest.Context(t)
	_, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "Q", Subjects: []string{"q.*.*"}, Retention: jetstream.WorkQueuePolicy})
	require.NoError(t, err)
	for _, subject := range slices.Sorted(maps.Keys(counts)) {
		for i := range counts[subject] {
			_, err := n.JS.PublishAsync(subject, []byte(fmt.Sprint(i)))
			require.NoError(t, err)
		}
	}
	select {
	case <-n.JS.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("publishing")
	}
	return n
}

// handled records the subjects a fair loop handled, in order, and how
// often each message (subject and payload) was handled.
type handled struct {
	mu       sync.Mutex
	subjects []string
	times    map[string]int
}

func (h *handled) handle(_ context.Context, msg jetstream.Msg) consumer.Outcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subjects = append(h.subjects, msg.Subject())
	if h.times == nil {
		h.times = map[string]int{}
	}
	h.times[msg.Subject()+" "+string(msg.Data())]++
	return consumer.Done()
}

// once requires that each message fairQueue published for counts was
// handled exactly once: with as many handled as published, a message
// handled twice means another was not handled at all.
func (h *handled) once(t *testing.T, counts map[string]int) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for subject, n := range counts {
		for i := range n {
			require.Equal(t, 1, h.times[fmt.Sprintf("%s %d", subject, i)], "%s's message %d, once", subject, i)
		}
	}
}

func (h *handled) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.subjects)
}

func (h *handled) wait(t *testing.T, n int) []string {
	t.Helper()
	return h.waitUpTo(t, n, 30*time.Second)
}

// waitUpTo waits for n handled messages, failing after limit.
func (h *handled) waitUpTo(t *testing.T, n int, limit time.Duration) []string {
	t.Helper()
	require.Eventually(t, func() bool { return len(h.list()) >= n }, limit, 5*time.Millisecond)
	return h.list()
}

func class(name string, weight int) consumer.Class {
	return consumer.Class{Name: name, Prefix: "q." + name, Weight: weight,
		Template: jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: 100}}
}

func startFair(t *testing.T, n *heraldtest.NATS, h consumer.Handler, cfg consumer.FairConfig) {
	t.Helper()
	cfg.JetStream, cfg.Stream = n.JS, "Q"
	f, err := consumer.StartFair(heraldtest.Context(t), h, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, f.Stop(ctx))
	})
}

// A backlog of 500 of key a's does not delay key b's five: served in turn,
// b's are done among the first ten or so, and a's all follow — whether a pull
// takes one message or several, which wait their turn.
func TestAKeysBacklogDoesNotDelayAnothersMessages(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 4} {
		t.Run(fmt.Sprintf("batch %d", batch), func(t *testing.T) {
			t.Parallel()
			counts := map[string]int{"q.low.a": 500, "q.low.b": 5}
			n := fairQueue(t, counts)
			h := &handled{}
			startFair(t, n, h.handle, consumer.FairConfig{Batch: batch, Classes: []consumer.Class{class("low", 1)}})
			got := h.wait(t, 505)
			h.once(t, counts)
			last := -1
			for i, s := range got {
				if s == "q.low.b" {
					last = i
				}
			}
			require.Less(t, last, 10+batch, "b's messages were served in turn with a's: %v", got[:16])
		})
	}
}

// A key that had nothing and now has a message is served ahead of the
// keys with a standing backlog, not behind their turns: a tenant's one
// order beside fifty tenants' bursts.
func TestAKeyThatRanDryIsServedAheadOfStandingBacklogs(t *testing.T) {
	t.Parallel()
	counts := map[string]int{"q.low.b": 1} // b's first: served, and b runs dry
	for i := range 50 {
		counts[fmt.Sprintf("q.low.k%d", i)] = 20
	}
	n := fairQueue(t, counts)
	h := &handled{}
	startFair(t, n, h.handle, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}, Window: 100})
	require.Eventually(t, func() bool { return slices.Contains(h.list(), "q.low.b") }, 30*time.Second, time.Millisecond)
	// A turn of the fifty later, b was pulled again and found nothing.
	before := len(h.wait(t, slices.Index(h.list(), "q.low.b")+60))
	require.Less(t, before, 900, "the others still have a backlog")
	_, err := n.JS.Publish(heraldtest.Context(t), "q.low.b", []byte("b"))
	require.NoError(t, err)
	got := h.wait(t, 1002)
	at := slices.Index(got[before:], "q.low.b")
	require.GreaterOrEqual(t, at, 0)
	require.Less(t, at, 25, "b was served within a few messages of its publish, not after the 50 keys' turn")
}

// Stopping hands the messages pulled but not yet handled back at once: the
// next loop serves them without waiting out their ack wait.
func TestStopHandsBackPulledMessages(t *testing.T) {
	t.Parallel()
	n := fairQueue(t, map[string]int{"q.low.a": 20})
	ctx := heraldtest.Context(t)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	first, err := consumer.StartFair(ctx, func(context.Context, jetstream.Msg) consumer.Outcome {
		once.Do(func() { close(started) })
		<-release
		return consumer.Done()
	}, consumer.FairConfig{Stream: "Q", Batch: 8, Config: consumer.Config{JetStream: n.JS},
		Classes: []consumer.Class{class("low", 1)}})
	require.NoError(t, err)
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- first.Stop(ctx) }()
	time.Sleep(50 * time.Millisecond)
	close(release)
	require.NoError(t, <-stopped)

	h := &handled{}
	startFair(t, n, h.handle, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}})
	require.Eventually(t, func() bool {
		info, err := n.JS.Stream(ctx, "Q")
		return err == nil && info.CachedInfo().State.Msgs == 0
	}, 5*time.Second, 10*time.Millisecond, "the rest were served at once (ack wait is 30 s)")
}

// Under a flood in both, a class of weight 3 gets three messages for each
// one of a class of weight 1: the low class keeps its share.
func TestClassesShareTheWorkersByWeight(t *testing.T) {
	t.Parallel()
	n := fairQueue(t, map[string]int{"q.critical.a": 200, "q.low.a": 200})
	h := &handled{}
	startFair(t, n, h.handle, consumer.FairConfig{Classes: []consumer.Class{class("critical", 3), class("low", 1)}})
	got := h.wait(t, 400)[:40]
	low := 0
	for _, s := range got {
		if strings.HasPrefix(s, "q.low.") {
			low++
		}
	}
	require.Equal(t, 10, low, "a quarter of the first 40: %v", got)
}

// A key held back by Ready is not served while another is, however often
// the loop comes back to it; a message on a key never seen before is
// served at once, without waiting for the next discovery.
func TestReadyHoldsAKeyBackAndNewKeysAreServedAtOnce(t *testing.T) {
	t.Parallel()
	n := fairQueue(t, map[string]int{"q.low.a": 3})
	h := &handled{}
	var (
		mu      sync.Mutex
		open    bool
		refused int
	)
	startFair(t, n, h.handle, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}, Discover: time.Hour,
		Ready: func(_ context.Context, _, key string, _ int) (int, time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if key != "a" || open {
				return 1, time.Time{}
			}
			refused++
			return 0, time.Now().Add(20 * time.Millisecond)
		}})
	_, err := n.JS.Publish(heraldtest.Context(t), "q.low.b", []byte("b"))
	require.NoError(t, err)
	require.Equal(t, []string{"q.low.b"}, h.wait(t, 1), "b is served; a is held back")
	mu.Lock()
	since := refused
	mu.Unlock()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return refused >= since+3 }, 10*time.Second,
		5*time.Millisecond, "the loop comes back to a when its hold ends")
	require.Equal(t, []string{"q.low.b"}, h.list(), "refused three more times, a is still not served")
	mu.Lock()
	open = true
	mu.Unlock()
	require.Equal(t, []string{"q.low.b", "q.low.a", "q.low.a", "q.low.a"}, h.wait(t, 4))
}

// allowance is a Ready that spends an allowance as a rate limiter would:
// it grants what the loop wants, and counts the calls and the grants.
type allowance struct {
	mu             sync.Mutex
	calls, granted int
}

func (a *allowance) ready(_ context.Context, _, _ string, want int) (int, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	a.granted += want
	return want, time.Time{}
}

func (a *allowance) spent() (calls, granted int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls, a.granted
}

// A key that Ready grants an allowance to is asked once a pull, for as
// many as the pull takes: a backlog of 500 found by a discovery and 500
// more heard of while the workers were busy cost a few dozen Ready calls,
// not one per message; each message is handled once, and all but a few of
// what was granted is pulled.
func TestReadyIsAskedOncePerPullForWhatThePullTakes(t *testing.T) {
	t.Parallel()
	counts := map[string]int{"q.low.a": 500}
	n := fairQueue(t, counts)
	a := &allowance{}
	h := &handled{}
	gate := make(chan struct{})
	startFair(t, n, func(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
		<-gate
		return h.handle(ctx, msg)
	}, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}, Batch: 16, Config: consumer.Config{Concurrency: 16}, Ready: a.ready})
	// Messages heard of are pulled as they come while the loop is ahead of
	// their publisher — one a pull, which no batching can help. These come
	// while every worker waits at the gate; it opens once the loop has had
	// time to hear of them and for them to be stored (its 100 ms): a
	// sighting later than that costs a pull of one, within the bound.
	for i := range 500 {
		_, err := n.JS.PublishAsync("q.low.a", []byte(fmt.Sprint(500+i)))
		require.NoError(t, err)
	}
	<-n.JS.PublishAsyncComplete()
	time.Sleep(300 * time.Millisecond)
	close(gate)
	h.wait(t, 1000)
	h.once(t, map[string]int{"q.low.a": 1000})
	calls, granted := a.spent()
	t.Logf("1000 messages: %d Ready calls, %d granted", calls, granted)
	// 1000/16 pulls when each takes a batch; one a message would be 1,000.
	require.Less(t, calls, 150, "a pull's worth a call, not one a message")
	require.GreaterOrEqual(t, granted, 1000)
	require.Less(t, granted-1000, calls/4+16, "what is granted is pulled, but for a few misses")
}

// The loop's gauges say, per class, how many messages wait and for how
// many keys.
func TestFairGaugesShowTheBacklogByClass(t *testing.T) {
	t.Parallel()
	n := fairQueue(t, map[string]int{"q.low.a": 3, "q.low.b": 2})
	reader := sdkmetric.NewManualReader()
	// Messages handled but left unacknowledged stay in the work queue.
	h := func(context.Context, jetstream.Msg) consumer.Outcome { return consumer.Leave() }
	startFair(t, n, h, consumer.FairConfig{Config: consumer.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))},
		Classes: []consumer.Class{class("low", 1)}})
	gauge := func(name string) int64 {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == name {
					for _, dp := range g.DataPoints {
						if v, _ := dp.Attributes.Value("consumer"); v.AsString() == "low" {
							return dp.Value
						}
					}
				}
			}
		}
		return -1
	}
	require.Equal(t, int64(5), gauge("herald.consumer.pending"), "a's three and b's two")
	require.Equal(t, int64(2), gauge("herald.consumer.fair.waiting"), "a and b")
}

// A burst from 1,200 keys at once — more than a server's default of 1,000
// consumers a stream, which the stream's max_consumers raises — is served
// whole: each key heard of is made a consumer once, however many of its
// messages are heard, several at a time.
func TestAThousandKeysHeardAtOnceAreAllServed(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATS(t)
	ctx := heraldtest.Context(t)
	_, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "Q", Subjects: []string{"q.*.*"},
		Retention: jetstream.WorkQueuePolicy, MaxConsumers: 2000})
	require.NoError(t, err)
	h := &handled{}
	startFair(t, n, h.handle, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}})
	const keys, each = 1200, 2
	for i := range each * keys {
		_, err := n.JS.PublishAsync(fmt.Sprintf("q.low.k%d", i%keys), []byte(fmt.Sprint(i)))
		require.NoError(t, err)
	}
	<-n.JS.PublishAsyncComplete()
	// 1,200 consumers made and removed in turn through 32 slots, by one
	// worker: about 30 s under -race on two cores, longer when they are
	// shared. What is checked is that every key is served, not how fast.
	got := h.waitUpTo(t, each*keys, 3*time.Minute)
	require.Len(t, got, each*keys)
	per := map[string]int{}
	for _, s := range got {
		per[s]++
	}
	require.Len(t, per, keys)
	for s, c := range per {
		require.Equal(t, each, c, s)
	}
}

// A key's consumer is removed once the key has had nothing for Idle —
// every consumer of a work queue is asked about each acknowledgement —
// and made again when the key has a message again.
func TestAnIdleKeysConsumerIsRemovedAndMadeAgain(t *testing.T) {
	t.Parallel()
	n := fairQueue(t, map[string]int{"q.low.a": 1})
	ctx := heraldtest.Context(t)
	h := &handled{}
	startFair(t, n, h.handle, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)},
		Discover: 20 * time.Millisecond, Idle: 100 * time.Millisecond})
	h.wait(t, 1)
	consumers := func() int {
		info, err := n.JS.Stream(ctx, "Q")
		require.NoError(t, err)
		return info.CachedInfo().State.Consumers
	}
	require.Eventually(t, func() bool { return consumers() == 0 }, 5*time.Second, 10*time.Millisecond)
	_, err := n.JS.Publish(ctx, "q.low.a", []byte("again"))
	require.NoError(t, err)
	require.Equal(t, []string{"q.low.a", "q.low.a"}, h.wait(t, 2))
}

// With a window of two slots, three keys' backlogs take turns for them —
// the stream never holds more than two of their consumers — and the third
// is served long before the first two are done.
func TestKeysTakeTurnsForTheWindowsSlots(t *testing.T) {
	t.Parallel()
	counts := map[string]int{"q.low.a": 300, "q.low.b": 300, "q.low.c": 300}
	n := fairQueue(t, counts)
	ctx := heraldtest.Context(t)
	h := &handled{}
	startFair(t, n, h.handle, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}, Window: 2, Quantum: 50})
	most := 0
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if info, err := n.JS.Stream(ctx, "Q"); err == nil {
				most = max(most, info.CachedInfo().State.Consumers)
			}
		}
	}()
	got := h.wait(t, 900)
	close(stop)
	<-sampled
	require.LessOrEqual(t, most, 2, "consumers at once")
	h.once(t, counts)
	// Turns of 50: the key left waiting has its first once the other two
	// took 50 each (101st or so), not after their backlogs.
	for _, key := range []string{"q.low.a", "q.low.b", "q.low.c"} {
		require.True(t, slices.Contains(got[:150], key), "%s had no turn in the first 150", key)
	}
}

// A key that had nothing is given a slot ahead of the keys with standing
// backlogs that wait for one, and without waiting for a turn to end: a
// slot holder gives its slot up as soon as its message in hand is settled.
// The backlogs' handlers take 2 ms, so that the few round trips that move a
// slot cost a message or two, however fast the machine.
func TestAFreshKeyIsGivenASlotAheadOfStandingBacklogs(t *testing.T) {
	t.Parallel()
	n := fairQueue(t, map[string]int{"q.low.a": 100, "q.low.b": 100, "q.low.c": 100})
	h := &handled{}
	slow := func(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
		time.Sleep(2 * time.Millisecond)
		return h.handle(ctx, msg)
	}
	// Turns longer than the backlogs: only the fresh key can make a
	// slot holder give way.
	startFair(t, n, slow, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}, Window: 2, Quantum: 1000})
	before := len(h.wait(t, 20))
	_, err := n.JS.Publish(heraldtest.Context(t), "q.low.d", []byte("d"))
	require.NoError(t, err)
	got := h.wait(t, 301)
	at := slices.Index(got[before:], "q.low.d")
	require.GreaterOrEqual(t, at, 0)
	require.Less(t, at, 50, "d waited for a slot, not for the others' backlogs (c waited too)")
}

// A key whose message waits out a retry's delay keeps its consumer, even
// with a fresh key waiting for its slot: removing it would deliver the
// message again at once, its delivery count lost.
func TestAKeyWithARetryPendingKeepsItsSlot(t *testing.T) {
	t.Parallel()
	n := fairQueue(t, map[string]int{"q.low.a": 1})
	ctx := heraldtest.Context(t)
	var (
		mu         sync.Mutex
		deliveries []uint64
		others     int
	)
	h := func(_ context.Context, msg jetstream.Msg) consumer.Outcome {
		mu.Lock()
		defer mu.Unlock()
		if msg.Subject() != "q.low.a" {
			others++
			return consumer.Done()
		}
		md, err := msg.Metadata()
		require.NoError(t, err)
		deliveries = append(deliveries, md.NumDelivered)
		if len(deliveries) > 1 {
			return consumer.Done()
		}
		// b's messages arrive while a's waits out its delay: b is fresh,
		// and a, with a standing backlog, is asked for its slot.
		for i := range 20 {
			_, err := n.JS.Publish(ctx, "q.low.b", []byte(fmt.Sprint(i)))
			require.NoError(t, err)
		}
		return consumer.Retry(errors.New("later"), 300*time.Millisecond, 300*time.Millisecond)
	}
	startFair(t, n, h, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}, Window: 1, Discover: 20 * time.Millisecond})
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(deliveries) >= 2 && others == 20
	}, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []uint64{1, 2}, deliveries, "redelivered by the same consumer, after the delay")
}

// A key gives its slot up right after acknowledging its last message of
// a turn, and the slot is free at once: the server may not yet have taken
// in that acknowledgement when asked whether a message is unsettled, and
// a slot kept on that answer would wait out a discovery (here an hour).
// Sixty turns of ten keys through one slot make that race certain to show.
func TestASlotGivenUpRightAfterAnAckIsFreeAtOnce(t *testing.T) {
	t.Parallel()
	counts := map[string]int{}
	for i := range 10 {
		counts[fmt.Sprintf("q.low.k%d", i)] = 30
	}
	n := fairQueue(t, counts)
	h := &handled{}
	startFair(t, n, h.handle, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)},
		Window: 1, Quantum: 5, Discover: time.Hour})
	h.wait(t, 300)
	h.once(t, counts)
}

// A retried message is served again soon after its delay ends, not at the
// next discovery (here a minute away): the loop wakes its key itself. Each
// of two keys' three messages is naked once, the i-th with a delay of
// 50 ms << 2i (jittered: 25–50 ms, 100–200 ms, 400–800 ms), so that the
// key's one wake must come back for the last of them, long after the
// first. The deadline is far above the delays and far below the discovery.
func TestARetriedMessageIsServedAfterItsDelayNotAtTheNextDiscovery(t *testing.T) {
	t.Parallel()
	counts := map[string]int{"q.low.a": 3, "q.low.b": 3}
	n := fairQueue(t, counts)
	h := &handled{}
	retry := func(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
		md, err := msg.Metadata()
		require.NoError(t, err)
		if md.NumDelivered > 1 {
			return h.handle(ctx, msg)
		}
		i, err := strconv.Atoi(string(msg.Data()))
		require.NoError(t, err)
		delay := 50 * time.Millisecond << (2 * i)
		return consumer.Retry(errors.New("later"), delay, delay)
	}
	startFair(t, n, retry, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}, Discover: time.Minute})
	require.Eventually(t, func() bool { return len(h.list()) == 6 }, 10*time.Second, 5*time.Millisecond,
		"each message was served again after its delay")
	h.once(t, counts)
}

// weights is a FairConfig.Weight from a table: keys left out weigh 1.
func weights(w map[string]int) func(class, key string) int {
	return func(_, key string) int { return w[key] }
}

// share counts key's messages among got.
func share(got []string, subject string) int {
	n := 0
	for _, s := range got {
		if s == subject {
			n++
		}
	}
	return n
}

// Two keys with backlogs, weights 4 and 1: of the first 500 messages
// handled, while both still have hundreds left, a is handed about four for
// each of b's — whether a pull takes one message or a batch, with one
// worker or several. A key is out of line while it is pulled, and others
// are served meanwhile: it makes that up after, and a weighted key's pull
// is longer (else, a pull at a time, it would get one message a round trip
// like the other). The bounds, 3:1 to 5:1, allow for the few handled
// out of order when several workers finish at once.
func TestAKeysWeightSetsItsShareOfTheClass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ batch, workers int }{{1, 1}, {1, 4}, {16, 4}} {
		t.Run(fmt.Sprintf("batch %d, %d workers", tc.batch, tc.workers), func(t *testing.T) {
			t.Parallel()
			counts := map[string]int{"q.low.a": 1000, "q.low.b": 1000}
			n := fairQueue(t, counts)
			h := &handled{}
			// Several workers compete for the keys when the handling, not
			// the pulls, takes the time, as a send does.
			slow := func(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
				time.Sleep(3 * time.Millisecond)
				return h.handle(ctx, msg)
			}
			if tc.workers == 1 {
				slow = h.handle
			}
			startFair(t, n, slow, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}, Batch: tc.batch,
				Config: consumer.Config{Concurrency: tc.workers}, Weight: weights(map[string]int{"a": 4})})
			got := h.wait(t, 500)[:500]
			a, b := share(got, "q.low.a"), share(got, "q.low.b")
			t.Logf("batch %d, %d workers: of the first 500: a %d, b %d", tc.batch, tc.workers, a, b)
			require.GreaterOrEqual(t, a, 3*b, "a's share, at least 3:1")
			require.LessOrEqual(t, a, 5*b, "a's share, at most 5:1: b is served too")
		})
	}
}

// A key's weight is a share of what others leave, not a cap: a weight-4
// key alone is served everything. Nor is it a bank: its 300 alone moved the
// class's time on, and a weight-1 key that comes then is not owed those
// 300 — of the next 100, the weight-4 key has its four fifths, not the
// fifth left once the newcomer had made up for the time it was away.
func TestAKeyAloneIsServedEverythingAndOwedNothingAfter(t *testing.T) {
	t.Parallel()
	counts := map[string]int{"q.low.a": 300}
	n := fairQueue(t, counts)
	h := &handled{}
	gate := make(chan struct{})
	startFair(t, n, func(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
		if msg.Subject() == "q.low.a" && string(msg.Data()) == "299" {
			<-gate // the one worker waits while b's and a's next are published
		}
		return h.handle(ctx, msg)
	}, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}, Batch: 4, Weight: weights(map[string]int{"a": 4})})
	require.Eventually(t, func() bool { return len(h.list()) == 299 }, 30*time.Second, 5*time.Millisecond)
	for i := range 200 {
		for _, subject := range []string{"q.low.b", "q.low.a"} {
			_, err := n.JS.PublishAsync(subject, []byte(fmt.Sprint(300+i)))
			require.NoError(t, err)
		}
	}
	<-n.JS.PublishAsyncComplete()
	close(gate)
	got := h.wait(t, 700)
	require.Equal(t, 300, share(got[:300], "q.low.a"), "a alone is served everything")
	a := share(got[300:400], "q.low.a")
	t.Logf("of the 100 after: a %d", a)
	require.GreaterOrEqual(t, a, 60, "b came after a's 300 and is owed none of them")
}

// With more keys than slots, a weighted key's turn at a slot is Quantum ×
// its weight: with one slot and turns of 25, a (weight 4) takes 100 in its
// turn, b and c 25 each, so a has more than half of the first 300 — turns
// of 25 for a too would give it a third.
func TestAWeightedKeysTurnAtASlotIsLonger(t *testing.T) {
	t.Parallel()
	counts := map[string]int{"q.low.a": 400, "q.low.b": 400, "q.low.c": 400}
	n := fairQueue(t, counts)
	h := &handled{}
	startFair(t, n, h.handle, consumer.FairConfig{Classes: []consumer.Class{class("low", 1)}, Window: 1, Quantum: 25,
		Weight: weights(map[string]int{"a": 4})})
	got := h.wait(t, 1200)[:300]
	h.once(t, counts)
	a := share(got, "q.low.a")
	t.Logf("of the first 300: a %d, b %d, c %d", a, share(got, "q.low.b"), share(got, "q.low.c"))
	require.Greater(t, a, 150, "a's turns are four times as long")
}
