package workflow

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"text/template"
	"time"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
)

// ThrottleStream holds the throttles' counters (streams/THROTTLES).
const ThrottleStream = "THROTTLES"

// throttle lets the run go on when its key's counter for this period is
// within the limit; otherwise the run ends, skipped, with the count on its
// timeline. The increment names the run and step (Nats-Msg-Id), so a step
// taken twice counts once.
func (s *Service) throttle(ctx context.Context, r Run, t router.ThrottleStep, now time.Time) (Run, error) {
	key, err := render("throttle key", t.Key, r)
	if err != nil {
		r.State = Failed
		r.note(now, "failed", fmt.Sprintf("step %d: %v", r.Step, err))
		s.count(ctx, r, "throttle", "failed")
		return r, nil
	}
	per := time.Duration(t.Per)
	subject := throttleSubject(r, key, now, per)
	n, err := s.counters.Add(ctx, subject, 1, fmt.Sprintf("throttle:%s:%d", r.ID, r.Step))
	if err != nil {
		return r, fmt.Errorf("run %s, step %d: counting its throttle: %w", r.ID, r.Step, err)
	}
	limit := max(t.Limit, 1)
	detail := fmt.Sprintf("throttle %q: %d of %d per %s", key, n, limit, per)
	if n > int64(limit) {
		r.State = Skipped
		r.note(now, "skipped", detail)
		s.count(ctx, r, "throttle", "skipped")
		return r, nil
	}
	r.note(now, "passed", detail)
	s.count(ctx, r, "throttle", "passed")
	r.Step++
	return r, nil
}

// throttleSubject is the counter of the route's key in the period now
// falls in: periods are counted from the Unix epoch, so every replica
// agrees where one ends.
func throttleSubject(r Run, key string, now time.Time, per time.Duration) string {
	route, _ := json.Marshal(r.Route)
	sum := sha256.Sum256(append(append(route, 0), key...))
	return fmt.Sprintf("throttle.%s.%s.%d", r.Tenant, hex.EncodeToString(sum[:16]), now.UnixNano()/int64(max(per, time.Second)))
}

// render executes a template of the route's (a throttle's or a digest's
// key) over the run's event data.
func render(what, text string, r Run) (string, error) {
	t, err := template.New(what).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	_, data, err := event.Read(r.Event)
	if err != nil {
		return "", fmt.Errorf("the run's event: %w", err)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, view(data)); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return out.String(), nil
}

// view is what a route's templates see of an event: .Order (its id,
// parties, lines, totals…) or .Stock (its sku, warehouse…).
func view(data event.Data) map[string]any {
	v := map[string]any{}
	if data.Order != nil {
		v["Order"] = data.Order.Order
	}
	if data.Stock != nil {
		v["Stock"] = data.Stock.Stock
	}
	return v
}
