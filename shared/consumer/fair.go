package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Class is one queue of a Fair loop: the subjects <Prefix>.<key> (a
// channel and priority's deliveries, one subject per tenant), served in
// turn by key, and its share of the workers when every class has work.
type Class struct {
	// Name names the class in logs and metrics, and prefixes its keys'
	// consumers: <Name>_<key>.
	Name string
	// Prefix is the subjects' common part, without the key's token:
	// "notify.email.normal". It may hold wildcard tokens
	// ("docs.render.*": any document type, keyed by tenant); the key is
	// always the last token.
	Prefix string
	// Weight is the class's share of the workers while others have work
	// too. At least 1.
	Weight int
	// Template is what each key's consumer is made from (ack wait, max
	// deliver, max ack pending): the durable declared for the class.
	Template jetstream.ConsumerConfig
}

// FairConfig configures a Fair loop.
type FairConfig struct {
	Config
	// Stream holds the classes' subjects. A work-queue stream must have
	// no other consumer overlapping them.
	Stream  string
	Classes []Class
	// Ready, when set, is asked before a key's messages are pulled: it
	// answers how many may be served now (n > 0), or holds the key back
	// until the time it gives (n = 0: a tenant over its rate). want is
	// how many the pull would take: at most Batch, the room left in
	// memory, and what the key is known to hold (at least 1). A Ready that
	// spends an allowance grants up to want, in one go; an n above want
	// lets the pull take as many as it would without Ready. An allowance
	// granted and not pulled (the key held fewer, or the room went to
	// another key meanwhile) is not given back.
	Ready func(ctx context.Context, class, key string, want int) (n int, until time.Time)
	// Batch is how many of a key's messages one pull may take: the first
	// is handled at once, the others wait in memory — ack wait running —
	// and are handed out one a turn, as if pulled. At most Concurrency
	// wait at a time. A weighted key's pull takes Batch × its weight
	// (fair_weights.go). Defaults to 1; keep it 1, and Weight nil, where
	// handling is slow.
	Batch int
	// Discover is how often the stream is asked which keys have a
	// backlog (new messages wake the loop at once, retried ones when
	// their delay ends). Defaults to 1 s.
	Discover time.Duration
	// Idle is how long a key's consumer outlives its last message: the
	// loop removes it at the first discovery after. Defaults to 30 s.
	Idle time.Duration
	// Window is how many keys of a class have a consumer at once; the
	// others wait for a slot (fair_slots.go). Defaults to 32.
	Window int
	// Quantum is how many messages a key takes in its turn at a slot
	// while others wait for one (a weighted key, Quantum × its weight).
	// Defaults to 256.
	Quantum int
	// Weight, when set, is a key's share of its class while other keys
	// have messages too: a key of weight w is handed w messages for each
	// one of a key of weight 1 (a tenant's plan's weight). A key alone is
	// served everything, whatever its weight. Asked before each of the
	// key's pulls, so it must answer from memory. Nil, or an answer below
	// 1, is 1.
	Weight func(class, key string) int
	// MinConcurrency, when set, bounds the handlers in flight at once by
	// the share of their time they say they wait outside (Waited; see
	// limit.go): MinConcurrency when they wait on nothing — what the
	// cores sustain — and more, up to Concurrency, as much as covers a
	// slow provider. Zero keeps Concurrency in flight whenever there is
	// work.
	MinConcurrency int
}

// Fair consumes several classes of keyed subjects so that no key's
// backlog delays another key's messages: a key with messages gets a
// consumer of its own (at most Window per class at once, the others
// taking turns for a slot: fair_slots.go), and the workers take one
// message at a time from the next key in line — a key that had nothing
// first, then round robin within a class, the classes by weight (smooth
// weighted round robin), so a low class keeps its share under a flood in
// a higher one.
//
// Consumers are per key and cheap: in memory, with the stream's replicas.
// Losing one (a server restart) loses only its delivery state; its
// unacknowledged messages are delivered again, which handlers must bear
// anyway.
type Fair struct {
	cfg    FairConfig
	stream jetstream.Stream
	logger *slog.Logger
	subs   []*nats.Subscription
	wake   chan struct{}
	// turn wakes follow to hand out slots; changes bounds the consumers
	// made or removed at once.
	turn    chan struct{}
	changes chan struct{}
	quit    chan struct{}
	cancel  context.CancelFunc
	workers sync.WaitGroup

	gauges metric.Registration

	mu      sync.Mutex
	classes []*classState
	// buffered counts the messages pulled and waiting in keys' bufs.
	buffered int

	// notes are the keys new messages named, and when, since the last
	// pick (seen).
	notesMu sync.Mutex
	notes   map[foundKey]note
	// wakes are the keys with a message waiting out a retry's delay, and
	// wakeAt when follow's timer is set to wake the first (fair_wake.go);
	// rewake tells follow of a wake due sooner. Under notesMu.
	wakes  map[foundKey]wake
	wakeAt time.Time
	rewake chan struct{}

	// idleWakes counts the workers woken to find no key in line,
	// emptyPulls the pulls that found nothing: work the loop did for no
	// delivery.
	idleWakes, emptyPulls atomic.Int64
	// limit bounds the handlers in flight, when MinConcurrency is set.
	limit *limiter
}

// note is what the core subscription heard of a key since the last pick:
// how many messages, the last when.
type note struct {
	at time.Time
	n  int
}

type foundKey struct {
	class *classState
	key   string
}

type classState struct {
	Class
	// handle settles the class's messages, counted and traced under the
	// class's name: its keys' consumers are one consumer to operators.
	handle  Handler
	current int // smooth weighted round robin
	// vtime is the class's virtual time: the furthest pass of a key served
	// from turns (fair_weights.go); lag is one pull's worth of it, as far
	// as a key coming into line may be behind.
	vtime, lag int64
	keys       map[string]*keyState
	// fresh and turns are the keys to serve, in line. fresh are keys that
	// had nothing and now have work (or are new): a tenant's one order is
	// served, for the messages of its first pull, ahead of the keys with a
	// standing backlog, which take turns in turns (FQ-CoDel's new and old
	// flows). A key with a backlog cannot stay fresh: it must run dry first.
	fresh, turns line
	// held are the keys Ready held back, until their readyAt; heldUntil is
	// the earliest.
	held      []*keyState
	heldUntil time.Time
	// keys have a slot (a consumer); waiting are keys with messages and
	// none, in line for one in waitFresh (new messages named them) or
	// waitTurns (found by a discovery, or their turn ended). changing are
	// keys whose consumers are being made or removed, and whether a
	// message named them meanwhile; freeing counts those being removed:
	// slots about to be free, for the first keys waiting.
	waiting              map[string]*keyState
	waitFresh, waitTurns line
	changing             map[string]bool
	freeing              int
	// backlog and backlogKeys are what the last discovery found: the
	// class's messages in the stream, and how many keys hold them.
	backlog, backlogKeys int64
}

type keyState struct {
	key      string
	consumer jetstream.Consumer
	// buf holds messages pulled with one a worker took, handed out one a
	// turn.
	buf []jetstream.Msg
	// queued: in fresh or turns. fresh: goes in fresh, not turns.
	queued, fresh bool
	// weight is the key's share of its class, as Weight last answered (0:
	// not asked yet, 1); pass is the virtual time of its next message:
	// turns serves the key with the earliest (fair_weights.go).
	weight int
	pass   int64
	// empty: the last pull found nothing, at dryAt; waits for a new
	// message or the next discovery. readyAt: held back until then (Ready
	// said no).
	empty bool
	dryAt time.Time
	// served counts the messages pulled since the key got its slot;
	// leaving: asked to give the slot up, it is served only what it holds.
	// keepUntil: a slot it could not give up is kept until then.
	served  int
	leaving bool
	// run counts the messages pulled since the key last had none.
	run       int
	keepUntil time.Time
	readyAt   time.Time
	busy      int
	// fetching: a worker is pulling from the key; it is out of line
	// meanwhile, rather than others pull an empty answer.
	fetching bool
	// seenAt is when a message was last seen published on the key. The
	// core subscription hears of it as the stream does: a pull right after
	// may find it not yet stored. unpulled counts the messages heard of
	// and not yet pulled: while there are any, a pull waits for them (up
	// to storeLag after the last sighting); once all are, the key's next
	// empty answer is final, and no worker waits on a key that has none.
	seenAt   time.Time
	unpulled int
	// pending is how many more the server held for k's consumer at the
	// last pull (its last message's NumPending): with unpulled, what the
	// key is known to hold, for Ready's want — a backlog found by a
	// discovery is never heard of.
	pending int
	// acked is the ack subject of the last message this loop acknowledged
	// or terminated on k's consumer: answered, an ack sent to it again
	// says the server took in every settlement before it (giveUp).
	acked string
}

// storeLag bounds how long after a message is heard of on the core
// subscription it may take the stream to store it.
const storeLag = 100 * time.Millisecond

// RemoveShared removes the durable that a fair loop's classes replace: a
// deployment serving first come, first served made it, and on a work
// queue it would overlap the keys' consumers. Its unacknowledged messages
// go to them. `herald streams apply` with fair on removes it before the new
// replicas start; this is the safety net for a deployment that did not run
// it (services applying nothing at start, no hook). A durable already gone
// is no error.
func RemoveShared(ctx context.Context, stream jetstream.Stream, durable string, logger *slog.Logger) error {
	err := stream.DeleteConsumer(ctx, durable)
	switch {
	case err == nil:
		logger.InfoContext(ctx, "removed the FIFO consumer: keys are served in turn", "consumer", durable)
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return fmt.Errorf("removing the FIFO consumer %s: %w", durable, err)
	}
	return nil
}

// StartFair begins consuming. Like Start, handlers run detached from
// ctx's cancellation; Stop drains.
func StartFair(ctx context.Context, h Handler, cfg FairConfig) (*Fair, error) {
	f, err := newFair(ctx, h, cfg)
	if err != nil {
		return nil, err
	}
	nc := f.cfg.JetStream.Conn()
	for _, c := range f.classes {
		sub, err := nc.Subscribe(c.Prefix+".*", func(m *nats.Msg) { f.seen(c, m.Subject) })
		if err != nil {
			f.unsubscribe()
			return nil, fmt.Errorf("consumer: watching %s: %w", c.Prefix, err)
		}
		f.subs = append(f.subs, sub)
	}
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel = cancel
	if err := f.discover(hctx); err != nil {
		f.unsubscribe()
		cancel()
		return nil, err
	}
	if f.cfg.MeterProvider != nil {
		if f.gauges, err = f.observe(f.cfg.MeterProvider); err != nil {
			f.logger.WarnContext(ctx, "fair loop gauges not registered", "error", err)
		}
	}
	f.rotate(hctx).Wait() // the keys found have their consumers
	f.workers.Go(func() { f.follow(hctx) })
	for range f.cfg.Concurrency {
		f.workers.Go(func() { f.work(hctx) })
	}
	return f, nil
}

// newFair is a fair loop with its defaults set and its classes' handlers
// made, not yet watching, discovering or serving.
func newFair(ctx context.Context, h Handler, cfg FairConfig) (*Fair, error) {
	if cfg.JetStream == nil {
		return nil, errors.New("consumer: Config.JetStream is required")
	}
	if len(cfg.Classes) == 0 {
		return nil, errors.New("consumer: a fair loop needs a class")
	}
	cfg.Concurrency = max(cfg.Concurrency, 1)
	cfg.Discover = cmp.Or(cfg.Discover, time.Second)
	cfg.Idle = cmp.Or(cfg.Idle, 30*time.Second)
	cfg.Batch = max(cfg.Batch, 1)
	cfg.Window = cmp.Or(cfg.Window, 32)
	cfg.Quantum = cmp.Or(cfg.Quantum, 256)
	stream, err := cfg.JetStream.Stream(ctx, cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("consumer: stream %s: %w", cfg.Stream, err)
	}
	f := &Fair{cfg: cfg, stream: stream, logger: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		wake: make(chan struct{}, 1), turn: make(chan struct{}, 1), quit: make(chan struct{}),
		changes: make(chan struct{}, changing), notes: map[foundKey]note{},
		wakes: map[foundKey]wake{}, rewake: make(chan struct{}, 1)}
	if cfg.MinConcurrency > 0 {
		f.limit = newLimiter(cfg.MinConcurrency, cfg.Concurrency)
	}
	for _, c := range cfg.Classes {
		c.Weight = max(c.Weight, 1)
		handle, err := wrap(cfg.Config, cfg.Stream, c.Name, c.Template.MaxDeliver, c.Template.AckWait, h)
		if err != nil {
			return nil, err
		}
		f.classes = append(f.classes, &classState{Class: c, handle: handle, lag: int64(cfg.Batch) * strideUnit, keys: map[string]*keyState{},
			waiting: map[string]*keyState{}, changing: map[string]bool{}})
	}
	return f, nil
}

// seen is a new message on a class's subject: its key has work. It only
// notes the key (a burst's thousands of sightings cost a map write each,
// never a wait for the workers' lock); the next pick takes the notes in.
func (f *Fair) seen(c *classState, subject string) { f.heard(foundKey{c, lastToken(subject)}, 1) }

// heard notes that fk has n messages coming, as seen does.
func (f *Fair) heard(fk foundKey, n int) {
	f.notesMu.Lock()
	first := len(f.notes) == 0
	f.notes[fk] = note{at: time.Now(), n: f.notes[fk].n + n}
	f.notesMu.Unlock()
	if first { // one worker takes in every note at its pick
		f.signal()
	}
}

// absorb takes in the keys seen since the last pick: a known key has work
// again; an unknown one waits for a slot, fresh.
// f.mu is held; seen takes only notesMu, so the order cannot deadlock.
func (f *Fair) absorb() {
	f.notesMu.Lock()
	defer f.notesMu.Unlock()
	defer clear(f.notes) // a few keys at a time: kept, not made anew each pick
	for fk, n := range f.notes {
		c, key := fk.class, fk.key
		if k, known := c.keys[key]; known {
			k.seenAt, k.unpulled = n.at, k.unpulled+n.n
			c.wakeUp(k)
			continue
		}
		c.waitFor(key, true, n)
		f.signalTurn()
	}
}

func lastToken(subject string) string { return subject[strings.LastIndexByte(subject, '.')+1:] }

func (f *Fair) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// line is a queue of keys.
type line []*keyState

func (l *line) push(k *keyState) { *l = append(*l, k) }

func (l *line) pop() *keyState {
	k := (*l)[0]
	(*l)[0] = nil
	*l = (*l)[1:]
	return k
}

func (l *line) remove(k *keyState) {
	*l = slices.DeleteFunc(*l, func(x *keyState) bool { return x == k })
}

// enqueue puts k in line if it has something to serve and is not in line
// already, being pulled, or held back. f.mu is held.
func (c *classState) enqueue(k *keyState) {
	if k.queued || k.fetching || (k.empty || k.leaving) && len(k.buf) == 0 || !k.readyAt.IsZero() || c.keys[k.key] != k {
		return
	}
	k.queued = true
	c.catchUp(k)
	if k.fresh {
		c.fresh.push(k)
	} else {
		c.turns.push(k)
	}
}

// wakeUp is a new message on k: a key that had run dry is fresh. f.mu is
// held.
func (c *classState) wakeUp(k *keyState) {
	if k.empty && !k.queued {
		k.fresh, k.run = true, 0
	}
	k.empty = false
	c.enqueue(k)
}

// next takes the first key in line, fresh ones first, then the key of
// turns whose pass is earliest (the first in line of those: keys of one
// weight take turns round robin), and moves its pass on by the one
// message it is handed. f.mu is held.
func (c *classState) next() *keyState {
	var k *keyState
	if len(c.fresh) > 0 {
		k = c.fresh.pop()
	} else {
		k = c.turns.take(c.turns.earliest())
		c.vtime = max(c.vtime, k.pass)
	}
	k.queued = false
	k.pass += k.stride()
	return k
}

// unhold puts the keys held back whose time came in line again, and
// returns the earliest of those still held. f.mu is held.
func (c *classState) unhold(now time.Time) time.Time {
	if c.heldUntil.IsZero() || now.Before(c.heldUntil) {
		return c.heldUntil
	}
	c.heldUntil = time.Time{}
	c.held = slices.DeleteFunc(c.held, func(k *keyState) bool {
		if now.Before(k.readyAt) {
			if c.heldUntil.IsZero() || k.readyAt.Before(c.heldUntil) {
				c.heldUntil = k.readyAt
			}
			return false
		}
		k.readyAt = time.Time{}
		c.enqueue(k)
		return true
	})
	return c.heldUntil
}

// work takes the next key's next message, until Stop. Under a limit, a
// worker holds a slot for as long as the limit allows it, idle or not, as
// a pool of that many workers would: a slot handed to another worker at
// every turn was a goroutine woken for nothing at every delivery.
func (f *Fair) work(ctx context.Context) {
	holding := false
	defer func() {
		if holding {
			f.limit.leave()
		}
	}()
	if f.limit != nil {
		if holding = f.limit.acquire(f.quit); !holding {
			return
		}
	}
	woken := false
	for {
		select {
		case <-f.quit:
			return
		default:
		}
		c, k, msg, wait := f.pick()
		if k == nil {
			if woken {
				f.idleWakes.Add(1)
			}
			woken = false
			select {
			case <-f.quit:
				return
			case <-f.wake:
				woken = true
			case <-time.After(wait):
			}
			continue
		}
		woken = false
		// There may be more: the next idle worker looks (and, finding
		// some, wakes the next), rather than every worker at once.
		f.signal()
		took, waited := f.serve(ctx, c, k, msg)
		if f.limit != nil && !f.limit.keep(took, waited) {
			// The limit came down: this worker waits for a slot again.
			if holding = f.limit.acquire(f.quit); !holding {
				return
			}
		}
	}
}

// pick is the next key to serve: the class by smooth weighted round robin
// among those with a key in line, then that class's first key in line,
// with a message already pulled if it has one (the key then goes back in
// line behind the others). With none, wait is how long until a held-back
// key is ready.
func (f *Fair) pick() (*classState, *keyState, jetstream.Msg, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.absorb()
	now := time.Now()
	wait := f.cfg.Discover
	var (
		best  *classState
		total int
	)
	for _, c := range f.classes {
		if until := c.unhold(now); !until.IsZero() {
			wait = min(wait, until.Sub(now))
		}
		if len(c.fresh)+len(c.turns) == 0 {
			continue
		}
		c.current += c.Weight
		total += c.Weight
		if best == nil || c.current > best.current {
			best = c
		}
	}
	if best == nil {
		return nil, nil, nil, wait
	}
	best.current -= total
	k := best.next()
	k.busy++
	if len(k.buf) == 0 {
		k.fetching = true
		return best, k, nil, 0
	}
	msg := k.buf[0]
	k.buf[0] = nil
	k.buf = k.buf[1:]
	f.buffered--
	if len(k.buf) == 0 {
		k.fresh = false
	}
	best.enqueue(k)
	return best, k, msg, 0
}

// serve handles msg, or, with none in hand, pulls k's next messages, if
// Ready allows, and handles the first; took is how long the handler took
// (zero: none ran), waited how much of it the handler said it waited
// outside (Waited).
func (f *Fair) serve(ctx context.Context, c *classState, k *keyState, msg jetstream.Msg) (took, waited time.Duration) {
	var acked string
	defer func() { f.release(c, k, acked) }()
	if msg == nil {
		if msg = f.fetch(ctx, c, k); msg == nil {
			return
		}
	}
	hctx, waits := ctx, (*atomic.Int64)(nil)
	if f.limit != nil {
		hctx, waits = withWaits(ctx)
	}
	start := time.Now()
	o := c.handle(hctx, msg)
	took = max(time.Since(start), time.Nanosecond)
	if waits != nil {
		waited = time.Duration(waits.Load())
	}
	switch o.settle {
	case done, giveUp:
		acked = msg.Reply()
	case retry:
		f.wakeAfter(c, k.key, o.after)
	}
	return took, waited
}

// release is a worker done with k, having settled the message whose ack
// subject is acked (if any). A key asked to leave, run dry or held back
// can give its slot up only now, with nothing in hand: the follower is
// told then. Told before (by the pull), it may find k busy and pass it
// over, and nothing would tell it again until the next discovery.
func (f *Fair) release(c *classState, k *keyState, acked string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k.busy--
	if acked != "" {
		k.acked = acked
	}
	if k.busy == 0 && (k.leaving || len(c.waiting) > 0 && (k.empty || !k.readyAt.IsZero())) {
		f.signalTurn() // its slot can be given up
	}
}

// fetch pulls k's next messages: the first to handle, the others to k's
// buf. k is back in line after, unless it ran dry or was held back.
func (f *Fair) fetch(ctx context.Context, c *classState, k *keyState) jetstream.Msg {
	weight := f.weigh(c, k) // outside f.mu: Weight may take locks of its own
	f.mu.Lock()
	k.weight = weight
	want, waitUntil := f.want(k)
	n := f.batch(k)
	f.mu.Unlock()
	if f.cfg.Ready != nil {
		ready, until := f.cfg.Ready(ctx, c.Name, k.key, want)
		if ready <= 0 {
			f.hold(c, k, until)
			return nil
		}
		n = min(n, ready)
	}
	// At most Concurrency wait in bufs: room for what this pull brings
	// beyond the first is taken before it is made. (Room taken by others
	// while Ready answered makes this pull smaller than its grant: rare,
	// with Concurrency to spare.)
	f.mu.Lock()
	n = max(min(n, f.cfg.Concurrency-f.buffered+1), 1)
	f.buffered += n - 1
	f.mu.Unlock()
	msgs, err := f.pull(k, n, waitUntil)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buffered -= n - 1
	k.fetching = false
	if errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, nats.ErrTimeout) {
		err = nil
	}
	switch {
	case len(msgs) > 0:
		k.unpulled = max(k.unpulled-len(msgs), 0)
		k.pending = numPending(msgs[len(msgs)-1])
		k.served += len(msgs)
		k.run += len(msgs)
		if q := f.quantum(k); k.served >= q && k.served-len(msgs) < q && len(c.waiting) > 0 {
			f.signalTurn() // its turn is over: another key waits for the slot
		}
		k.buf = append(k.buf, msgs[1:]...)
		f.buffered += len(msgs) - 1
		if f.stopping() {
			f.giveBack(k)
		}
		if len(k.buf) == 0 {
			k.fresh = false
		}
		f.drained(k)
		c.enqueue(k) // it may hold more, for the next worker
		if k.queued {
			f.signal()
		}
		return msgs[0]
	case err == nil:
		f.emptyPulls.Add(1)
		k.pending = 0
		if k.unpulled == 0 || time.Since(k.seenAt) >= storeLag {
			k.empty, k.unpulled, k.fresh, k.dryAt = true, 0, false, time.Now()
		} else { // heard of again during the pull: look once more
			c.enqueue(k)
			f.signal()
		}
	default:
		// A consumer the server removed (idle too long), or one that does
		// not answer: made again on the next sighting or discovery.
		f.logger.WarnContext(ctx, "fair pull", "class", c.Name, "key", k.key, "error", err)
		f.drop(c, k)
	}
	return nil
}

