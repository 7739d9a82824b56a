// Package history keeps the notification index (package shared/history)
// up to date, so that GET /v1/notifications lists a tenant's notifications
// without reading the ledger.
//
// It reads three feeds with durable consumers named "history":
//   - the ledger's own changes: every write to the bucket deliveries is a
//     message on its KV stream, carrying the whole entry — claimed
//     (sending), retrying, delivered, failed. The KV revision orders them,
//     so a change read twice, or late, never moves a row back;
//   - notify.accepted.<tenant> in STATUS: the notifications the router and
//     the API created, listed as pending until a worker claims them;
//   - the subscribers bucket's own changes (its KV stream), for GET
//     /v1/subscribers to list and search tenants' subscribers (subscribers.go).
//
// Messages are written in batches, one transaction each, and acknowledged
// only once it committed; a failed write is redelivered. The index is
// derived: replaying the feeds from the start rebuilds it.
package history

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/telemetry"
)

// The consumers the service reads.
const (
	LedgerStream = "KV_" + ledger.Bucket
	StatusStream = "STATUS"
	Durable      = "history"
)

// Store is where the rows go (history.Store).
type Store interface {
	Accept(ctx context.Context, rows []history.Row) error
	Apply(ctx context.Context, rows []history.Row) error
	Forget(ctx context.Context, before time.Time) (int64, error)
	ForgetTenant(ctx context.Context, tenant string, before time.Time) (int64, error)
	Unsent(ctx context.Context, tenant string) ([]history.DocumentUse, error)
	ByProviderMessage(ctx context.Context, messageID string) ([]history.Row, error)
	ApplySubscribers(ctx context.Context, changes []history.SubscriberChange) error
}

// Config configures the service.
type Config struct {
	// Store is the index. Required.
	Store Store
	// Retention is how long a row is kept after its last change: the
	// ledger's own retention, so the listing names nothing the ledger
	// forgot. Defaults to 90 days.
	Retention time.Duration
	// BatchSize is the most messages written in one transaction.
	// Defaults to 500.
	BatchSize int
	// RetryDelay is how long a batch the index refused waits before it is
	// delivered again. Defaults to 5s.
	RetryDelay time.Duration

	// Registry is where tenants' own retention is read (a tenant.Cache):
	// the sweep removes a tenant's rows and documents by it. Nil: every
	// tenant keeps the platform's.
	Registry Retentions
	// SweepInterval is how often the retention sweep runs. Defaults to an
	// hour; negative: never (a test calls Sweep).
	SweepInterval time.Duration
	// IndexWait is how long the sweep waits for the index to take a
	// tenant's newest notifications before removing its documents; past
	// it, they wait for the next sweep. Defaults to 10s.
	IndexWait time.Duration
	// Now is the sweep's clock. Defaults to time.Now.
	Now func() time.Time
	// Tenants bounds the tenant label of the sweep's metric. Defaults to
	// telemetry.DefaultMaxTenants.
	Tenants *telemetry.Labels

	// Logger defaults to discarding.
	Logger *slog.Logger
	// MeterProvider defaults to a no-op provider.
	MeterProvider metric.MeterProvider
}

// WithDefaults returns the config with every unset field filled in.
func (c Config) WithDefaults() Config {
	c.Retention = cmp.Or(c.Retention, 90*24*time.Hour)
	c.BatchSize = cmp.Or(c.BatchSize, 500)
	c.RetryDelay = cmp.Or(c.RetryDelay, 5*time.Second)
	c.SweepInterval = cmp.Or(c.SweepInterval, time.Hour)
	c.IndexWait = cmp.Or(c.IndexWait, 10*time.Second)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Tenants == nil {
		c.Tenants = telemetry.NewTenantLabels(telemetry.DefaultMaxTenants)
	}
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
	}
	return c
}

