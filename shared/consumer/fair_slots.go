package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// A class's keys hold at most Window consumers at once. nats-server asks
// every consumer of a stream about each acknowledgement, under the
// stream's lock, so a thousand tenants' consumers halve what the stream
// serves; with the window, the thousand take turns for the slots instead.
// A key with messages and no slot waits: fresh ones (a message named a key
// that had none), the one with the fewest messages first, ahead of those
// found by a discovery or whose turn ended. A slot is given up by a
// key held back by Ready or that ran dry (after a moment, if it took no
// more than a pull's worth: a trickle), and — while others wait — by
// one that has taken Quantum messages in its turn, or, when a fresh key
// waits, by one with a standing backlog (no longer fresh itself) that has
// taken a pull's worth, once its messages in hand are settled. Slots are
// given up one per key waiting: a key whose turn ends while the slots
// already being given up will serve those waiting stops, and keeps its
// slot; and no key whose turn is over gives its slot up while a key
// granted one has no consumer yet (the next key would be served first). A consumer is
// only removed with nothing delivered and unsettled: a message waiting out
// a retry's delay would otherwise be delivered again at once, its count
// toward MaxDeliver lost.

// orphaned is how long the server keeps a key's consumer that nobody
// pulls: the loop removes its own; this removes those of a loop that is
// gone.
const orphaned = 10 * time.Minute

// changing bounds the consumers a fair loop makes or removes at once: a
// burst from many new keys comes online in a fraction of a second, with
// the server's API still answering others.
const changing = 16

// waitFor puts key, which has messages and no consumer, in line for a
// slot; heard is what new messages said of it. f.mu is held.
func (c *classState) waitFor(key string, fresh bool, heard note) {
	if c.keys[key] != nil {
		return
	}
	if _, ok := c.changing[key]; ok {
		c.changing[key] = c.changing[key] || heard.n > 0
		return
	}
	k := c.waiting[key]
	if k == nil {
		k = &keyState{key: key}
		c.wait(k, fresh)
	}
	if heard.n > 0 {
		k.seenAt, k.unpulled = heard.at, k.unpulled+heard.n
	}
}

// wait puts k in line for a slot. f.mu is held.
func (c *classState) wait(k *keyState, fresh bool) {
	k.fresh = fresh
	c.waiting[k.key] = k
	if fresh {
		c.waitFresh.push(k)
	} else {
		c.waitTurns.push(k)
	}
}

// nextWaiting takes the next key waiting for a slot whose time has come:
// of the fresh ones, the first of those with the fewest messages heard of
// (one tenant's order before a thousand tenants' bursts, all new); then
// the others in turn. f.mu is held.
func (c *classState) nextWaiting(now time.Time) *keyState {
	take := func(l *line, i int) *keyState {
		k := (*l)[i]
		*l = slices.Delete(*l, i, i+1)
		delete(c.waiting, k.key)
		return k
	}
	best := -1
	for i, k := range c.waitFresh {
		if !now.Before(k.readyAt) && (best < 0 || k.unpulled < c.waitFresh[best].unpulled) {
			best = i
		}
	}
	if best >= 0 {
		return take(&c.waitFresh, best)
	}
	if i := slices.IndexFunc(c.waitTurns, func(k *keyState) bool { return !now.Before(k.readyAt) }); i >= 0 {
		return take(&c.waitTurns, i)
	}
	return nil
}

// waitingNow counts the keys waiting for a slot whose time has come, and
// how many of them are fresh. f.mu is held.
func (c *classState) waitingNow(now time.Time) (all, fresh int) {
	ready := func(k *keyState) bool { return !now.Before(k.readyAt) }
	for _, k := range c.waitFresh {
		if ready(k) {
			fresh++
		}
	}
	all = fresh
	for _, k := range c.waitTurns {
		if ready(k) {
			all++
		}
	}
	return all, fresh
}

// follow gives keys their slots and takes them back, asks the stream
// which keys have a backlog every Discover, and wakes the keys whose
// retried messages come back (fair_wake.go).
func (f *Fair) follow(ctx context.Context) {
	t := time.NewTicker(f.cfg.Discover)
	defer t.Stop()
	wake := time.NewTimer(time.Hour)
	wake.Stop()
	defer wake.Stop()
	for {
		select {
		case <-f.quit:
			return
		case <-f.rewake:
			f.setWake(wake)
			continue
		case <-wake.C:
			f.setWake(wake)
			continue
		case <-f.turn:
		case <-t.C:
			if err := f.discover(ctx); err != nil {
				f.logger.WarnContext(ctx, "fair loop: backlog not read", "stream", f.cfg.Stream, "error", err)
			}
		}
		f.rotate(ctx)
	}
}

func (f *Fair) signalTurn() {
	select {
	case f.turn <- struct{}{}:
	default:
	}
}

