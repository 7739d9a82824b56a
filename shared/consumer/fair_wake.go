package consumer

import (
	"time"
)

// A retried message is naked with a delay: the server hands it back once
// the delay is over, but its key, run dry meanwhile, would be looked at
// again only by the next discovery — up to Discover late, every retry. So
// the loop wakes the key itself when the delay ends, as if the message had
// been heard of on it: its pulls then wait the moment the server may take
// to hand it back (storeLag). Discovery stays the safety net.
//
// A key has one wake however many of its messages wait: at the first of
// their delays' ends (for one message), then at the last (for the rest);
// one in between comes back with the last, or with a wake that a later
// retry, due sooner, set.

// wake is when a key's n waiting messages come back: the first and the
// last.
type wake struct {
	first, last time.Time
	n           int
}

// wakeAfter has k's turn come back after d, when the message c's handler
// just naked with that delay is handed back.
func (f *Fair) wakeAfter(c *classState, key string, d time.Duration) {
	at := time.Now().Add(d)
	fk := foundKey{c, key}
	f.notesMu.Lock()
	w, pending := f.wakes[fk]
	if !pending || at.Before(w.first) {
		w.first = at
	}
	if at.After(w.last) {
		w.last = at
	}
	w.n++
	f.wakes[fk] = w
	sooner := f.wakeAt.IsZero() || at.Before(f.wakeAt)
	f.notesMu.Unlock()
	if sooner {
		select {
		case f.rewake <- struct{}{}:
		default:
		}
	}
}

// setWake notes the keys whose wake is due, and sets t for the next.
// follow owns t: no wake outlives the loop.
func (f *Fair) setWake(t *time.Timer) {
	now := time.Now()
	due := map[foundKey]int{}
	f.notesMu.Lock()
	f.wakeAt = time.Time{}
	for fk, w := range f.wakes {
		switch {
		case w.first.After(now):
			f.wakeAt = earliest(f.wakeAt, w.first)
		case w.last.After(now) && w.n > 1:
			due[fk] = 1
			f.wakes[fk] = wake{first: w.last, last: w.last, n: w.n - 1}
			f.wakeAt = earliest(f.wakeAt, w.last)
		default:
			due[fk] = w.n
			delete(f.wakes, fk)
		}
	}
	next := f.wakeAt
	f.notesMu.Unlock()
	for fk, n := range due {
		f.heard(fk, n)
	}
	if next.IsZero() {
		t.Stop()
		return
	}
	t.Reset(time.Until(next))
}

// earliest is the earlier of a and b, a zero a counting as none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}
