package tenant

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// Plan is what a tenant pays for: how fast it may send, how much a month,
// and how urgently. A limit left out is no limit.
type Plan struct {
	// Description says who the plan is for, in a sentence.
	Description string `yaml:"description" json:"description"`
	// RatePerMinute is how many notifications a minute the tenant's
	// deliveries hand to providers, and how many requests a minute its
	// HTTP intake accepts. Nil or 0: no limit.
	RatePerMinute *int `yaml:"rate_per_minute" json:"rate_per_minute,omitempty"`
	// Burst is how many may go at once after a quiet spell. Defaults to
	// RatePerMinute: a minute's worth.
	Burst *int `yaml:"burst" json:"burst,omitempty"`
	// MonthlyQuota is how many notifications a calendar month (UTC) each
	// channel accepts; a channel left out has none. A config file's map
	// replaces the built-in plan's whole.
	MonthlyQuota map[event.Channel]int64 `yaml:"monthly_quota" json:"monthly_quota,omitempty"`
	// MaxPriority caps the priority of the tenant's notifications: free
	// traffic is always low. Defaults to critical.
	MaxPriority notification.Priority `yaml:"max_priority" json:"max_priority,omitempty"`
	// Weight is the tenant's share of a priority's sends while other
	// tenants have deliveries waiting too: a tenant of weight 4 is handed
	// four for each one of a tenant of weight 1; alone, it is served
	// everything. 1 to 100. Defaults to the built-in plan's: enterprise 4,
	// startup 2, others 1.
	Weight *int `yaml:"weight" json:"weight,omitempty"`
}

// MaxWeight is the largest Weight a plan may give: enough for any tier
// of plans, and small enough that one tenant's weighted turn at a slot
// (the fair loop's Quantum × weight) stays a few seconds' work.
const MaxWeight = 100

// Share is the plan's weight when tenants compete within a priority: its
// Weight, or 1.
func (p Plan) Share() int {
	if p.Weight == nil || *p.Weight < 1 {
		return 1
	}
	return *p.Weight
}

// Rate is the plan's rate limit: per minute, and its burst; limited is
// false when the plan has none.
func (p Plan) Rate() (perMinute, burst int, limited bool) {
	if p.RatePerMinute == nil || *p.RatePerMinute <= 0 {
		return 0, 0, false
	}
	burst = *p.RatePerMinute
	if p.Burst != nil && *p.Burst > 0 {
		burst = *p.Burst
	}
	return *p.RatePerMinute, burst, true
}

// Quota is the plan's monthly quota on channel c; limited is false when
// it has none.
func (p Plan) Quota(c event.Channel) (perMonth int64, limited bool) {
	q, ok := p.MonthlyQuota[c]
	return q, ok
}

// Cap is priority p as the plan allows it: p, or the plan's maximum if p
// is more urgent.
func (p Plan) Cap(priority notification.Priority) notification.Priority {
	limit := slices.Index(notification.Priorities, p.MaxPriority)
	if limit < 0 {
		return priority
	}
	if slices.Index(notification.Priorities, priority) < limit {
		return p.MaxPriority
	}
	return priority
}

// Plans are the plans a tenant may be on, by name: the config file's
// `plans:` section.
type Plans map[string]Plan

func limit(n int) *int { return &n }

// BuiltinPlans are the plans every Herald knows, whatever its config file
// says.
func BuiltinPlans() Plans {
	return Plans{
		"free": {Description: "Trying Herald out.", RatePerMinute: limit(5),
			MonthlyQuota: map[event.Channel]int64{event.ChannelEmail: 100, event.ChannelWebhook: 100},
			MaxPriority:  notification.PriorityLow},
		"indie":      {Description: "One small business sending its own notifications.", RatePerMinute: limit(50)},
		"startup":    {Description: "A growing product with several senders and channels.", RatePerMinute: limit(200), Weight: limit(2)},
		"enterprise": {Description: "Large volumes and negotiated terms.", Weight: limit(4)},
	}
}

// WithDefaults is the built-in plans with p over them: a plan p names that
// is not built in is added; one that is keeps each field p leaves out
// from the built-in plan, so a config file can change one setting of
// "startup" without restating the rest.
func (p Plans) WithDefaults() Plans {
	merged := BuiltinPlans()
	for name, plan := range p {
		builtin := merged[name]
		if plan.MonthlyQuota == nil {
			plan.MonthlyQuota = builtin.MonthlyQuota
		}
		merged[name] = Plan{
			Description:   cmp.Or(plan.Description, builtin.Description),
			RatePerMinute: cmp.Or(plan.RatePerMinute, builtin.RatePerMinute),
			Burst:         cmp.Or(plan.Burst, builtin.Burst),
			MonthlyQuota:  plan.MonthlyQuota,
			MaxPriority:   cmp.Or(plan.MaxPriority, builtin.MaxPriority),
			Weight:        cmp.Or(plan.Weight, builtin.Weight),
		}
	}
	return merged
}

// Names are the plans' names, sorted.
func (p Plans) Names() []string {
	return slices.Sorted(maps.Keys(p))
}

// Validate reports every plan whose name cannot be stored with a tenant,
// and every setting out of range, naming each as the config file does
// (plans.<name>.<setting>).
func (p Plans) Validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	for _, name := range p.Names() {
		plan := p[name]
		if !namePattern.MatchString(name) {
			add("plans.%s: %q is not a plan name (1 to 64 letters, digits, '-' or '_')", name, name)
		}
		if plan.RatePerMinute != nil && *plan.RatePerMinute < 0 {
			add("plans.%s.rate_per_minute: %d is negative (0 is no limit)", name, *plan.RatePerMinute)
		}
		if plan.Burst != nil && *plan.Burst < 0 {
			add("plans.%s.burst: %d is negative", name, *plan.Burst)
		}
		if _, _, limited := plan.Rate(); plan.Burst != nil && *plan.Burst > 0 && !limited {
			add("plans.%s.burst: a burst needs a rate_per_minute", name)
		}
		for _, c := range slices.Sorted(maps.Keys(plan.MonthlyQuota)) {
			switch q := plan.MonthlyQuota[c]; {
			case !slices.Contains(event.Channels, c):
				add("plans.%s.monthly_quota.%s: not a channel (%s)", name, c, joined(event.Channels))
			case q < 1:
				add("plans.%s.monthly_quota.%s: %d; a quota is at least 1 (leave the channel out for none)", name, c, q)
			}
		}
		if w := plan.Weight; w != nil && (*w < 1 || *w > MaxWeight) {
			add("plans.%s.weight: %d; a weight is 1 to %d (leave it out for the plan's default)", name, *w, MaxWeight)
		}
		if plan.MaxPriority != "" && !slices.Contains(notification.Priorities, plan.MaxPriority) {
			add("plans.%s.max_priority: %q is not a priority (%s)", name, plan.MaxPriority, joined(notification.Priorities))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

func joined[S ~string](values []S) string {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}