// rotate gives free slots to the keys waiting, fresh ones first, and, for
// those still waiting, asks keys to give theirs up.
func (f *Fair) rotate(ctx context.Context) *sync.WaitGroup {
	type change struct {
		c *classState
		k *keyState
	}
	var grants, gives []change
	f.mu.Lock()
	now := time.Now()
	for _, c := range f.classes {
		for room := f.cfg.Window - len(c.keys) - len(c.changing); room > 0; room-- {
			k := c.nextWaiting(now)
			if k == nil {
				break
			}
			c.changing[k.key] = false
			grants = append(grants, change{c, k})
		}
		// Keys whose turn is over stop for those waiting, but a slot is
		// given up only for those that the slots being given up already
		// will not serve: a key that stopped for one of them keeps its
		// slot, and serves on if nobody waits once they are taken.
		// And, with no fresh key waiting, no key whose turn is over gives
		// its slot up while a key granted one has no consumer yet: the
		// next key would be served before it. (Fresh keys are served
		// ahead anyway, and a key with nothing to serve gives its slot up
		// at once: a burst of new keys, each a message or two, is not
		// made to take its slots in waves.)
		waiting, fresh := c.waitingNow(now)
		unserved := waiting - c.freeing
		granting := len(c.changing) > c.freeing && fresh <= 0
		for _, k := range c.keys {
			quiet := k.busy == 0 && !k.fetching && len(k.buf) == 0
			switch {
			case k.leaving && waiting <= 0: // nobody waits anymore: serve on
				k.leaving = false
				c.enqueue(k)
				continue
			case waiting <= 0:
				continue
			case k.leaving:
			case now.Before(k.keepUntil):
				continue
			case quiet && !k.readyAt.IsZero():
			case quiet && k.empty && (k.run > f.cfg.Batch || now.Sub(k.dryAt) >= f.cfg.Discover):
				// A key that ran dry after a pull's worth or less keeps its
				// slot a moment: likely a trickle (one tenant's orders),
				// which would otherwise wait for a slot at each message.
			case k.served >= f.quantum(k) || fresh > 0 && !k.fresh && k.served >= f.cfg.Batch:
				k.leaving = true
				if k.queued && len(k.buf) == 0 {
					c.fresh.remove(k)
					c.turns.remove(k)
					k.queued = false
				}
			default:
				continue
			}
			waiting-- // a slot will be free, for a fresh key first
			fresh--
			if quiet && unserved > 0 && !(k.leaving && granting) {
				unserved--
				c.vacate(k)
				gives = append(gives, change{c, k})
			}
		}
	}
	f.mu.Unlock()
	var done sync.WaitGroup
	for _, g := range grants {
		f.change(&done, func() { f.grant(ctx, g.c, g.k) })
	}
	for _, g := range gives {
		f.change(&done, func() { f.giveUp(ctx, g.c, g.k) })
	}
	return &done
}

// change makes or removes a consumer (fn) in the background, up to
// changing at once, and tells done, if any, when it is over.
func (f *Fair) change(done *sync.WaitGroup, fn func()) {
	if done != nil {
		done.Add(1)
	}
	f.workers.Go(func() {
		if done != nil {
			defer done.Done()
		}
		f.changes <- struct{}{}
		defer func() { <-f.changes }()
		fn()
	})
}

// vacate takes k out of its slot while its consumer is removed. f.mu is
// held.
func (c *classState) vacate(k *keyState) {
	delete(c.keys, k.key)
	c.changing[k.key] = false
	c.freeing++
	c.fresh.remove(k)
	c.turns.remove(k)
	c.held = slices.DeleteFunc(c.held, func(x *keyState) bool { return x == k })
	k.queued = false
}

// vacated is key's consumer removed, or not: its slot is no longer being
// freed. It returns whether a message named key meanwhile. f.mu is held.
func (c *classState) vacated(key string) (heard bool) {
	heard = c.changing[key]
	delete(c.changing, key)
	c.freeing--
	return heard
}

// grant makes k's consumer and puts k in line.
func (f *Fair) grant(ctx context.Context, c *classState, k *keyState) {
	cc := c.Template
	cc.Name, cc.Durable = streams.PerTenant(c.Name, k.key), ""
	cc.Description = fmt.Sprintf("%s, key %s, served in turn with the class's other keys; removed once idle", c.Name, k.key)
	cc.FilterSubject, cc.FilterSubjects = c.Prefix+"."+k.key, nil
	// In memory, with the stream's replicas: a work queue's consumers
	// must have them.
	cc.InactiveThreshold, cc.MemoryStorage, cc.Replicas = orphaned, true, 0
	cons, err := f.stream.CreateOrUpdateConsumer(ctx, cc)
	f.mu.Lock()
	defer f.mu.Unlock()
	heard := c.changing[k.key]
	delete(c.changing, k.key)
	if heard {
		k.seenAt, k.unpulled = time.Now(), max(k.unpulled, 1)
	}
	if err != nil {
		// Tried again after a discovery's time; the others are served
		// meanwhile.
		f.logger.WarnContext(ctx, "fair consumer not created", "class", c.Name, "key", k.key, "error", err)
		k.readyAt = time.Now().Add(f.cfg.Discover)
		c.wait(k, false)
		return
	}
	k.consumer, k.readyAt, k.empty, k.served, k.leaving, k.buf, k.acked = cons, time.Time{}, false, 0, false, nil, ""
	c.keys[k.key] = k
	c.enqueue(k)
	f.signal()
	f.signalTurn() // slots held back meanwhile can be given up
}

