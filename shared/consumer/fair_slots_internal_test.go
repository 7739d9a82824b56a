package consumer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
)

// slotLoop is a fair loop of one class, "low" (q.low.<key>), built but not
// started: the test plays its workers and its follower, one step at a
// time, so that the steps interleave exactly as the test says.
type slotLoop struct {
	*Fair
	t   *testing.T
	ctx context.Context
	n   *heraldtest.NATS
	c   *classState
}

func newSlotLoop(t *testing.T, cfg FairConfig) *slotLoop {
	t.Helper()
	n := heraldtest.StartNATS(t)
	ctx := heraldtest.Context(t)
	_, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "Q", Subjects: []string{"q.*.*"}, Retention: jetstream.WorkQueuePolicy})
	require.NoError(t, err)
	cfg.JetStream, cfg.Stream, cfg.Discover = n.JS, "Q", time.Hour
	cfg.Classes = []Class{{Name: "low", Prefix: "q.low",
		Template: jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second}}}
	f, err := newFair(ctx, func(context.Context, jetstream.Msg) Outcome { return Done() }, cfg)
	require.NoError(t, err)
	return &slotLoop{Fair: f, t: t, ctx: ctx, n: n, c: f.classes[0]}
}

// publish stores n messages on key's subject, and has the loop discover
// them, as its follower does every Discover.
func (l *slotLoop) publish(key string, n int) {
	l.t.Helper()
	for i := range n {
		_, err := l.n.JS.Publish(l.ctx, "q.low."+key, fmt.Appendf(nil, "%d", i))
		require.NoError(l.t, err)
	}
	require.NoError(l.t, l.discover(l.ctx))
}

// follow does what the follower does on each turn signalled, until none
// is: rotate the slots and wait for the consumers made and removed.
func (l *slotLoop) follow() {
	for {
		select {
		case <-l.turn:
			l.rotate(l.ctx).Wait()
		default:
			return
		}
	}
}

// turned takes in the turn signalled to the follower, which there must be.
func (l *slotLoop) turned() {
	l.t.Helper()
	select {
	case <-l.turn:
	default:
		l.t.Fatal("no turn signalled")
	}
}

// serve is a worker's round: the next key's next message, handled; it
// returns the key, or "" with none in line.
func (l *slotLoop) serve() string {
	c, k, msg, _ := l.pick()
	if k == nil {
		return ""
	}
	l.Fair.serve(l.ctx, c, k, msg)
	return k.key
}

// A key that ran dry, or that Ready holds back, while another waits for
// its slot, gives the slot up once its worker is done with it — not at
// the next discovery (here an hour away). The follower may rotate the
// slots between the pull that found nothing (or Ready's no) and the
// worker's end: it passes the busy key over, so the worker, once done,
// must tell it.
func TestASlotIsGivenUpOnceTheWorkerOfAKeyThatStoppedIsDone(t *testing.T) {
	t.Parallel()
	for _, held := range []bool{false, true} {
		t.Run(map[bool]string{false: "ran dry", true: "held back"}[held], func(t *testing.T) {
			t.Parallel()
			var hold bool // written and read by this test's goroutine only
			l := newSlotLoop(t, FairConfig{Window: 1, Quantum: 100,
				Ready: func(_ context.Context, _, key string, want int) (int, time.Time) {
					if hold && key == "a" {
						return 0, time.Now().Add(time.Hour)
					}
					return want, time.Time{}
				}})
			l.publish("a", 3)
			l.rotate(l.ctx).Wait()
			require.Equal(t, "a", l.serve())
			require.Equal(t, "a", l.serve())
			l.publish("b", 1)
			hold = held

			_, k, msg, _ := l.pick()
			require.Equal(t, "a", k.key)
			require.Nil(t, msg)
			acked := ""
			if last := l.fetch(l.ctx, l.c, k); held {
				require.Nil(t, last)
			} else {
				// a's last: the pull that takes it hears that a holds
				// no more, and a runs dry with it. Its worker settles it.
				require.NotNil(t, last)
				require.NoError(t, last.DoubleAck(l.ctx))
				acked = last.Reply()
			}
			// The follower's turn comes while the worker holds a, and
			// takes in the turns signalled so far.
			select {
			case <-l.turn:
			default:
			}
			l.rotate(l.ctx).Wait()
			l.release(l.c, k, acked)
			l.follow() // the turns signalled since

			require.Equal(t, "b", l.serve(), "b has a's slot")
		})
	}
}

