package dlq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/telemetry"
)

// SweepConfig configures the resend sweep: every Interval, notifications
// the ledger records as failed-but-retryable (their tries ran out on
// transient failures) for at least MinAge are sent back to NOTIFY, at most
// Limit per sweep and MaxResends times each — so something missed during an
// outage has a way back without anyone redriving it.
type SweepConfig struct {
	// Interval between sweeps. Defaults to 5 minutes; negative disables.
	Interval time.Duration `yaml:"interval"`
	// MinAge is how long a failure rests before it is resent.
	// Defaults to 15 minutes.
	MinAge time.Duration `yaml:"min_age"`
	// Limit is the most notifications one sweep resends. Defaults to 100.
	Limit int `yaml:"limit"`
	// MaxResends is how many times one notification is resent.
	// Defaults to 3.
	MaxResends int `yaml:"max_resends"`
}

func (c SweepConfig) withDefaults() SweepConfig {
	c.Interval = cmp.Or(c.Interval, 5*time.Minute)
	c.MinAge = cmp.Or(c.MinAge, 15*time.Minute)
	c.Limit = cmp.Or(c.Limit, 100)
	c.MaxResends = cmp.Or(c.MaxResends, 3)
	return c
}

func (c SweepConfig) validate() error {
	if c.Limit < 1 || c.MaxResends < 1 || c.MinAge < 0 {
		return fmt.Errorf("dlq.sweep: limit and max_resends must be 1 or more, min_age not negative (got %d, %d, %s)",
			c.Limit, c.MaxResends, c.MinAge)
	}
	return nil
}

func (s *Service) sweepLoop(ctx context.Context) {
	if s.cfg.Sweep.Interval < 0 {
		return
	}
	t := time.NewTicker(s.cfg.Sweep.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := s.Sweep(ctx); err != nil {
				s.cfg.Logger.WarnContext(ctx, "resend sweep", "resent", n, "error", err)
			} else if n > 0 {
				s.cfg.Logger.InfoContext(ctx, "resend sweep", "resent", n)
			}
		}
	}
}

// Sweep resends what the ledger holds as failed-but-retryable, and returns
// how many it resent. It reads the ledger's retry index, not the whole
// ledger. With a Locker, one replica sweeps at a time.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	if s.cfg.Locker != nil {
		// Held for an interval (a minute at least), so a sweeper that dies
		// mid-sweep hands over by the next tick.
		lease, err := s.cfg.Locker.Acquire(ctx, "sweep", max(s.cfg.Sweep.Interval, time.Minute))
		if errors.Is(err, lock.ErrHeld) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("electing the sweeper: %w", err)
		}
		defer func() { _ = lease.Release(context.WithoutCancel(ctx)) }()
	}
	cfg := s.cfg.Sweep
	resent := 0
	var errs []error
	err := s.ledger.EachRetryable(ctx, func(e ledger.Entry) bool {
		if e.Resends >= cfg.MaxResends || len(e.Delivery) == 0 {
			// Resent as often as it may be, or nothing kept to resend: it
			// waits in the DLQ for an operator, not in the sweep's index.
			if err := s.ledger.Retire(ctx, e); err != nil {
				errs = append(errs, err)
			}
			return len(errs) < 5
		}
		if time.Since(e.UpdatedAt) < cfg.MinAge {
			return true
		}
		if err := Resend(ctx, s.js, s.ledger, &e); err != nil {
			errs = append(errs, err)
			return len(errs) < 5
		}
		resent++
		return resent < cfg.Limit
	})
	return resent, errors.Join(append(errs, err)...)
}

// Resend publishes the kept delivery of a failed-but-retryable entry again
// — under a new Nats-Msg-Id, since the original's was seen — then notes
// the resend in the ledger. In that order: a resend the ledger missed costs
// one extra try, a ledger entry claiming a resend that never left would
// leave the notification stuck. Two resends of the entry as read at one
// revision share a Nats-Msg-Id, so JetStream keeps only one. The sweep and
// the API's retry both resend through here.
func Resend(ctx context.Context, js jetstream.JetStream, l *ledger.Ledger, e *ledger.Entry) error {
	d, err := notification.Decode(e.Delivery)
	if err != nil {
		return fmt.Errorf("%s: kept delivery unreadable: %w", e.NotificationID, err)
	}
	msg := nats.NewMsg(notification.Subject(d.Channel, d.Priority, d.Tenant))
	msg.Data = e.Delivery
	msg.Header.Set(jetstream.MsgIDHeader, d.DedupeKey+":resend:"+strconv.Itoa(e.Resends+1))
	if _, err := telemetry.PublishMsg(ctx, js, msg); err != nil {
		return fmt.Errorf("%s: %w", e.NotificationID, err)
	}
	e.Resends++
	e.State = ledger.Retrying
	if err := l.Put(ctx, e); err != nil && !errors.Is(err, ledger.ErrConflict) {
		return fmt.Errorf("%s: resent, but the ledger was not updated: %w", e.NotificationID, err)
	}
	return nil
}