// drained has k, whose pull the server answered with none left after it
// and which no sighting since says holds more, run dry with its last
// pull, rather than be pulled once more to hear so: at a trickle that
// empty pull was a round trip per delivery. A message published after
// the pull is heard of and wakes k; one the server hands back later (a
// retry's delay, an ack wait run out) wakes it as a dry pull would have
// left it. f.mu is held.
func (f *Fair) drained(k *keyState) {
	if k.pending > 0 || k.unpulled > 0 {
		return
	}
	k.empty, k.dryAt = true, time.Now() // its worker's release tells the follower
}

// want is how many k's next pull would take, for Ready: at most k's batch and
// the room left in bufs, and no more than k is known to hold (at least
// one), so that an allowance Ready spends is pulled — asking for one at a
// time would cost a Redis round trip, a pull and a turn per message. What
// k is known to hold can be stale (another replica's loop pulls from the
// same consumer): a pull then brings fewer than granted, and the rest of
// the grant is lost. A message heard of a moment ago and not yet pulled
// may not be stored yet: if the pull finds none stored, it waits for one
// until waitUntil (pull). Decided before Ready answers, so that a sighting
// meanwhile does not turn a pull of what was granted into a wait for one.
// f.mu is held.
func (f *Fair) want(k *keyState) (n int, waitUntil time.Time) {
	n = max(min(f.batch(k), f.cfg.Concurrency-f.buffered+1, max(k.unpulled, k.pending)), 1)
	if k.unpulled > 0 && time.Since(k.seenAt) < storeLag-time.Millisecond {
		waitUntil = k.seenAt.Add(storeLag)
	}
	return n, waitUntil
}