// Validate checks a config WithDefaults filled in.
func (c Config) Validate() error {
	switch {
	case c.Store == nil:
		return errors.New("history.url: the history service needs the index (postgres://… or sqlite:PATH)")
	case c.Retention < 0:
		return fmt.Errorf("ledger.retention: must not be negative (got %s)", c.Retention)
	case c.BatchSize < 1:
		return fmt.Errorf("history: batch size must be positive (got %d)", c.BatchSize)
	}
	return nil
}

// Service is the history service.
type Service struct {
	cfg     Config
	js      jetstream.JetStream
	loops   consumer.Group
	joins   consumer.Group
	reports reports
	work    chan queued
	written sync.WaitGroup
	cancel  context.CancelFunc
	sweep   sync.WaitGroup
	rows    metric.Int64Counter
	fails   metric.Int64Counter
	swept   metric.Int64Counter
}

// New returns the service.
func New(js jetstream.JetStream, cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, js: js, work: make(chan queued, 2*cfg.BatchSize)}
	m := cfg.MeterProvider.Meter("github.com/heraldhq/herald/services/history")
	var errs [4]error
	s.rows, errs[0] = m.Int64Counter("herald.history.rows",
		metric.WithDescription("Changes written to the index, by feed (accepted, ledger, subscribers)."))
	s.fails, errs[1] = m.Int64Counter("herald.history.write_failures",
		metric.WithDescription("Batches the index refused; their messages are redelivered."))
	s.reports = reports{index: cfg.Store, js: js}
	s.reports.joined, errs[2] = m.Int64Counter("herald.history.reports",
		metric.WithDescription("Provider reports joined to their notification (outcome joined), or found already kept (repeated), by provider and kind."))
	s.swept, errs[3] = m.Int64Counter("herald.retention.removed",
		metric.WithDescription("What the retention sweep removed: notification rows (kind history) and rendered documents (kind documents), by tenant (empty: the platform's retention, every tenant at once)."))
	return s, errors.Join(errs[:]...)
}

