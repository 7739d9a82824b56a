package quota

import (
	"context"
	"fmt"
	"time"
)

// Hour is the clock hour (UTC) t counts in for an hourly cap:
// "2026-12-01T10".
func Hour(t time.Time) string { return t.UTC().Format("2006-01-02T15") }

// Taken is what taking from an hourly cap did.
type Taken struct {
	// OK: the n asked for were taken. Refused, none were.
	OK bool
	// Max is the cap; Remaining, how many the hour allows after this.
	Max, Remaining int64
	// Reset is when the hour ends, and its count with it.
	Reset time.Time

	subject string
	n       int64
}

// TakeHourly takes n of the limit a tenant may do of what in the clock
// hour (UTC) of now, all or none. The count is a counter like the monthly ones,
// quota.<tenant>.<what>.<yyyy-mm-ddThh> in QUOTAS, so every replica shares
// it and no restart forgets it. n is added, then taken off again if that
// went past limit: two takes racing for the last of an hour may both be
// refused, and an error after the add may leave n counted — the cap errs
// in the platform's favour, never past limit.
func (c *Counter) TakeHourly(ctx context.Context, tenant, what string, n, limit int64, now time.Time) (Taken, error) {
	if err := subjectToken("tenant", tenant); err != nil {
		return Taken{}, err
	}
	hour := now.UTC().Truncate(time.Hour)
	t := Taken{Max: limit, Reset: hour.Add(time.Hour), subject: fmt.Sprintf("quota.%s.%s.%s", tenant, what, Hour(hour)), n: n}
	total, err := c.Add(ctx, t.subject, n, "")
	if err != nil {
		return Taken{}, err
	}
	if total <= limit {
		t.OK, t.Remaining = true, limit-total
		return t, nil
	}
	t.Remaining = max(limit-(total-n), 0) // what there was before this take
	if _, err := c.Add(ctx, t.subject, -n, ""); err != nil {
		return t, fmt.Errorf("quota: taking %d refused off %s: %w", n, t.subject, err)
	}
	return t, nil
}

// GiveBack takes back what t took, which was not used after all.
func (c *Counter) GiveBack(ctx context.Context, t Taken) error {
	if !t.OK {
		return nil
	}
	if _, err := c.Add(ctx, t.subject, -t.n, ""); err != nil {
		return fmt.Errorf("quota: giving %d back to %s: %w", t.n, t.subject, err)
	}
	return nil
}
