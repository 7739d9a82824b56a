package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/recipient"
)

// window holds the run until the recipient's local window opens — at
// once through when it is open, or when the route's priority is the one
// the window lets by.
func (s *Service) window(ctx context.Context, key string, r Run, w router.WindowStep, now time.Time) (Run, error) {
	if w.UnlessPriority != "" && r.Route.Priority == w.UnlessPriority {
		r.note(now, "woken", "priority "+string(w.UnlessPriority)+" goes at any hour")
		r.Step++
		return r, nil
	}
	loc, err := s.zone(ctx, r, w.Timezone)
	if err != nil {
		return r, err
	}
	open, inside, err := nextOpening(w, now.In(loc))
	if err != nil {
		r.State = Failed
		r.note(now, "failed", err.Error())
		s.count(ctx, r, "window", "failed")
		return r, nil
	}
	if inside {
		r.note(now, "woken", "inside its window ("+loc.String()+")")
		r.Step++
		return r, nil
	}
	if err := s.schedule(ctx, key, r, open); err != nil {
		return r, err
	}
	r.State, r.Until = Waiting, open.UTC()
	r.note(now, "waiting", "for its window: "+open.Format(time.RFC3339)+" ("+loc.String()+")")
	s.count(ctx, r, "window", "waiting")
	return r, nil
}

// zone is the window's time zone: a named one, or the recipient's — the
// subscriber's own when the run is a subscriber's — else UTC.
func (s *Service) zone(ctx context.Context, r Run, name string) (*time.Location, error) {
	if name != "" && name != "recipient" {
		return time.LoadLocation(name)
	}
	if r.Recipient.Subscriber == "" || s.people == nil {
		return time.UTC, nil
	}
	sub, _, err := s.people.Get(ctx, recipient.SubscriberKey(r.Tenant, r.Recipient.Subscriber))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, recipient.ErrNoSubscriber):
		return time.UTC, nil
	case err != nil:
		return nil, fmt.Errorf("run %s: the subscriber's time zone: %w", r.ID, err)
	case sub.Timezone == "":
		return time.UTC, nil
	}
	return time.LoadLocation(sub.Timezone)
}

var weekdays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// nextOpening says whether local (a time in the window's zone) is inside
// the window, and if not when it next opens. A window whose to is not
// after its from closes the next day; across a change of the clocks, a
// day's from and to are that day's local times.
func nextOpening(w router.WindowStep, local time.Time) (open time.Time, inside bool, err error) {
	from, err := clock(w.From)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("window from: %w", err)
	}
	to, err := clock(w.To)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("window to: %w", err)
	}
	y, m, d := local.Date()
	for day := -1; day <= 8; day++ {
		date := time.Date(y, m, d+day, 0, 0, 0, 0, local.Location())
		if len(w.Days) > 0 && !slices.Contains(w.Days, weekdays[date.Weekday()]) {
			continue
		}
		start, end := at(date, from), at(date, to)
		if !end.After(start) {
			end = at(date.AddDate(0, 0, 1), to)
		}
		if !local.Before(start) && local.Before(end) {
			return time.Time{}, true, nil
		}
		if start.After(local) {
			return start, false, nil
		}
	}
	return time.Time{}, false, errors.New("window: it never opens (no day)")
}

// clock reads HH:MM or HH:MM:SS as a time of day.
func clock(text string) (time.Duration, error) {
	layout := "15:04:05"
	if strings.Count(text, ":") == 1 {
		layout = "15:04"
	}
	t, err := time.Parse(layout, text)
	if err != nil {
		return 0, fmt.Errorf("%q is not HH:MM or HH:MM:SS", text)
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second, nil
}

// at is the local time of day on date (its midnight), as the clocks that
// day show it.
func at(date time.Time, tod time.Duration) time.Time {
	h, rest := tod/time.Hour, tod%time.Hour
	return time.Date(date.Year(), date.Month(), date.Day(), int(h), int(rest/time.Minute), int(rest%time.Minute/time.Second), 0, date.Location())
}
