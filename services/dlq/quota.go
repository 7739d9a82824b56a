package dlq

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/dlq/alert"
	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/quota"
)

// StatusStream is where the delivery workers tell the monthly quota
// thresholds, beside the tenants' other events; the service reads it with
// the durable AlertsDurable, pinned to one replica as the DLQ's is.
const StatusStream = "STATUS"

// handleStatus hands a monthly quota threshold to the alerts, once; the
// tenant's other events are not the operators' business here.
func (s *Service) handleStatus(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(msg.Data(), &head); err != nil {
		// Not a quota threshold; the status feed, whose event it is,
		// dead-letters it, and a second entry would tell nothing more.
		s.cfg.Logger.DebugContext(ctx, "unreadable status event skipped", "subject", msg.Subject(), "error", err)
		return consumer.Done()
	}
	if head.Type != quota.WarningType && head.Type != quota.ExceededType {
		return consumer.Done()
	}
	var ev quota.Event
	if err := json.Unmarshal(msg.Data(), &ev); err != nil {
		// A threshold the operators would not hear of: kept, and alerted,
		// as a dead letter.
		return consumer.GiveUp(fmt.Errorf("unreadable quota event on %s: %w", msg.Subject(), err))
	}
	if !s.quotasSeen.first(ev) {
		s.cfg.Logger.DebugContext(ctx, "quota threshold alerted already", "tenant", ev.Tenant, "channel", ev.Channel,
			"month", ev.Month, "threshold", ev.Threshold)
		return consumer.Done()
	}
	s.alerts.AddQuota(alert.Quota{Tenant: ev.Tenant, Channel: string(ev.Channel), Month: ev.Month, Used: ev.Used,
		Quota: ev.Quota, Threshold: ev.Threshold, Time: ev.Time})
	return consumer.Done()
}

// keptMonths is how many months of thresholds seenThresholds remembers:
// the current one, and the last, whose events may still be arriving.
const keptMonths = 2

// seenThresholds remembers the thresholds alerted, so that one told again
// — redelivered after a lost acknowledgement, or published again after
// the stream's duplicate window — is alerted once. The consumer is pinned,
// so one replica sees a threshold's copies.
type seenThresholds struct {
	mu     sync.Mutex
	months map[string]map[string]bool
}

// first reports whether ev's threshold is seen for the first time, and
// remembers it.
func (s *seenThresholds) first(ev quota.Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.months == nil {
		s.months = map[string]map[string]bool{}
	}
	month, ok := s.months[ev.Month]
	if !ok {
		month = map[string]bool{}
		s.months[ev.Month] = month
		s.forgetOldMonths()
	}
	id := ev.MsgID()
	if month[id] {
		return false
	}
	month[id] = true
	return true
}

// forgetOldMonths keeps the newest keptMonths months (yyyy-mm sorts as
// time does).
func (s *seenThresholds) forgetOldMonths() {
	months := make([]string, 0, len(s.months))
	for m := range s.months {
		months = append(months, m)
	}
	slices.Sort(months)
	for _, m := range months[:max(0, len(months)-keptMonths)] {
		delete(s.months, m)
	}
}
