package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/telemetry"
)

// start records a run and takes its first steps. A start delivered twice
// finds the run recorded and goes on from where it is.
func (s *Service) start(ctx context.Context, st router.RunStart) error {
	key := Key(st.Tenant, st.Subject, st.ID)
	now := s.now()
	r := Run{ID: st.ID, Tenant: st.Tenant, Subject: st.Subject, Event: st.Event, StoredAt: st.StoredAt, Route: st.Route,
		Recipient: st.Recipient, State: Running, Created: now}
	r.note(now, "started", "")
	rev, err := s.runs.create(ctx, key, r)
	if errors.Is(err, jetstream.ErrKeyExists) {
		r, rev, err = s.runs.get(ctx, key)
	}
	if err != nil {
		return err
	}
	return s.advance(ctx, key, r, rev)
}

// advance takes the run's steps while it is running: each step's effect
// first (idempotent: a send's and a timer's ids name the run and the
// step), then the run moves past it by compare-and-set. A crash in
// between takes the step again, to the same effect.
//
// Another write may land between two of its steps (an event the run
// remembers, the notifications a send planned): the run is read again and,
// if it is still running, taken on from where it stands. One that is not
// (a wake's move past its wait was not written yet) is the message's to
// take again.
func (s *Service) advance(ctx context.Context, key string, r Run, rev uint64) error {
	for r.State == Running {
		next, err := s.take(ctx, key, r)
		if err != nil {
			return err
		}
		written, err := s.runs.update(ctx, key, next, rev)
		if errors.Is(err, errConflict) {
			if r, rev, err = s.runs.get(ctx, key); err != nil {
				return err
			}
			if r.State != Running {
				return fmt.Errorf("run %s: %w", r.ID, errConflict)
			}
			continue
		}
		if err != nil {
			return err
		}
		r, rev = next, written
	}
	return nil
}

// take takes the run's current step and returns the run after it.
func (s *Service) take(ctx context.Context, key string, r Run) (Run, error) {
	now := s.now()
	if r.Step >= len(r.Route.Steps) {
		r.State = Done
		r.note(now, "done", "")
		s.count(ctx, r, "end", "done")
		return r, nil
	}
	step := r.Route.Steps[r.Step]
	switch {
	case step.Send != nil:
		if err := s.send(ctx, r); err != nil {
			return r, err
		}
		r.note(now, "sent", "")
		s.count(ctx, r, "send", "sent")
		r.Step++
	case step.Wait != nil:
		return s.wait(ctx, key, r, *step.Wait, now)
	case step.Window != nil:
		return s.window(ctx, key, r, *step.Window, now)
	case step.Throttle != nil:
		return s.throttle(ctx, r, *step.Throttle, now)
	case step.Digest != nil:
		return s.digest(ctx, key, r, *step.Digest, now)
	default:
		r.State = Failed
		r.note(now, "failed", fmt.Sprintf("step %d is of a kind this version does not take", r.Step))
		s.count(ctx, r, "unknown", "failed")
	}
	return r, nil
}

// send asks the router to plan and publish the run's send step.
func (s *Service) send(ctx context.Context, r Run) error {
	body, err := json.Marshal(router.SendRequest{Run: r.ID, Key: Key(r.Tenant, r.Subject, r.ID), Step: r.Step, Tenant: r.Tenant,
		Event: r.Event, StoredAt: r.StoredAt, Route: r.Route, Recipient: r.Recipient, Items: r.Items})
	if err != nil {
		return err
	}
	msg := nats.NewMsg(router.RunsSend(r.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("send:%s:%d", r.ID, r.Step))
	if _, err := telemetry.PublishMsg(ctx, s.js, msg); err != nil {
		return fmt.Errorf("run %s, step %d: asking for its send: %w", r.ID, r.Step, err)
	}
	return nil
}

// wait holds the run: until its bound, with a timer on its own subject;
// at once ended when the event it waits for has already arrived.
func (s *Service) wait(ctx context.Context, key string, r Run, w router.WaitStep, now time.Time) (Run, error) {
	if w.UntilEvent != "" && slices.Contains(r.Seen, w.UntilEvent) {
		r.State = Done
		r.note(now, "ended", w.UntilEvent+" had arrived")
		s.count(ctx, r, "wait", "ended")
		return r, nil
	}
	if ended, ok := s.statusArrived(ctx, r, now); ok {
		return ended, nil
	}
	until, err := deadline(r, w, now)
	if err != nil {
		r.State = Failed
		r.note(now, "failed", err.Error())
		s.count(ctx, r, "wait", "failed")
		return r, nil
	}
	if until.IsZero() {
		// Only until_event: the event, or a cancel, ends it.
		r.State, r.Until = Waiting, time.Time{}
		r.note(now, "waiting", "for "+w.UntilEvent)
		s.count(ctx, r, "wait", "waiting")
		return r, nil
	}
	if !until.After(now) {
		r.note(now, "woken", "its time had passed: "+until.Format(time.RFC3339))
		r.Step++
		return r, nil
	}
	if err := s.schedule(ctx, key, r, until); err != nil {
		return r, err
	}
	r.State, r.Until = Waiting, until
	detail := "until " + until.Format(time.RFC3339)
	if w.UntilEvent != "" {
		detail += " or " + w.UntilEvent
	}
	r.note(now, "waiting", detail)
	s.count(ctx, r, "wait", "waiting")
	return r, nil
}

// deadline is when a wait ends by time (zero: only by its event): its
// until, else the time it started plus its for.
func deadline(r Run, w router.WaitStep, now time.Time) (time.Time, error) {
	if w.Until != "" {
		text, err := untilText(r, w.Until)
		if err != nil {
			return time.Time{}, err
		}
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(text))
		if err != nil {
			return time.Time{}, fmt.Errorf("step %d: until %q is not an RFC 3339 time", r.Step, text)
		}
		return t.UTC(), nil
	}
	if w.For > 0 {
		return now.Add(time.Duration(w.For)), nil
	}
	return time.Time{}, nil
}

