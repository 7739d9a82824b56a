package webhooks

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
)

// MaxRedeliveries bounds one redelivery: a longer range is sent in parts,
// each with --since past the last one's.
const MaxRedeliveries = 1000

// MaxRange and MaxLedgerReads bound what one redelivery reads of the
// ledger: a range spans at most a day, and its reading stops, refused, past
// MaxLedgerReads of the tenant's ledger writes (each notification writes
// two or more: its claim, its outcome, what providers report) — a busy
// tenant narrows the range.
const (
	MaxRange       = 24 * time.Hour
	MaxLedgerReads = 10_000
)

// OutcomeStream is where a range's webhooks are found: the ledger's
// writes, each settling write an outcome, kept as long as the ledger keeps
// its entries (ledger.retention, 90 days).
const OutcomeStream = "KV_" + ledger.Bucket

// BadRedelivery is a redelivery that cannot be done as asked: the request
// itself, not Herald's stores, is at fault.
type BadRedelivery struct{ Reason string }

func (b BadRedelivery) Error() string { return "webhooks: " + b.Reason }

func badRedelivery(format string, args ...any) error {
	return BadRedelivery{fmt.Sprintf(format, args...)}
}

// ErrTooMany is a range holding more than MaxRedeliveries webhooks.
var ErrTooMany error = BadRedelivery{fmt.Sprintf("more than %d webhooks to redeliver; narrow the range (since, until)", MaxRedeliveries)}

// Redelivery asks for webhooks to be sent again: one, by its notification
// id, or every one whose outcome was told between Since and Until —
// optionally only those to one endpoint, or only those that failed.
//
// Each is sent again as it was: the same webhook-id and body (so a receiver
// that deduplicates by webhook-id drops it, and one that lost it takes it),
// signed afresh with the endpoint's current secrets. It is a new
// notification, with its own ledger entry naming the original
// (redelivery_of), leased, retried and dead-lettered as any; its dedupe key
// names the redelivery's ID, so asking again under the same ID sends
// nothing twice, and a new ID sends again.
type Redelivery struct {
	Tenant string
	// ID names this redelivery, "rd_" and up to 64 letters, digits, '_' or
	// '-'. Generated when empty.
	ID string
	// Message is one webhook's notification id (ntf_…). Or:
	Message string
	// Since and Until bound a range by when each webhook's outcome was
	// told. Until defaults to now.
	Since, Until time.Time
	// Endpoint, when set, keeps only the webhooks to this endpoint (id).
	Endpoint string
	// FailedOnly keeps only the webhooks that failed.
	FailedOnly bool
	// DryRun lists what would be sent, and sends nothing.
	DryRun bool
	// Admit, when set, is asked before anything is sent, with how many
	// webhooks are about to be: an error sends none, and Redeliver returns
	// it as it is. Not asked on a dry run, or when there is nothing to send.
	Admit func(ctx context.Context, n int) error

	// maxReads is MaxLedgerReads, but in tests.
	maxReads int
}

// Redelivered is what a redelivery sent (or, dry, would send).
type Redelivered struct {
	ID     string   `json:"id"`
	Tenant string   `json:"tenant"`
	DryRun bool     `json:"dry_run,omitempty"`
	Sent   []Resent `json:"sent"`
	// Skipped are the range's webhooks that cannot be sent again, each
	// with why.
	Skipped []Skipped `json:"skipped,omitempty"`
}

// Resent is one webhook sent again.
type Resent struct {
	// Of is the original notification; NotificationID, the redelivery's.
	Of             string `json:"of"`
	NotificationID string `json:"notification_id"`
	Endpoint       string `json:"endpoint"`
	// State is the original's outcome.
	State string `json:"state"`
}

// Skipped is a webhook a redelivery could not send again.
type Skipped struct {
	NotificationID string `json:"notification_id"`
	Reason         string `json:"reason"`
}

var redeliveryID = regexp.MustCompile(`^rd_[A-Za-z0-9_-]{1,64}$`)