// giveUp removes k's consumer, unless a message it delivered is not
// settled, and puts k back in line for a slot if it still has messages.
func (f *Fair) giveUp(ctx context.Context, c *classState, k *keyState) {
	info, err := f.settledInfo(ctx, k)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound): // removed already (orphaned)
		info, err = &jetstream.ConsumerInfo{}, nil
	case err != nil:
	case info.NumAckPending > 0:
		err = errUnsettled
	default:
		if err = f.stream.DeleteConsumer(ctx, k.consumer.CachedInfo().Name); errors.Is(err, jetstream.ErrConsumerNotFound) {
			err = nil
		}
	}
	f.mu.Lock()
	defer f.signalTurn()
	defer f.mu.Unlock()
	heard := c.vacated(k.key)
	if err != nil {
		// Kept for a while: serving again, its messages settle.
		if !errors.Is(err, errUnsettled) {
			f.logger.WarnContext(ctx, "fair consumer not removed", "class", c.Name, "key", k.key, "error", err)
		}
		k.leaving, k.served, k.keepUntil = false, 0, time.Now().Add(f.cfg.Discover)
		if heard {
			k.seenAt, k.unpulled, k.empty = time.Now(), max(k.unpulled, 1), false
		}
		c.keys[k.key] = k
		if !k.readyAt.IsZero() {
			c.hold(k)
		}
		c.enqueue(k)
		f.signal()
		return
	}
	if info.NumPending > 0 || heard || !k.readyAt.IsZero() {
		k.consumer, k.leaving, k.served, k.empty = nil, false, 0, false
		c.wait(k, heard && info.NumPending == 0)
	}
}

var errUnsettled = errors.New("a delivered message is not settled")

// settledInfo is k's consumer's info once the server took in every ack and
// term this loop sent on it. They are sent without waiting for an answer
// (a round trip a message), so the server may count as unsettled a
// message this loop settled a moment ago, and the slot would be kept a
// discovery's time for nothing while a fresh key waits. So when the server
// counts some, the last settlement is sent again asking for an answer: a
// consumer takes a connection's acks in the order they were sent, so once
// that one is answered, what the server still counts is the truth — a
// retry waiting out its delay, or another replica's message in hand. An
// ack for a message already settled changes nothing.
func (f *Fair) settledInfo(ctx context.Context, k *keyState) (*jetstream.ConsumerInfo, error) {
	info, err := k.consumer.Info(ctx)
	f.mu.Lock()
	acked := k.acked
	f.mu.Unlock()
	if err != nil || info.NumAckPending == 0 || acked == "" {
		return info, err
	}
	rctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	if _, err := f.cfg.JetStream.Conn().RequestWithContext(rctx, acked, ackAck); err != nil {
		return nil, fmt.Errorf("confirming the last ack: %w", err)
	}
	return k.consumer.Info(ctx)
}

// ackAck is JetStream's acknowledgement, as the client library sends it.
var ackAck = []byte("+ACK")

// discover reads which keys of each class have messages: those without a
// consumer wait for a slot, those whose consumer found nothing last are
// served again; a key with none for Idle gives its slot up (no message of
// it is stored, so none is in flight or waiting to be redelivered).
func (f *Fair) discover(ctx context.Context) error {
	for _, c := range f.classes {
		info, err := f.stream.Info(ctx, jetstream.WithSubjectFilter(c.Prefix+".*"))
		if err != nil {
			return err
		}
		backlog := map[string]bool{}
		var total int64
		for subject, n := range info.State.Subjects {
			if n > 0 {
				backlog[lastToken(subject)] = true
				total += int64(n)
			}
		}
		var idle []*keyState
		f.mu.Lock()
		c.backlog, c.backlogKeys = total, int64(len(backlog))
		for key := range backlog {
			c.waitFor(key, false, note{})
		}
		for key, k := range c.keys {
			switch {
			case backlog[key] && k.empty:
				k.empty = false
				c.enqueue(k)
			case !backlog[key] && k.empty && k.busy == 0 && time.Since(k.dryAt) >= f.cfg.Idle:
				c.vacate(k)
				idle = append(idle, k)
			}
		}
		f.mu.Unlock()
		for _, k := range idle {
			f.change(nil, func() { f.giveUp(ctx, c, k) })
		}
	}
	f.signal()
	return nil
}
