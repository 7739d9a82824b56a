package history

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/report"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/suppression"
)

// reports joins providers' reports (stream REPORTS) to their
// notifications: the index, which knows every provider message id a
// notification was accepted under, is what makes it the history service's
// work.
type reports struct {
	index interface {
		ByProviderMessage(ctx context.Context, messageID string) ([]history.Row, error)
	}
	js           jetstream.JetStream
	ledger       *ledger.Ledger
	suppressions *suppression.Store
	joined       metric.Int64Counter
}

// ReportsStream is where the providers' verified reports wait.
const ReportsStream = report.Stream

// startReports joins the reports, a few at a time: each is a handful of
// round trips.
func (s *Service) startReports(ctx context.Context) error {
	var err error
	if s.reports.ledger, err = ledger.Open(ctx, s.js); err != nil {
		return err
	}
	if s.reports.suppressions, err = suppression.Open(ctx, s.js); err != nil {
		return err
	}
	cons, err := consumer.Lookup(ctx, s.js, ReportsStream, Durable)
	if err != nil {
		return err
	}
	s.joins.Config = consumer.Config{JetStream: s.js, Concurrency: 8, Logger: s.cfg.Logger, MeterProvider: s.cfg.MeterProvider}
	return s.joins.Start(ctx, cons, s.reports.handle)
}

// Waiting for the index: a report can outrun the row of the notification
// it is about (SES's simulator bounces within a second). It is asked again
// after 2 s, doubling to a minute — the consumer's 30 deliveries wait about
// 25 minutes before the report is dead-lettered, saying which message id
// nothing was found under.
const (
	joinFirstWait = 2 * time.Second
	joinMaxWait   = time.Minute
)

// handle joins one report: the notification's ledger entry keeps it (once,
// however often the provider told it), a hard bounce or a complaint
// suppresses the address for the tenant, and the tenant is told on
// notify.status.<tenant>. The entry is written last: a report it has is
// done, so a crash before that repeats the suppression and the status
// event, which are the same the second time.
func (r *reports) handle(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	var rep report.Report
	if err := json.Unmarshal(msg.Data(), &rep); err != nil {
		return consumer.GiveUp(fmt.Errorf("not a report: %w", err))
	}
	if err := rep.Check(); err != nil {
		return consumer.GiveUp(err)
	}
	row, err := r.find(ctx, rep)
	if err != nil {
		return consumer.Retry(err, joinFirstWait, joinMaxWait)
	}
	e, err := r.ledger.ByID(ctx, row.Tenant, row.ID)
	if err != nil {
		// The index names it, so the ledger has it unless it expired.
		return consumer.Retry(fmt.Errorf("reading notification %s/%s: %w", row.Tenant, row.ID, err), joinFirstWait, joinMaxWait)
	}
	if e.HasReport(rep.Provider, rep.EventID) {
		r.count(ctx, rep, "repeated")
		return consumer.Done()
	}
	if e.Channel != string(event.ChannelWebhook) && (rep.Suppresses() || rep.Kind == report.Unsubscribed && e.Unsubscribable != "") {
		if err := r.suppress(ctx, e, rep); err != nil {
			return consumer.Retry(err, time.Second, joinMaxWait)
		}
	}
	st := notification.Status{NotificationID: e.NotificationID, DedupeKey: e.DedupeKey, Tenant: e.Tenant,
		Channel: event.Channel(e.Channel), Provider: e.Provider, ProviderMessageID: e.ProviderMessageID,
		Tries: e.Tries, Time: rep.Time}
	if err := notification.PublishReport(ctx, r.js, st, rep); err != nil {
		return consumer.Retry(fmt.Errorf("telling the tenant: %w", err), time.Second, joinMaxWait)
	}
	e.Report(rep)
	if err := r.ledger.Put(ctx, &e); err != nil {
		// A conflict is a worker or another report writing the entry
		// meanwhile: read it again.
		return consumer.Retry(fmt.Errorf("keeping the report in %s/%s: %w", e.Tenant, e.NotificationID, err), 100*time.Millisecond, joinMaxWait)
	}
	r.count(ctx, rep, "joined")
	return consumer.Done()
}

// find is the notification the report is about: the one accepted under
// its message id — of the report's tenant, when a tenant's own account
// made it, so that no tenant speaks of another's messages.
func (r *reports) find(ctx context.Context, rep report.Report) (history.Row, error) {
	rows, err := r.index.ByProviderMessage(ctx, rep.MessageID)
	if err != nil {
		return history.Row{}, err
	}
	for _, row := range rows {
		if rep.Tenant == "" || row.Tenant == rep.Tenant {
			return row, nil
		}
	}
	return history.Row{}, fmt.Errorf("no notification %shas %s message id %s (yet)", whose(rep.Tenant), rep.Provider, rep.MessageID)
}

func whose(tenant string) string {
	if tenant == "" {
		return ""
	}
	return "of tenant " + tenant + " "
}

// suppress keeps the tenant from sending to the address again on the
// notification's channel — on every channel, when the provider says the
// address itself is at fault — or, when the recipient unsubscribed through
// the provider, from sending it the notification's category. The
// provider's words are kept printable: the entry is listed in terminals.
func (r *reports) suppress(ctx context.Context, e ledger.Entry, rep report.Report) error {
	reason, category := suppression.HardBounce, ""
	switch rep.Kind {
	case report.Complained:
		reason = suppression.Complaint
	case report.Unsubscribed:
		reason, category = suppression.Unsubscribed, e.Unsubscribable
	}
	channel := event.Channel(e.Channel)
	// The trail says which provider's report suppressed it, as inbound took it.
	ctx = resource.WithActor(ctx, "inbound:"+rep.Provider)
	if rep.EveryChannel {
		channel = ""
	}
	_, err := r.suppressions.Add(ctx, suppression.Entry{
		Tenant: e.Tenant, Channel: channel, Address: cmp.Or(e.Recipient, rep.Recipient), Reason: reason,
		Detail: event.Printable(rep.Detail), Category: category, CreatedAt: rep.Time,
		Source: event.Printable(fmt.Sprintf("%s event %s (notification %s)", rep.Provider, rep.EventID, e.NotificationID)),
	})
	if err != nil && !errors.Is(err, suppression.ErrInvalid) {
		return fmt.Errorf("suppressing the address: %w", err)
	}
	return nil // the store refused the entry (no address, or none its channel sends to): nothing to suppress
}

func (r *reports) count(ctx context.Context, rep report.Report, outcome string) {
	r.joined.Add(ctx, 1, metric.WithAttributes(attribute.String("provider", rep.Provider),
		attribute.String("kind", string(rep.Kind)), attribute.String("outcome", outcome)))
}