// untilText is a wait's until: the time itself, or a template over the
// event's data that writes it ({{.Order.IssuedAt}}).
func untilText(r Run, until string) (string, error) {
	if !strings.Contains(until, "{{") {
		return until, nil
	}
	text, err := render("until", until, r)
	if err != nil {
		return "", fmt.Errorf("step %d: %w", r.Step, err)
	}
	return text, nil
}

// TimerSubject is the subject of a run's waiting step's schedule.
func TimerSubject(tenant, run string, step int) string {
	return fmt.Sprintf("runs.timer.%s.%s.%d", tenant, run, step)
}

// schedule publishes the wait's timer: one scheduled message on its own
// subject, firing once at until onto runs.wake.<tenant>. The time keeps its
// fraction of a second (the server reads one), so the timers of a busy
// second are not all due at its start. A subject that already holds one
// (the step taken again after a crash) keeps it.
func (s *Service) schedule(ctx context.Context, key string, r Run, until time.Time) error {
	body, err := json.Marshal(router.RunMessage{Kind: router.RunWakeKind, Wake: &router.RunWake{Key: key, Step: r.Step}})
	if err != nil {
		return err
	}
	msg := nats.NewMsg(TimerSubject(r.Tenant, r.ID, r.Step))
	msg.Data = body
	msg.Header.Set(jetstream.ScheduleHeader, "@at "+until.UTC().Format(time.RFC3339Nano))
	msg.Header.Set(jetstream.ScheduleTargetHeader, router.RunsWake(r.Tenant))
	msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	_, err = telemetry.PublishMsg(ctx, s.js, msg)
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return nil
	}
	if err != nil {
		return fmt.Errorf("run %s, step %d: its timer: %w", r.ID, r.Step, err)
	}
	return nil
}

// unschedule removes a waiting step's timer: its subject, exactly.
func unschedule(ctx context.Context, stream jetstream.Stream, r Run) error {
	if err := stream.Purge(ctx, jetstream.WithPurgeSubject(TimerSubject(r.Tenant, r.ID, r.Step))); err != nil {
		return fmt.Errorf("run %s, step %d: removing its timer: %w", r.ID, r.Step, err)
	}
	return nil
}

// wake goes on with a run whose timer fired, if it still waits at that
// step; a timer whose run moved on (an event ended it) or is gone is
// dropped and counted.
func (s *Service) wake(ctx context.Context, w router.RunWake) error {
	tenant := tenantOf(w.Key)
	r, rev, err := s.runs.get(ctx, w.Key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		s.drop(ctx, tenant, "no_run")
		return nil
	}
	if err != nil {
		return err
	}
	if r.State != Waiting || r.Step != w.Step {
		s.drop(ctx, tenant, "stale_wake")
		return nil
	}
	// Moved past the wait with the next step's write: a wake taken again
	// (a crash before it) finds the run still waiting, and wakes it once.
	r.State, r.Until = Running, time.Time{}
	r.note(s.now(), "woken", "by its timer")
	s.count(ctx, r, "wait", "woken")
	r.Step++
	return s.advance(ctx, w.Key, r, rev)
}

// event ends or cancels the runs of the event's order: each run under
// <tenant>.<subject>, found by its key, not by a scan.
func (s *Service) event(ctx context.Context, e router.RunEvent) error {
	keys, err := s.runs.keys(ctx, e.Tenant+"."+recipient.Token(e.Subject)+".*")
	if err != nil {
		return fmt.Errorf("the runs of %s: %w", e.Subject, err)
	}
	var errs []error
	for _, key := range keys {
		errs = append(errs, s.eventFor(ctx, key, e))
	}
	return errors.Join(errs...)
}

// eventFor applies an order's event to one of its runs: cancel_on cancels
// it; the event its wait waits for ends it; any other the run remembers,
// so a wait for it later ends at once.
func (s *Service) eventFor(ctx context.Context, key string, e router.RunEvent) error {
	r, rev, err := s.runs.get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.State.ended() {
		s.drop(ctx, r.Tenant, "ended")
		return nil
	}
	now, waiting := s.now(), r.State == Waiting
	what := fmt.Sprintf("%s %s", e.Type, e.ID)
	switch {
	case slices.Contains(r.Route.CancelOn, e.Type):
		r.cancel(now, what)
		s.count(ctx, r, "cancel", "cancelled")
	case waiting && r.Route.Steps[r.Step].Wait != nil && r.Route.Steps[r.Step].Wait.UntilEvent == e.Type:
		r.State, r.Until = Done, time.Time{}
		r.note(now, "ended", "by "+what)
		s.count(ctx, r, "wait", "ended")
	case !slices.Contains(r.Seen, e.Type):
		r.Seen = append(r.Seen, e.Type)
		r.Updated = now
	default:
		return nil
	}
	if _, err := s.runs.update(ctx, key, r, rev); err != nil {
		return err
	}
	if waiting && r.State.ended() {
		return unschedule(ctx, s.stream, r)
	}
	return nil
}
