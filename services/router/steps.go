package router

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// Step is one step of a route's workflow (Route.Steps): exactly one of its
// fields is set. A route without steps sends once, at once, as if its
// steps were one send. With steps, each recipient the route reaches gets
// a run that takes them in order (services/workflow).
type Step struct {
	// Send plans the route's notifications to the run's recipient — or,
	// with roles, to the event's recipients in those roles (escalation).
	Send *SendStep `yaml:"send,omitempty" json:"send,omitempty"`
	// Wait holds the run for a time, until a time, or until an event of
	// the order arrives (which ends the run).
	Wait *WaitStep `yaml:"wait,omitempty" json:"wait,omitempty"`
	// Throttle lets at most limit runs per key and period go on; the
	// others end, recorded as skipped.
	Throttle *ThrottleStep `yaml:"throttle,omitempty" json:"throttle,omitempty"`
	// Digest gathers the runs with the same key until its window closes
	// (or max_items), then goes on once with all of them.
	Digest *DigestStep `yaml:"digest,omitempty" json:"digest,omitempty"`
	// Window holds the run until the recipient's local sending hours.
	Window *WindowStep `yaml:"window,omitempty" json:"window,omitempty"`
}

// SendStep sends the route's notification.
type SendStep struct {
	// Channels are the channels used, where the recipient has them.
	// Defaults to the route's channels.
	Channels []event.Channel `yaml:"channels,omitempty" json:"channels,omitempty"`
	// Fallback reaches the recipient on the first of these that works.
	// Defaults to the route's fallback when channels are not set either.
	Fallback []event.Channel `yaml:"fallback,omitempty" json:"fallback,omitempty"`
	// Template renders the message. Defaults to the route's template.
	Template string `yaml:"template,omitempty" json:"template,omitempty"`
	// Roles, when set, address the event's recipients in these roles
	// instead of the run's recipient (an escalation to the buyer).
	// Defaults to the run's recipient.
	Roles []string `yaml:"roles,omitempty" json:"roles,omitempty"`
}

// WaitStep holds a run. At least one bound is set: For, Until or
// UntilEvent (with For or Until, the event ends the run early).
type WaitStep struct {
	// For is how long the run waits, at most 60 days (runs are kept 90).
	// Defaults to no duration.
	For Duration `yaml:"for,omitempty" json:"for,omitempty"`
	// Until is an RFC 3339 time, or a template over the event's data
	// giving one, when the wait ends. Defaults to none.
	Until string `yaml:"until,omitempty" json:"until,omitempty"`
	// UntilEvent is an event type (order.confirmed) whose arrival, for the
	// same order, ends the wait and the run. Defaults to none.
	UntilEvent string `yaml:"until_event,omitempty" json:"until_event,omitempty"`
	// UntilStatus (delivered; read, after a send on channel inbox) ends the
	// wait when the previous send's notification reaches that state.
	// Defaults to none.
	UntilStatus string `yaml:"until_status,omitempty" json:"until_status,omitempty"`
}

// ThrottleStep lets at most Limit runs per Key go on in each Per.
type ThrottleStep struct {
	// Key is a template over the event's data ("{{.Stock.SKU}}").
	Key string `yaml:"key" json:"key"`
	// Limit is how many runs per key and period go on. Defaults to 1.
	Limit int `yaml:"limit,omitempty" json:"limit,omitempty"`
	// Per is the period, at most 30 days.
	Per Duration `yaml:"per" json:"per"`
}

// DigestStep gathers runs by key, then goes on once with all of them.
type DigestStep struct {
	// Key is a template over the event's data ("{{.Stock.Warehouse}}").
	Key string `yaml:"key" json:"key"`
	// Window is how long a digest gathers after its first item, at most
	// 30 days. Either window or cron is set.
	Window Duration `yaml:"window,omitempty" json:"window,omitempty"`
	// MaxItems ends the digest early when it holds this many (at most
	// 1,000). Defaults to 1,000: a digest that gathers more sends them in
	// several messages.
	MaxItems int `yaml:"max_items,omitempty" json:"max_items,omitempty"`
	// Cron (five fields: minute hour day-of-month month day-of-week,
	// "0 8 * * *") sends the digest at fixed times instead.
	Cron string `yaml:"cron,omitempty" json:"cron,omitempty"`
	// Timezone of the cron: an IANA name, or "recipient". Defaults to UTC.
	Timezone string `yaml:"timezone,omitempty" json:"timezone,omitempty"`
}

// WindowStep holds a run until the recipient's local window opens.
type WindowStep struct {
	// Days are the days the window opens (mon … sun). Defaults to every day.
	Days []string `yaml:"days,omitempty" json:"days,omitempty"`
	// From is the local time it opens, HH:MM[:SS].
	From string `yaml:"from" json:"from"`
	// To is the local time it closes, HH:MM[:SS]; before From, the
	// window spans midnight.
	To string `yaml:"to" json:"to"`
	// Timezone is an IANA name, or "recipient" (the subscriber's or the
	// event recipient's, else the tenant's default). Defaults to recipient.
	Timezone string `yaml:"timezone,omitempty" json:"timezone,omitempty"`
	// UnlessPriority lets runs of this priority through at any hour.
	// Defaults to none.
	UnlessPriority notification.Priority `yaml:"unless_priority,omitempty" json:"unless_priority,omitempty"`
}

// Duration is a span written with s, m, h or d ("90s", "24h", "2d",
// "1d12h"): a day is 24 hours.
type Duration time.Duration

// ParseDuration reads a Duration: Go's syntax, plus whole days.
func ParseDuration(s string) (Duration, error) {
	rest, days := s, 0
	if before, after, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.Atoi(before)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("duration %q: want a number of s, m, h or d, such as 90s, 24h or 2d", Quoted(s))
		}
		rest, days = after, n
	}
	d := time.Duration(0)
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil {
			return 0, fmt.Errorf("duration %q: want a number of s, m, h or d, such as 90s, 24h or 2d", Quoted(s))
		}
	}
	return Duration(time.Duration(days)*24*time.Hour + d), nil
}

// UnmarshalText reads "24h", "2d".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	*d = v
	return err
}

// MarshalText writes Go's form ("48h0m0s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// MarshalJSON writes the text form, not nanoseconds.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads the text form.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"24h\" or \"2d\"")
	}
	return d.UnmarshalText([]byte(s))
}
