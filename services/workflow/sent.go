package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/router"
)

// sent writes on the run's timeline which notifications its send step
// planned: the step's "sent" entry reads "as ntf_…". The router tells it
// once the step's deliveries are published, which may be before the run's
// own write of the step lands: then the run is read again shortly. A run
// that moved on (or ended) without the entry gets one of its own.
func (s *Service) sent(ctx context.Context, st router.RunSent) error {
	r, rev, err := s.runs.get(ctx, st.Key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		s.drop(ctx, tenantOf(st.Key), "no_run")
		return nil
	}
	if err != nil {
		return err
	}
	detail := sentDetail(st)
	i := slices.IndexFunc(r.Timeline, func(e Entry) bool { return e.Step == st.Step && (e.What == "sent" || e.What == "notified") })
	switch {
	case i >= 0 && r.Timeline[i].Detail != "":
		return nil // told already
	case i >= 0:
		r.Timeline[i].Detail = detail
	case r.Step <= st.Step && !r.State.ended():
		return fmt.Errorf("run %s: step %d not written yet: %w", r.ID, st.Step, errConflict)
	default:
		r.Timeline = append(r.Timeline, Entry{At: s.now(), Step: st.Step, What: "notified", Detail: detail})
	}
	_, err = s.runs.update(ctx, st.Key, r, rev)
	return err
}

// sentDetail says what a send step planned: its notifications, a topic's
// pages still to plan, or nobody.
func sentDetail(st router.RunSent) string {
	var parts []string
	if len(st.Notifications) > 0 {
		ids := strings.Join(st.Notifications, ", ")
		if more := st.Count - len(st.Notifications); more > 0 {
			ids += fmt.Sprintf(" and %d more", more)
		}
		parts = append(parts, "as "+ids)
	}
	if st.Fanouts > 0 {
		parts = append(parts, fmt.Sprintf("%d topic fan-out(s) to plan", st.Fanouts))
	}
	if len(parts) == 0 {
		return "to nobody: no recipient reachable on its channels"
	}
	return strings.Join(parts, "; ")
}