// pull asks k's consumer for up to n messages and takes what is stored at
// once. Only if none is, and one heard of may not be stored yet (until
// waitUntil), does it wait — for that one alone, handed over as soon as
// the server stores it: a wait for n would wait for all n. At a trickle a
// key is pulled just after its messages were heard of, and by then they
// are nearly always stored: an order's five deliveries are one pull, where
// waiting for the first one made them two or more, and taking one a pull
// made them five — each pull a Ready call (a Redis round trip, for the
// plan's rate) and a wake, one after the other on the tenant's key.
func (f *Fair) pull(k *keyState, n int, waitUntil time.Time) ([]jetstream.Msg, error) {
	msgs, err := fetched(k.consumer.FetchNoWait(n))
	if len(msgs) > 0 || err != nil {
		return msgs, err
	}
	if wait := time.Until(waitUntil); wait > time.Millisecond {
		return fetched(k.consumer.Fetch(1, jetstream.FetchMaxWait(wait)))
	}
	return nil, nil
}

// fetched is what a pull brought.
func fetched(batch jetstream.MessageBatch, err error) ([]jetstream.Msg, error) {
	if err != nil {
		return nil, err
	}
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	return msgs, batch.Error()
}

// numPending is how many more messages msg's consumer held when it was
// delivered; 0 if its metadata does not say.
func numPending(msg jetstream.Msg) int {
	md, err := msg.Metadata()
	if err != nil {
		return 0
	}
	return int(min(md.NumPending, uint64(math.MaxInt)))
}

