package router

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/ordering"
)

// Sequences register the revisions of ordered routes (ordering.Redis).
type Sequences interface {
	Register(ctx context.Context, slots []ordering.Slot) (ahead []bool, err error)
}

// sequence registers every ordered delivery of d — admitted and fitted, so
// that no revision is registered for an event dead-lettered after — as
// pending in its sequence, in the router's order, before any is published:
// the router sees an order's events in order, a worker may not. It marks
// those with an earlier revision pending, the only ones a worker asks
// about, and encodes the decision again if it marked any (the common case,
// nothing pending, costs no second encoding). Redis not answering fails the event (err), which is
// routed again: publishing a revision unregistered could let it overtake
// an earlier one. invalid is fit's.
func (s *Service) sequence(ctx context.Context, d *Decision) (invalid, err error) {
	marked, err := s.register(ctx, d)
	if err != nil || !marked {
		return nil, err
	}
	return d.fit(s.js.Conn().MaxPayload()), nil
}

// register registers d's ordered deliveries and reports whether any has an
// earlier revision pending.
func (s *Service) register(ctx context.Context, d *Decision) (bool, error) {
	var ordered []*notification.Delivery
	each := func(ds []notification.Delivery) {
		for i := range ds {
			if ds[i].Sequence != nil {
				ordered = append(ordered, &ds[i])
			}
		}
	}
	each(d.Deliveries)
	for _, r := range d.Renders {
		each(r.Deliveries)
	}
	if len(ordered) == 0 {
		return false, nil
	}
	slots := make([]ordering.Slot, len(ordered))
	for i, o := range ordered {
		slots[i] = ordering.Slot{Sequence: o.Sequence.Key, Member: o.DedupeKey, Revision: o.Order.Revision}
	}
	ahead, err := s.cfg.Sequences.Register(ctx, slots)
	if err != nil {
		return false, fmt.Errorf("registering the order's revisions (not publishing them unordered): %w", err)
	}
	marked := false
	for i, o := range ordered {
		o.Sequence.Behind = ahead[i]
		marked = marked || ahead[i]
	}
	return marked, nil
}
