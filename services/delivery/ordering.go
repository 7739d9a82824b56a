package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/ordering"
)

// Sequences hold and release the revisions of ordered routes
// (ordering.Redis).
type Sequences interface {
	Park(ctx context.Context, sequence, member string, data []byte) (ordering.Holder, bool, error)
	Settle(ctx context.Context, sequence, member string) (*ordering.Released, error)
}

// headerReleased, on a parked delivery published again, says which
// revision's settlement released it and how (ordering.Release).
const headerReleased = ordering.HeaderReleased

// wait parks a notification while an earlier revision of its order, to the
// same recipient on the same channel, is pending: the message itself is
// kept beside its sequence, its claim given back with why ("held behind
// revision 1 (notification …)"), and it is acknowledged — a delivery held
// by retrying would spend its deliveries toward MaxDeliver while the one
// before it retries slowly, and be dead-lettered for waiting. The earlier
// revision's settlement publishes it again (release). Only a notification
// the router found behind another is asked about. Sequences that do not
// answer hold it (retried): sending out of order is what must not happen.
func (w worker) wait(ctx context.Context, j *job) (consumer.Outcome, bool) {
	s := w.sequence(j)
	if s == nil || !s.Behind {
		return consumer.Outcome{}, false
	}
	h, held, err := w.cfg.Sequences.Park(ctx, s.Key, j.d.DedupeKey, j.msg.Data())
	if err != nil {
		err = fmt.Errorf("order's sequence unavailable, not sending out of order: %w", err)
		j.log.WarnContext(ctx, "order's sequence unavailable; will retry", "error", err)
		w.unclaim(ctx, j, err)
		return consumer.Retry(err, w.cfg.RetryDelay, time.Minute), true
	}
	if !held {
		return consumer.Outcome{}, false
	}
	j.parked = true
	w.unclaim(ctx, j, fmt.Errorf("held behind revision %d (notification %s)", h.Revision, notification.ID(h.Member)))
	w.metrics.outcome(ctx, j.d, "", "held")
	j.log.InfoContext(ctx, "an earlier revision of the order is pending; held until it is settled", "revision", h.Revision)
	return consumer.Done(), true
}

// release, once a notification of an ordered route is settled — delivered,
// failed for good or dead-lettered (by the protocol, or by the settler on
// the last delivery), fallen back to its next channel, suppressed, held
// back by a preference, a duplicate — removes it from its sequence and
// publishes the next revision again if it was parked behind it. A release
// that cannot be made turns an acknowledgement into a retry: the copy that
// comes back finds the notification settled in the ledger and releases
// then. It returns the outcome to settle.
func (w worker) release(ctx context.Context, j *job, o consumer.Outcome) consumer.Outcome {
	s := w.sequence(j)
	how, settled := w.settledAs(j, o)
	if s == nil || j.parked || !settled {
		return o
	}
	ctx = context.WithoutCancel(ctx)
	next, err := ordering.Release(ctx, w.cfg.Sequences, w.js, j.d, how)
	if err == nil {
		if next != "" {
			j.log.InfoContext(ctx, "released the order's next revision", "next_notification_id", next)
		}
		return o
	}
	err = fmt.Errorf("releasing the order's next revision: %w", err)
	j.log.WarnContext(ctx, "the next revision of the order was not released", "error", err)
	if o.String() == "done" {
		return consumer.Retry(err, w.cfg.RetryDelay, time.Minute)
	}
	return o
}

// sequence is the job's sequence, if it has one and this worker keeps
// sequences; a delivery naming no order has none.
func (w worker) sequence(j *job) *notification.Sequence {
	if w.cfg.Sequences == nil || j.d.Order == nil {
		return nil
	}
	return j.d.Sequence
}

// settledAs says whether o settles the job's notification for good, and
// how, as its successor's history tells it.
func (w worker) settledAs(j *job, o consumer.Outcome) (string, bool) {
	e := j.entry
	switch o.String() {
	case "gave_up":
		return "dead-lettered", true
	case "retry":
		md, err := j.msg.Metadata()
		if err != nil || w.maxDeliver <= 0 || md.NumDelivered < uint64(w.maxDeliver) {
			return "", false
		}
		return "dead-lettered", true
	case "done":
		switch {
		case e.FallbackTo != "":
			return "fell back to another channel", true
		case e.State == "":
			return "skipped", true
		}
		return string(e.State), true
	}
	return "", false
}