// Start consumes the feeds and starts the retention sweep.
func (s *Service) Start(ctx context.Context) (err error) {
	s.written.Go(s.write)
	// One handler per message of a batch, each waiting for its batch to
	// be written; pull ahead a batch's worth so batches fill.
	s.loops.Config = consumer.Config{JetStream: s.js, Concurrency: s.cfg.BatchSize, Buffer: s.cfg.BatchSize,
		Logger: s.cfg.Logger, MeterProvider: s.cfg.MeterProvider}
	defer func() {
		if err != nil { // stop what did start: nobody else will
			_ = s.Stop(ctx)
		}
	}()
	for _, stream := range []string{LedgerStream, StatusStream, SubscribersStream} {
		cons, err := consumer.Lookup(ctx, s.js, stream, Durable)
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		if err := s.loops.Start(ctx, cons, s.queue); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	if err := s.startReports(ctx); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.sweep.Go(func() { s.forgetLoop(bg) })
	return nil
}

// Stop drains the consumers, writes what they handed over, and stops the
// sweep.
func (s *Service) Stop(ctx context.Context) error {
	err := errors.Join(s.joins.Stop(ctx), s.loops.Stop(ctx))
	close(s.work)
	s.written.Wait()
	if s.cancel != nil {
		s.cancel()
	}
	s.sweep.Wait()
	return err
}

// queued is a message waiting for its batch, and where to say how the
// batch went.
type queued struct {
	msg     jetstream.Msg
	settled chan<- consumer.Outcome
}

// queue hands msg to the writer and waits for its batch to be written.
func (s *Service) queue(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	settled := make(chan consumer.Outcome, 1)
	s.work <- queued{msg: msg, settled: settled}
	select {
	case o := <-settled:
		return o
	case <-ctx.Done():
		return consumer.Leave()
	}
}

// write takes the queued messages in batches — whatever is queued, up to
// BatchSize — so a quiet stream is written at once and a busy one in few
// transactions.
func (s *Service) write() {
	ctx := context.Background()
	batch := make([]queued, 0, s.cfg.BatchSize)
	for q := range s.work {
		batch = append(batch[:0], q)
	fill:
		for len(batch) < s.cfg.BatchSize {
			select {
			case q, ok := <-s.work:
				if !ok {
					break fill
				}
				batch = append(batch, q)
			default:
				break fill
			}
		}
		s.flush(ctx, batch)
	}
}

// flush writes one batch and says how to settle its messages: done once
// written, redelivered after a pause if the index refused it. A message
// that can never become a row (another shape) is given up, saying why.
func (s *Service) flush(ctx context.Context, batch []queued) {
	var c changes
	keep := batch[:0:0]
	for _, q := range batch {
		if err := c.add(q.msg); err != nil {
			q.settled <- consumer.GiveUp(fmt.Errorf("not indexable: %w", err))
			continue
		}
		keep = append(keep, q)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := c.write(wctx, s.cfg.Store)
	outcome := consumer.Done()
	if err != nil {
		s.fails.Add(ctx, 1)
		s.cfg.Logger.WarnContext(ctx, "the notification index refused a batch; it will be redelivered",
			"messages", len(keep), "error", err)
		outcome = consumer.Retry(fmt.Errorf("the notification index refused the batch: %w", err), s.cfg.RetryDelay, time.Minute)
	} else {
		s.rows.Add(ctx, int64(len(c.accepted)), metric.WithAttributes(attribute.String("feed", "accepted")))
		s.rows.Add(ctx, int64(len(c.applied)), metric.WithAttributes(attribute.String("feed", "ledger")))
		s.rows.Add(ctx, int64(len(c.subscribers)), metric.WithAttributes(attribute.String("feed", "subscribers")))
	}
	for _, q := range keep {
		q.settled <- outcome
	}
}

// acceptedRows reads a record of notifications created: each pending, or
// skipped with its reason.
func acceptedRows(msg jetstream.Msg) ([]history.Row, error) {
	var a notification.Accepted
	if err := json.Unmarshal(msg.Data(), &a); err != nil {
		return nil, fmt.Errorf("unreadable accepted record: %w", err)
	}
	rows := make([]history.Row, len(a.Notifications))
	for i, n := range a.Notifications {
		rows[i] = history.Row{Tenant: a.Tenant, ID: n.ID, Order: n.Order, Document: n.Document, Channel: n.Channel,
			Recipient: n.Recipient, State: history.Pending, CreatedAt: a.Time, UpdatedAt: a.Time}
		if n.State == notification.Skipped {
			rows[i].State, rows[i].Reason = history.Skipped, n.Reason
		}
	}
	return rows, nil
}

// ledgerRows reads a ledger change: the entry at a revision, keyed
// $KV.deliveries.<tenant>.<digest> — the digest is the notification id's.
// A delete or purge changes nothing listed (the ledger never deletes; its
// entries expire, as rows do by Forget).
func ledgerRows(msg jetstream.Msg) ([]history.Row, error) {
	if op := msg.Headers().Get("KV-Operation"); op != "" {
		return nil, nil
	}
	md, err := msg.Metadata()
	if err != nil {
		return nil, err
	}
	tokens := strings.Split(msg.Subject(), ".")
	if len(tokens) != 4 {
		return nil, fmt.Errorf("not a ledger key: %s", msg.Subject())
	}
	var e ledger.Entry
	if err := json.Unmarshal(msg.Data(), &e); err != nil {
		return nil, fmt.Errorf("unreadable ledger entry: %w", err)
	}
	created := e.UpdatedAt
	if len(e.Attempts) > 0 && len(e.Attempts) == e.Tries && e.Attempts[0].Time.Before(created) {
		created = e.Attempts[0].Time
	}
	return []history.Row{{Tenant: tokens[2], ID: "ntf_" + tokens[3], Order: e.Order, Document: e.Document,
		Channel: e.Channel, Recipient: e.Recipient, State: string(e.State), Reason: e.Reason, Provider: e.Provider,
		ProviderMessageID: e.ProviderMessageID, Tries: e.Tries, CreatedAt: created, UpdatedAt: e.UpdatedAt,
		Revision: md.Sequence.Stream}}, nil
}
