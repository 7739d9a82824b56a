package quota

import (
	"context"
	"fmt"
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

// Count counts one notification on key against limit. msgID names this
// counting (say, a notification and the stream sequence of the copy that
// counted it): counting again under the same id within QUOTAS' duplicate
// window — a copy redelivered after a crash — counts nothing more and
// gives the same answer.
//
// Over quota, the notification is taken off the count again and counted
// as refused (each under an id derived from msgID, so once), so the count says what was sent, and a notification redriven
// after an upgrade is counted then.
func (c *Counter) Count(ctx context.Context, key Key, limit Limit, msgID string) (Use, error) {
	if err := key.validate(); err != nil {
		return Use{}, err
	}
	used, again, err := c.add(ctx, key.Subject(), 1, msgID)
	if err != nil {
		return Use{}, err
	}
	u := Use{Key: key, Limit: limit, Used: used}
	if !limit.Limited {
		return u, nil
	}
	// Counted already under msgID (a copy redelivered after a crash): what
	// was decided then is unknown, and the total may already be back from
	// an undo. At the quota, refuse: the undo is deduped if it was done,
	// and done now if not, so the count stays honest either way.
	if used > limit.PerMonth || again && used >= limit.PerMonth {
		u.Refused = true
		if u.Used, err = c.Add(ctx, key.Subject(), -1, undoID(msgID, "undo")); err != nil {
			return Use{}, fmt.Errorf("quota: taking a refused notification off the count: %w", err)
		}
		if _, err := c.Add(ctx, key.RefusedSubject(), 1, undoID(msgID, "refused")); err != nil {
			return Use{}, err
		}
		// What the refusal tells: the quota, used up.
		u.Used = min(u.Used, limit.PerMonth)
		return u, nil
	}
	u.Crossed = crossed(used, limit.PerMonth)
	return u, nil
}

func undoID(msgID, what string) string {
	if msgID == "" {
		return ""
	}
	return msgID + ":" + what
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

// Exceeded is the answer to give before even accepting a notification
// when the month's quota is used up: nil while there is room.
func (u Usage) Exceeded() error {
	if !u.Limited || u.Used < u.PerMonth {
		return nil
	}
	return Use{Key: u.Key, Limit: u.Limit, Used: u.Used, Refused: true}.Err()
}