// hold keeps k out of line until until.
func (f *Fair) hold(c *classState, k *keyState, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k.fetching = false
	if c.keys[k.key] != k || !k.readyAt.IsZero() {
		return
	}
	k.readyAt = until
	c.hold(k)
	f.signal() // an idle worker's wait may now be shorter
}

// hold keeps k, whose readyAt is set, out of line until then. f.mu is
// held.
func (c *classState) hold(k *keyState) {
	c.held = append(c.held, k)
	if c.heldUntil.IsZero() || k.readyAt.Before(c.heldUntil) {
		c.heldUntil = k.readyAt
	}
}

// drop forgets k, whose consumer is gone. f.mu is held.
func (f *Fair) drop(c *classState, k *keyState) {
	if c.keys[k.key] != k {
		return
	}
	c.vacate(k)
	c.vacated(k.key)
	f.buffered -= len(k.buf)
	k.buf = nil // a gone consumer's messages are delivered again by the next
}

// giveBack hands k's pulled messages back to the stream at once, for the
// next worker of any replica: the loop is stopping. f.mu is held.
func (f *Fair) giveBack(k *keyState) {
	for _, m := range k.buf {
		_ = m.Nak()
	}
	f.buffered -= len(k.buf)
	k.buf = nil
}

func (f *Fair) stopping() bool {
	select {
	case <-f.quit:
		return true
	default:
		return false
	}
}

