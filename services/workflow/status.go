package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/notification"
)

// StepStatus is a state a send step's notification reached (delivered).
type StepStatus struct {
	Step  int    `json:"step"`
	State string `json:"state"`
}

// status applies a notification's status to the run whose send made it:
// a wait for that status (until_status, after that send) ends the run;
// otherwise the run remembers it, so such a wait later ends at once. A
// status for a run that ended, or is gone, is dropped and counted.
func (s *Service) status(ctx context.Context, st notification.RunStatus) error {
	r, rev, err := s.runs.get(ctx, st.Key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		s.drop(ctx, tenantOf(st.Key), "no_run")
		return nil
	}
	if err != nil {
		return err
	}
	if r.State.ended() {
		s.drop(ctx, r.Tenant, "ended")
		return nil
	}
	now, reached := s.now(), StepStatus{Step: st.Step, State: st.State}
	switch {
	case r.State == Waiting && waitsFor(r, r.Step, reached):
		r.State, r.Until = Done, time.Time{}
		r.note(now, "ended", fmt.Sprintf("by notification %s %s", st.NotificationID, st.State))
		s.count(ctx, r, "wait", "ended")
	case !slices.Contains(r.Statuses, reached):
		r.Statuses = append(r.Statuses, reached)
		r.Updated = now
	default:
		return nil
	}
	if _, err := s.runs.update(ctx, st.Key, r, rev); err != nil {
		return err
	}
	if r.State.ended() {
		return unschedule(ctx, s.stream, r)
	}
	return nil
}

// statusArrived ends, at once, a wait for a status its send's
// notification reached before the wait began (a fast provider).
func (s *Service) statusArrived(ctx context.Context, r Run, now time.Time) (Run, bool) {
	i := slices.IndexFunc(r.Statuses, func(st StepStatus) bool { return waitsFor(r, r.Step, st) })
	if i < 0 {
		return r, false
	}
	r.State = Done
	r.note(now, "ended", fmt.Sprintf("step %d's notification had been %s", r.Statuses[i].Step, r.Statuses[i].State))
	s.count(ctx, r, "wait", "ended")
	return r, true
}

// waitsFor says whether the run's step is a wait for reached: that state
// of the notifications of the send it follows.
func waitsFor(r Run, step int, reached StepStatus) bool {
	send := r.Route.StatusSend(step)
	return send >= 0 && send == reached.Step && r.Route.Steps[step].Wait.UntilStatus == reached.State
}

// tenantOf is the tenant a run's key names.
func tenantOf(key string) string {
	tenant, _, _ := strings.Cut(key, ".")
	return tenant
}