// check validates r and fills in its defaults.
func (r *Redelivery) check(now time.Time) error {
	switch {
	case r.Tenant == "":
		return badRedelivery("a redelivery names its tenant")
	case r.ID != "" && !redeliveryID.MatchString(r.ID):
		return badRedelivery("redelivery id %q: want rd_ and up to 64 letters, digits, '_' or '-'", r.ID)
	case (r.Message == "") == r.Since.IsZero():
		return badRedelivery("a redelivery names one message or a range (since), not both")
	case r.Message != "" && (!r.Until.IsZero() || r.FailedOnly):
		return badRedelivery("until and failed-only select from a range (since), not one message")
	}
	if r.Message == "" {
		r.Until = cmp.Or(r.Until, now)
		switch {
		case !r.Since.Before(r.Until):
			return badRedelivery("the range is empty: since %s is not before until %s",
				r.Since.Format(time.RFC3339), r.Until.Format(time.RFC3339))
		case r.Until.Sub(r.Since) > MaxRange:
			return badRedelivery("the range spans %s, more than the %s one redelivery may read; narrow it (since, until)",
				r.Until.Sub(r.Since).Round(time.Second), MaxRange)
		}
	}
	r.maxReads = cmp.Or(r.maxReads, MaxLedgerReads)
	if r.ID == "" {
		r.ID = "rd_" + strings.ToLower(rand.Text())
	}
	return nil
}

// Redeliver sends r's webhooks again. progress, when set, is called as the
// range is read, with how many outcomes were read so far.
func (s *Store) Redeliver(ctx context.Context, js jetstream.JetStream, l *ledger.Ledger, r Redelivery, progress func(read int)) (Redelivered, error) {
	if err := r.check(s.now()); err != nil {
		return Redelivered{}, err
	}
	if r.Endpoint != "" {
		if _, err := s.Get(ctx, r.Tenant, r.Endpoint); err != nil {
			return Redelivered{}, err
		}
	}
	out := Redelivered{ID: r.ID, Tenant: r.Tenant, DryRun: r.DryRun, Sent: []Resent{}}
	ids := []string{r.Message}
	if r.Message == "" {
		var err error
		if ids, err = rangeOf(ctx, js, r, progress); err != nil {
			return out, err
		}
	}
	var (
		deliveries []notification.Delivery
		originals  = map[string]bool{}
	)
	for _, id := range ids {
		d, state, err := s.redelivery(ctx, l, r, id)
		var skip skipped
		switch {
		case r.Message != "" && errors.As(err, &skip):
			return out, badRedelivery("%s cannot be redelivered: %s", id, skip)
		case r.Message != "" && errors.Is(err, errFiltered):
			return out, badRedelivery("%s was not sent to endpoint %s", id, r.Endpoint)
		case errors.As(err, &skip):
			out.Skipped = append(out.Skipped, Skipped{NotificationID: id, Reason: string(skip)})
			continue
		case errors.Is(err, errFiltered) || originals[d.RedeliveryOf]:
			continue // a webhook and its redelivery are one
		case err != nil:
			return out, err
		}
		originals[d.RedeliveryOf] = true
		deliveries = append(deliveries, d)
		out.Sent = append(out.Sent, Resent{Of: d.RedeliveryOf, NotificationID: d.ID, Endpoint: d.Recipient.Address, State: state})
	}
	if r.DryRun || len(deliveries) == 0 {
		return out, nil
	}
	if r.Admit != nil {
		if err := r.Admit(ctx, len(deliveries)); err != nil {
			return out, err
		}
	}
	if _, err := notification.Publish(ctx, js, deliveries); err != nil {
		return out, fmt.Errorf("webhooks: publishing the redeliveries: %w", err)
	}
	if err := notification.PublishAccepted(ctx, js, notification.AcceptedOf(r.ID, deliveries, s.now())); err != nil {
		return out, fmt.Errorf("webhooks: recording the redeliveries as accepted: %w", err)
	}
	return out, nil
}

// skipped is why a webhook cannot be sent again; errFiltered, a webhook
// the redelivery does not select.
type skipped string

func (s skipped) Error() string { return string(s) }

var errFiltered = errors.New("not selected")

