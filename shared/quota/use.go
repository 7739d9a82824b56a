package quota

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nuid"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/tenant"
)

// Limit is a plan's quota on one channel: PerMonth notifications, when
// Limited.
type Limit struct {
	PerMonth int64
	Limited  bool
}

// Use is what counting one notification did.
type Use struct {
	Key
	Limit
	// Used is the month's count with this notification, or — when
	// Refused — without it.
	Used int64
	// Refused: counting it took the month past its quota, so it must not
	// be sent; it was taken off Used and counted as refused instead.
	Refused bool
	// Crossed are the thresholds this notification took the month to
	// (Warning at 80 %, Exhausted at 100 %): at most one notification of a
	// month crosses each, so each is told once.
	Crossed []Threshold
}

// Err is why a refused notification was not sent, as its dead letter
// says: "quota exceeded: email 100/100 (2026-12)". Nil unless Refused.
func (u Use) Err() error {
	if !u.Refused {
		return nil
	}
	return fmt.Errorf("quota exceeded: %s %d/%d (%s)", u.Channel, u.Used, u.PerMonth, u.Month)
}

// Count counts one notification on key against limit.
//
// Notifications of one key counted while an increment of that key is on
// its way to the server are counted together, by the next increment
// (Nats-Incr: +n), so a burst of one tenant costs one write per round trip
// rather than one per notification, and each notification still learns
// its own place in the month: the k-th of a group that took the total to
// T is number T-n+k. Those past the quota are taken off the count again,
// in one write, and counted as refused, so the count says what was sent.
// A group is judged by its first notification's limit (a plan changed
// mid-flight applies from the next).
//
// Each write is retried under its own Nats-Msg-Id until it is answered or
// the counter gives up (a few seconds), so an acknowledgement lost on the
// way back does not count a group twice — unless the counter gives up on
// a write that had landed, and its callers count again later. A
// notification is counted once only if its caller records that it was
// (the ledger's Counted) and does not count it again: see
// services/delivery.
func (c *Counter) Count(ctx context.Context, key Key, limit Limit) (Use, error) {
	if err := key.validate(); err != nil {
		return Use{}, err
	}
	g, k, lead := c.join(key, limit)
	if lead {
		c.flush(ctx, key, g)
	}
	<-g.done
	if g.err != nil {
		return Use{}, g.err
	}
	return g.use(k), nil
}

// group is the notifications of one key counted by one increment.
type group struct {
	key   Key
	limit Limit
	n     int64
	// prev is the group counted before this one, which must be answered
	// before this one is sent: one increment per key is on its way at a time.
	prev *group
	done chan struct{}
	// Set before done is closed: the total the increment made, and how
	// many of the group's last members were refused.
	total, refused int64
	err            error
}

// join adds one notification to the group forming for key, making one if
// there is none; lead is true for the group's first, which sends it.
func (c *Counter) join(key Key, limit Limit) (g *group, k int64, lead bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forming == nil {
		c.forming, c.last = map[Key]*group{}, map[Key]*group{}
	}
	g = c.forming[key]
	if g == nil {
		g = &group{key: key, limit: limit, prev: c.last[key], done: make(chan struct{})}
		c.forming[key], lead = g, true
	}
	k = g.n
	g.n++
	return g, k, lead
}

// flush waits for the previous group of key, closes g to newcomers, and
// counts it.
func (c *Counter) flush(ctx context.Context, key Key, g *group) {
	if g.prev != nil {
		<-g.prev.done
		g.prev = nil
	}
	c.mu.Lock()
	delete(c.forming, key)
	c.last[key] = g
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.last[key] == g {
			delete(c.last, key)
		}
		c.mu.Unlock()
		close(g.done)
	}()
	// Detached: the members waiting on g are counted in it whether or not
	// the first of them is still wanted.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	id := nuid.Next()
	if g.total, g.err = c.insist(ctx, key.Subject(), g.n, id); g.err != nil {
		return
	}
	if !g.limit.Limited || g.total <= g.limit.PerMonth {
		return
	}
	g.refused = min(g.n, g.total-g.limit.PerMonth)
	if _, err := c.insist(ctx, key.Subject(), -g.refused, id+":undo"); err != nil {
		g.err = fmt.Errorf("quota: taking refused notifications off the count: %w", err)
		return
	}
	if _, err := c.insist(ctx, key.RefusedSubject(), g.refused, id+":refused"); err != nil {
		g.err = err
	}
}

// insist adds delta under msgID, asking again while the server does not
// answer and ctx lasts.
func (c *Counter) insist(ctx context.Context, subject string, delta int64, msgID string) (int64, error) {
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		total, err := c.Add(ctx, subject, delta, msgID)
		if err == nil || errors.Is(err, ErrNoStream) {
			return total, err
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(pause):
		}
	}
}

// use is what counting the group's k-th notification did.
func (g *group) use(k int64) Use {
	u := Use{Key: g.key, Limit: g.limit, Used: g.total - g.n + 1 + k}
	if k >= g.n-g.refused {
		// What a refusal tells: the quota, used up.
		u.Refused, u.Used = true, g.limit.PerMonth
		return u
	}
	if g.limit.Limited {
		u.Crossed = crossed(u.Used, g.limit.PerMonth)
	}
	return u
}

// Usage is a month's count on one channel against its limit.
type Usage struct {
	Key
	Limit
	Used    int64
	Refused int64
}

// Usage reads key's counts.
func (c *Counter) Usage(ctx context.Context, key Key, limit Limit) (Usage, error) {
	if err := key.validate(); err != nil {
		return Usage{}, err
	}
	u := Usage{Key: key, Limit: limit}
	var err error
	if u.Used, err = c.Get(ctx, key.Subject()); err != nil {
		return Usage{}, err
	}
	if u.Refused, err = c.Get(ctx, key.RefusedSubject()); err != nil {
		return Usage{}, err
	}
	return u, nil
}

// TenantMonth reads tenant id's counts on every channel (event.Channels, in that
// order) in month (yyyy-mm, see Month), each against plan's quota: what
// GET /v1/usage, herald tenants usage and the console show.
func (c *Counter) TenantMonth(ctx context.Context, id string, plan tenant.Plan, month string) ([]Usage, error) {
	out := make([]Usage, 0, len(event.Channels))
	for _, ch := range event.Channels {
		perMonth, limited := plan.Quota(ch)
		u, err := c.Usage(ctx, Key{Tenant: id, Channel: ch, Month: month}, Limit{PerMonth: perMonth, Limited: limited})
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// Exceeded is the answer to give before even accepting a notification
// when the month's quota is used up: nil while there is room.
func (u Usage) Exceeded() error {
	if !u.Limited || u.Used < u.PerMonth {
		return nil
	}
	return Use{Key: u.Key, Limit: u.Limit, Used: u.Used, Refused: true}.Err()
}
