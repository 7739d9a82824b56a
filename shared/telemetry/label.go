package telemetry

import (
	"sync"

	"github.com/heraldhq/herald/shared/event"
)

// Values a bounded label takes instead of the value it was given.
const (
	// Other stands for every value beyond a label's limit.
	Other = "other"
	// Invalid stands for a value that could not be a real one.
	Invalid = "invalid"
)

// DefaultMaxTenants is how many tenants a process labels metrics with by
// default (metrics.max_tenants).
const DefaultMaxTenants = 100

// Labels bounds the values of one metric label that publishers choose,
// such as the tenant: every value becomes a time series, so 2,000 events
// with random tenants would otherwise make 2,000 of them, for every metric
// that carries the label. The first max valid values seen are kept as
// they are; later ones are counted as Other, values that fail the shape
// check as Invalid. One Labels is shared by every service of a process, so
// the bound holds for the process. Safe for concurrent use.
type Labels struct {
	max   int
	valid func(string) bool
	mu    sync.RWMutex
	seen  map[string]struct{}
}

// NewLabels bounds a label to max distinct values that pass valid.
func NewLabels(max int, valid func(string) bool) *Labels {
	return &Labels{max: max, valid: valid, seen: map[string]struct{}{}}
}

// NewTenantLabels bounds the tenant label to max tenants.
func NewTenantLabels(max int) *Labels { return NewLabels(max, event.ValidTenant) }

// Value is what to label a measurement of v with. The empty value (a
// message without one) stays empty.
func (l *Labels) Value(v string) string {
	if v == "" {
		return ""
	}
	l.mu.RLock()
	_, ok := l.seen[v]
	full := len(l.seen) >= l.max
	l.mu.RUnlock()
	switch {
	case ok:
		return v
	case !l.valid(v):
		return Invalid
	case full:
		// Once full, a flood of new values (the case the bound is for)
		// reads under the shared lock only.
		return Other
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[v]; ok || len(l.seen) < l.max {
		l.seen[v] = struct{}{}
		return v
	}
	return Other
}