func (f *Fair) unsubscribe() {
	for _, s := range f.subs {
		_ = s.Unsubscribe()
	}
}

// Stop stops taking messages and waits until every message in hand is
// settled; if ctx ends first, handlers are cancelled and ctx's error is
// returned once they returned.
func (f *Fair) Stop(ctx context.Context) error {
	if f.gauges != nil {
		_ = f.gauges.Unregister()
	}
	f.unsubscribe()
	close(f.quit)
	f.mu.Lock()
	for _, c := range f.classes {
		for _, k := range c.keys {
			f.giveBack(k)
		}
	}
	f.mu.Unlock()
	return awaitWorkers(ctx, &f.workers, f.cancel)
}

// observe registers each class's gauges, as the last discovery found them
// (the consumer label is the class: one series per priority, not per
// tenant):
//
//	herald_consumer_pending{stream,consumer}       the class's messages still in the stream
//	herald_consumer_fair_waiting{stream,consumer}  keys (tenants) holding them
func (f *Fair) observe(mp metric.MeterProvider) (metric.Registration, error) {
	m := mp.Meter("github.com/heraldhq/herald/shared/consumer")
	pending, err1 := m.Int64ObservableGauge("herald.consumer.pending",
		metric.WithDescription("Messages of the consumer's stream not yet delivered to it: its lag."))
	waiting, err2 := m.Int64ObservableGauge("herald.consumer.fair.waiting",
		metric.WithDescription("Keys (tenants) with messages waiting in a fair loop's class, each served in turn."))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.classes {
			attrs := metric.WithAttributes(attribute.String("stream", f.cfg.Stream), attribute.String("consumer", c.Name))
			o.ObserveInt64(pending, c.backlog, attrs)
			o.ObserveInt64(waiting, c.backlogKeys, attrs)
		}
		return nil
	}, pending, waiting)
}