// redelivery is the notification that sends the webhook id again, and the
// original's outcome.
func (s *Store) redelivery(ctx context.Context, l *ledger.Ledger, r Redelivery, id string) (notification.Delivery, string, error) {
	e, err := l.ByID(ctx, r.Tenant, id)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return notification.Delivery{}, "", skipped("the ledger has no such notification of the tenant")
	case err != nil:
		return notification.Delivery{}, "", fmt.Errorf("webhooks: reading %s from the ledger: %w", id, err)
	case e.Channel != string(event.ChannelWebhook):
		return notification.Delivery{}, "", skipped("a notification on the " + e.Channel + " channel, not a webhook")
	case e.State != ledger.Delivered && e.State != ledger.Failed:
		return notification.Delivery{}, "", skipped("still " + string(e.State) + ": it is being sent")
	case r.FailedOnly && e.State != ledger.Failed:
		return notification.Delivery{}, "", errFiltered
	case len(e.Delivery) == 0:
		return notification.Delivery{}, "", skipped("sent before Herald kept what each webhook carried")
	}
	d, err := notification.Decode(e.Delivery)
	if err != nil {
		return notification.Delivery{}, "", skipped("its ledger entry holds no readable delivery: " + err.Error())
	}
	endpoint, err := s.Find(ctx, r.Tenant, d.Recipient.Address)
	switch {
	case errors.Is(err, ErrNotFound):
		return notification.Delivery{}, "", skipped("its endpoint was removed")
	case err != nil:
		return notification.Delivery{}, "", err
	case r.Endpoint != "" && endpoint.ID != r.Endpoint:
		return notification.Delivery{}, "", errFiltered
	case endpoint.Status != Active:
		return notification.Delivery{}, "", skipped("its endpoint " + endpoint.ID + " is disabled; enable it first (herald webhooks enable)")
	}
	d.RedeliveryOf = cmp.Or(d.RedeliveryOf, d.ID)
	d.DedupeKey = r.Tenant + ":redelivery:" + r.ID + ":" + d.RedeliveryOf
	d.ID = notification.ID(d.DedupeKey)
	d.Recipient.Address = endpoint.ID
	d.Providers, d.Fallback, d.FallbackOf = nil, nil, nil
	return d, string(e.State), nil
}

// rangeOf reads the tenant's outcomes told between r.Since and r.Until and
// returns the webhooks among them, oldest first, each once (a
// redelivery's outcome names the webhook it sent again). It reads at most
// r.maxReads of the tenant's ledger writes.
func rangeOf(ctx context.Context, js jetstream.JetStream, r Redelivery, progress func(int)) ([]string, error) {
	stream, err := js.Stream(ctx, OutcomeStream)
	if err != nil {
		return nil, fmt.Errorf("webhooks: stream %s: %w", OutcomeStream, err)
	}
	since := r.Since
	c, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"$KV." + ledger.Bucket + "." + r.Tenant + ".>"},
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy, OptStartTime: &since,
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks: reading %s: %w", OutcomeStream, err)
	}
	var (
		ids  []string
		seen = map[string]bool{}
		read int
	)
	for {
		done, err := fetchOutcomes(ctx, c, r.Until, func(at time.Time, st notification.Status, outcome bool) error {
			if read++; read > r.maxReads {
				return badRedelivery("the range holds more than %d of the tenant's ledger writes, the most one redelivery reads "+
					"(the first %[1]d end before %s); narrow it (since, until)", r.maxReads, at.UTC().Format(time.RFC3339Nano))
			}
			if !outcome || st.Channel != event.ChannelWebhook || seen[st.NotificationID] {
				return nil
			}
			seen[st.NotificationID] = true
			if ids = append(ids, st.NotificationID); len(ids) > MaxRedeliveries {
				return ErrTooMany
			}
			return nil
		})
		if progress != nil {
			progress(read)
		}
		if err != nil || done {
			return ids, err
		}
	}
}

// fetchOutcomes reads one batch of the ledger's writes and passes on each,
// with when it was written and, if it is an outcome, what it told; done
// is whether the range ended in it: past until, or nothing left to read.
func fetchOutcomes(ctx context.Context, c jetstream.Consumer, until time.Time, fn func(at time.Time, st notification.Status, outcome bool) error) (done bool, err error) {
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	batch, err := c.Fetch(256, jetstream.FetchContext(fctx))
	if err != nil {
		return false, fmt.Errorf("webhooks: reading %s: %w", OutcomeStream, err)
	}
	done = true
	for msg := range batch.Messages() {
		md, err := msg.Metadata()
		if err != nil {
			return false, err
		}
		if md.Timestamp.After(until) {
			return true, nil
		}
		var (
			e       ledger.Entry
			st      notification.Status
			outcome bool
		)
		if json.Unmarshal(msg.Data(), &e) == nil {
			st, outcome = notification.OutcomeOf(e)
		}
		if err := fn(md.Timestamp, st, outcome); err != nil {
			return false, err
		}
		if done = md.NumPending == 0; done {
			return true, nil
		}
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		return false, fmt.Errorf("webhooks: reading %s: %w", OutcomeStream, err)
	}
	return done, ctx.Err()
}
