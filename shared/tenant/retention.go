package tenant

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/ledger"
)

// Retention is how long Herald keeps a tenant's data. A zero period is the
// platform's: history as long as the ledger keeps notifications
// (ledger.retention), documents as documents.retention says (forever
// unless set), inbox items as inbox.retention says (90 days unless set).
type Retention struct {
	// History is how long a notification stays listed after its last
	// change.
	History Period `json:"history,omitzero"`
	// Payloads is how long a rendered document (which holds the order's
	// parties and their addresses) is kept after it was stored, unless a
	// notification carrying it may still be sent.
	Payloads Period `json:"payloads,omitzero"`
	// Inbox is how long an item stays in a subscriber's in-app feed after
	// it was written, read or not.
	Inbox Period `json:"inbox,omitzero"`
}

// The bounds of a retention period. A day at least: the sweep runs hourly,
// and a notification still being retried must stay listed and its document
// readable. Ten years at most: longer is a typo, not a policy. History is
// further bounded by the ledger (Registry).
const (
	MinRetention = 24 * time.Hour
	MaxRetention = 3650 * 24 * time.Hour
)

// retentionField is one period of a retention, by name.
type retentionField struct {
	name string
	of   func(*Retention) *Period
}

// retentionFields are the periods a retention names, as --retention and
// the API spell them.
var retentionFields = []retentionField{
	{"history", func(r *Retention) *Period { return &r.History }},
	{"payloads", func(r *Retention) *Period { return &r.Payloads }},
	{"inbox", func(r *Retention) *Period { return &r.Inbox }},
}

// problems lists what is wrong with r, each naming its field.
func (r Retention) problems() []string {
	var out []string
	for _, f := range retentionFields {
		switch p := *f.of(&r); {
		case p == 0:
		case p.Duration() < MinRetention:
			out = append(out, fmt.Sprintf("retention.%s: %s is shorter than a day, the least Herald keeps anything", f.name, p))
		case p.Duration() > MaxRetention:
			out = append(out, fmt.Sprintf("retention.%s: %s is longer than %s, the most Herald keeps anything", f.name, p, Period(MaxRetention)))
		}
	}
	return out
}

// SetRetention applies "history=90d,payloads=30d,inbox=30d" to r: each named period
// is set, one given empty ("history=") goes back to the platform's, and
// those not named stay. Every problem names its field; on any, r is left
// as it was.
func SetRetention(r *Retention, spec string) error {
	out := *r
	var problems []string
	for part := range strings.SplitSeq(spec, ",") {
		name, value, ok := strings.Cut(part, "=")
		if !ok || !slices.ContainsFunc(retentionFields, func(f retentionField) bool { return f.name == name }) {
			problems = append(problems, fmt.Sprintf("retention: %q is not history=PERIOD, payloads=PERIOD or inbox=PERIOD", part))
			continue
		}
		if err := out.Set(name, value); err != nil {
			problems = append(problems, err.(*ValidationError).Problems...)
		}
	}
	if len(problems) > 0 {
		return &ValidationError{Problems: problems}
	}
	*r = out
	return nil
}

// Set sets the period named field (history, payloads or inbox) to value, read as
// ParsePeriod does; a *ValidationError naming the field says why not.
func (r *Retention) Set(field, value string) error {
	i := slices.IndexFunc(retentionFields, func(f retentionField) bool { return f.name == field })
	if i < 0 {
		return &ValidationError{Problems: []string{fmt.Sprintf("retention.%s: not a retention (history, payloads, inbox)", field)}}
	}
	p, err := ParsePeriod(value)
	if err != nil {
		return &ValidationError{Problems: []string{fmt.Sprintf("retention.%s: %v", field, err)}}
	}
	*retentionFields[i].of(r) = p
	return nil
}

// Period is a retention period. It reads and writes as operators type it:
// "90d", "36h" (a Go duration also reads).
type Period time.Duration

// Duration is p as a time.Duration.
func (p Period) Duration() time.Duration { return time.Duration(p) }

// String is p in whole days if it is some, else in hours, else as Go
// writes a duration.
func (p Period) String() string {
	d := time.Duration(p)
	switch {
	case d != 0 && d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d != 0 && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return d.String()
}

// daysPattern is a period in days; the digits are bounded so that the
// product cannot overflow.
var daysPattern = regexp.MustCompile(`^([0-9]{1,6})d$`)

// errPeriod says what a period looks like.
var errPeriod = errors.New("is not a period like 90d or 12h")

// ParsePeriod reads "90d", "12h" or any Go duration; "" is 0 (the
// platform's). A negative period is refused.
func ParsePeriod(s string) (Period, error) {
	if s == "" {
		return 0, nil
	}
	if m := daysPattern.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return Period(time.Duration(n) * 24 * time.Hour), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || event.CheckText(s) != nil {
		return 0, fmt.Errorf("%q %w", s, errPeriod)
	}
	return Period(d), nil
}

// MarshalText writes p as String does.
func (p Period) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads p as ParsePeriod does.
func (p *Period) UnmarshalText(b []byte) error {
	v, err := ParsePeriod(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// ledgerStream is the delivery ledger's stream: its max age is how long
// notifications are remembered, so the most a tenant's history can be.
const ledgerStream = "KV_" + ledger.Bucket

// ledgerRetention is how long the ledger keeps a notification, read from
// its stream; 0 when it cannot say (no ledger declared).
func ledgerRetention(ctx context.Context, js jetstream.JetStream) (time.Duration, error) {
	s, err := js.Stream(ctx, ledgerStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("tenant: reading the ledger's retention: %w", err)
	}
	return s.CachedInfo().Config.MaxAge, nil
}

// checkHistory refuses a history longer than the ledger keeps: its rows go
// with the ledger's entries, so the promise could not be kept.
func checkHistory(t Tenant, ledgerKeeps time.Duration) error {
	if h := t.Retention.History.Duration(); ledgerKeeps > 0 && h > ledgerKeeps {
		return &ValidationError{Problems: []string{fmt.Sprintf(
			"retention.history: %s is longer than the ledger keeps notifications (%s, ledger.retention)",
			t.Retention.History, Period(ledgerKeeps))}}
	}
	return nil
}

// Retentions are the retention of every tenant in the cache that sets one
// of its own, by tenant id.
func (c *Cache) Retentions() map[string]Retention {
	out := map[string]Retention{}
	for _, id := range c.mirror.Keys() {
		if t, ok := c.Lookup(id); ok && t.Retention != (Retention{}) {
			out[id] = t.Retention
		}
	}
	return out
}