// A slot being given up goes to the key waiting for it: another slot
// holder whose turn ends meanwhile stops, as its turn is over, but keeps
// its slot. Given up too, it was given up for nobody — a consumer removed
// and made again — and went to the key that left first, which could then
// start a second turn before the waiting key's consumer was made: the
// waiting key waited behind hundreds of deliveries. The first giveUp is
// held in flight (the loop's changes are all taken) while the second
// holder's turn ends.
func TestASlotBeingGivenUpIsNotAskedOfASecondKey(t *testing.T) {
	t.Parallel()
	l := newSlotLoop(t, FairConfig{Window: 2, Quantum: 2})
	l.publish("a", 4)
	l.publish("b", 4)
	l.rotate(l.ctx).Wait()
	l.publish("c", 4)
	first, second := l.serve(), l.serve()
	require.ElementsMatch(t, []string{"a", "b"}, []string{first, second})
	require.Equal(t, first, l.serve()) // first's turn is over: c waits

	for range cap(l.changes) {
		l.changes <- struct{}{}
	}
	l.turned()
	givingFirst := l.rotate(l.ctx) // first's slot is being given up, for c
	require.Equal(t, second, l.serve())
	l.turned()
	askingSecond := l.rotate(l.ctx) // second's turn is over too

	require.Empty(t, l.serve(), "second stops: c waits")
	require.Contains(t, l.c.keys, second, "second keeps its slot: first's goes to c")
	for range cap(l.changes) {
		<-l.changes
	}
	givingFirst.Wait()
	askingSecond.Wait()
	l.follow()
	require.Equal(t, "c", l.serve(), "c first")
	// Second's turn was over: its slot went to first, waiting. (Which
	// of c and first is served next is the weights' to say: first has
	// had its deliveries, c not yet.)
	require.Contains(t, l.c.keys, first, "first has second's slot")
}

// While a key granted a slot has no consumer yet, no other slot is given
// up: the key it went to would have its consumer first, if made sooner,
// and be served first — a second turn for the key that left, before the
// key granted the slot had its first (a consumer can take tens of
// milliseconds to make on a loaded server). The grant is held in flight
// (the loop's changes are all taken) while another holder's turn ends.
func TestNoSlotIsGivenUpWhileAKeyGrantedOneHasNoConsumer(t *testing.T) {
	t.Parallel()
	l := newSlotLoop(t, FairConfig{Window: 2, Quantum: 2})
	l.publish("a", 4)
	l.publish("b", 4)
	l.rotate(l.ctx).Wait()
	l.publish("c", 4)
	first, second := l.serve(), l.serve()
	require.Equal(t, first, l.serve()) // first's turn is over: c waits
	l.turned()
	l.rotate(l.ctx).Wait() // first's slot is given up; first waits behind c

	for range cap(l.changes) {
		l.changes <- struct{}{}
	}
	l.turned()
	grantingC := l.rotate(l.ctx) // c is granted first's slot
	require.Equal(t, second, l.serve())
	l.turned()
	askingSecond := l.rotate(l.ctx) // second's turn is over: first waits

	require.Contains(t, l.c.keys, second, "second keeps its slot until c has its consumer")
	for range cap(l.changes) {
		<-l.changes
	}
	grantingC.Wait()
	askingSecond.Wait()
	l.follow()
	require.Equal(t, "c", l.serve())
	require.Contains(t, l.c.keys, first, "first has second's slot")
}
