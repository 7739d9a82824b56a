package consumer

import "slices"

// Within a class, keys share by weight (FairConfig.Weight: a tenant's
// plan) the way stride scheduling does, in messages: each key has a pass,
// the virtual time of its next message; turns serves the key whose pass is
// earliest, and each message handed to a key moves its pass on by its
// stride, strideUnit / weight. A key of weight 4 is handed four messages
// for each one of a key of weight 1 while both have some; keys of one
// weight take turns round robin; a key alone is served whatever its weight.
//
// The share holds in messages, not pulls: a key out of line while it is
// pulled keeps its pass, so the messages it brings are served ahead of the
// keys handed some meanwhile — up to one pull's worth. A key cannot bank
// more: one that comes back to line (from a pull, from running dry, from
// a hold, with a new slot) is put no earlier than the class's virtual time
// less one pull's worth (catchUp), so a tenant that was idle for an hour
// is not owed an hour. A pull takes Batch × weight (a weight-4 key's pull
// is as long in virtual time as a weight-1 key's): only one pull of a key
// is made at a time, so with pulls of one size a key could not be handed
// more than a pull a round trip, whatever its turn — with Batch 1, a
// weighted key's extra messages wait in memory as a batch's do, ack wait
// running. A fresh key keeps a pull of Batch: a weighted key that ran dry
// is ahead of the backlogs as long as any, not longer. At a slot of the
// window (fair_slots.go), a weighted key's turn is Quantum × weight
// messages, so its share holds too when more keys than slots compete.

// strideUnit is the virtual time of one message of a weight-1 key: large
// enough that a stride of any sane weight loses little to rounding, small
// enough that an int64 pass counts 2^43 messages.
const strideUnit int64 = 1 << 20

// weightOf is k's weight: 1 until Weight answers.
func (k *keyState) weightOf() int { return max(k.weight, 1) }

// stride is how far one message moves k's pass on.
func (k *keyState) stride() int64 { return max(strideUnit/int64(k.weightOf()), 1) }

// weigh asks Weight for k's weight; 1 without one.
func (f *Fair) weigh(c *classState, k *keyState) int {
	if f.cfg.Weight == nil {
		return 1
	}
	return max(f.cfg.Weight(c.Name, k.key), 1)
}

// batch is how many messages k's next pull may take: Batch × k's weight,
// but Batch for a fresh key. f.mu is held.
func (f *Fair) batch(k *keyState) int {
	if k.fresh {
		return f.cfg.Batch
	}
	return f.cfg.Batch * k.weightOf()
}

// quantum is how many messages k takes in its turn at a slot while others
// wait for one.
func (f *Fair) quantum(k *keyState) int { return f.cfg.Quantum * k.weightOf() }

// catchUp puts k, coming into line, no earlier than one pull's worth
// before the class's virtual time: what it was not handed while pulled,
// and no more. f.mu is held.
func (c *classState) catchUp(k *keyState) {
	k.pass = max(k.pass, c.vtime-c.lag)
}

// earliest is the index of the first key in l whose pass is earliest.
func (l line) earliest() int {
	best := 0
	for i, k := range l {
		if k.pass < l[best].pass {
			best = i
		}
	}
	return best
}

// take removes and returns l's i-th key, keeping the others in order.
func (l *line) take(i int) *keyState {
	k := (*l)[i]
	if i == 0 {
		return l.pop()
	}
	*l = slices.Delete(*l, i, i+1)
	return k
}
