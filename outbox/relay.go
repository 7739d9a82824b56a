package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/heraldhq/herald/shared/event"
)

// RelayConfig tunes a Relay; the zero value is usable.
type RelayConfig struct {
	// Batch is how many rows one transaction publishes. Defaults to 500.
	Batch int
	// Poll is how long the relay waits for a notification before it looks
	// anyway. SQLite has no notifications: its relay waits this long each
	// time it finds nothing. Defaults to 1s on PostgreSQL, 100ms on SQLite.
	Poll time.Duration
	// Retention is how long published rows are kept before they are
	// deleted. Defaults to 24h.
	Retention time.Duration
	// PublishTimeout bounds the wait for a batch's acknowledgements.
	// Defaults to 10s.
	PublishTimeout time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
	// MeterProvider defaults to a no-op provider.
	MeterProvider metric.MeterProvider
}

// WithDefaults fills what is unset.
func (c RelayConfig) WithDefaults() RelayConfig {
	c.Batch = cmp.Or(c.Batch, 500)
	c.Poll = cmp.Or(c.Poll, time.Second)
	c.Retention = cmp.Or(c.Retention, 24*time.Hour)
	c.PublishTimeout = cmp.Or(c.PublishTimeout, 10*time.Second)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
	}
	return c
}

// Validate names the field that is wrong.
func (c RelayConfig) Validate() error {
	var errs []error
	if c.Batch < 1 || c.Batch > 10_000 {
		errs = append(errs, fmt.Errorf("outbox.batch: %d must be between 1 and 10000", c.Batch))
	}
	if c.Poll < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("outbox.poll: %s must be at least 10ms", c.Poll))
	}
	if c.Retention < time.Minute {
		errs = append(errs, fmt.Errorf("outbox.retention: %s must be at least 1m", c.Retention))
	}
	return errors.Join(errs...)
}

// Relay publishes an outbox's rows to JetStream. Any number may run on one
// table: they take turns, one batch at a time.
type Relay struct {
	db  *DB
	js  jetstream.JetStream
	cfg RelayConfig
	m   relayMetrics

	stop context.CancelFunc
	done chan struct{}
	// failing is the error being reported, so that an outage is logged
	// when it starts and when it ends, not once per batch.
	failing string
}

// NewRelay is a relay of db's rows to js.
func NewRelay(db *DB, js jetstream.JetStream, cfg RelayConfig) (*Relay, error) {
	if cfg.Poll == 0 && db.s.kind() == "sqlite" {
		cfg.Poll = 100 * time.Millisecond // a look costs one indexed query
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Relay{db: db, js: js, cfg: cfg}
	if err := r.m.register(cfg.MeterProvider.Meter("github.com/heraldhq/herald/outbox"), db); err != nil {
		return nil, err
	}
	return r, nil
}

// Start runs the relay until Stop.
func (r *Relay) Start(ctx context.Context) error {
	ctx, r.stop = context.WithCancel(context.WithoutCancel(ctx))
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		r.Run(ctx)
	}()
	return nil
}

// Stop lets the batch in flight finish, then returns.
func (r *Relay) Stop(ctx context.Context) error {
	if r.stop == nil {
		return nil
	}
	r.stop()
	select {
	case <-r.done:
		return r.m.unregister()
	case <-ctx.Done():
		return fmt.Errorf("outbox relay: %w", ctx.Err())
	}
}

// Run publishes until ctx is done. A batch in flight when it is done
// finishes first, so that what was published is marked.
func (r *Relay) Run(ctx context.Context) {
	var backoff time.Duration
	var purged time.Time
	w := r.db.s.waiter()
	defer w.close()
	for ctx.Err() == nil {
		n, err := r.once(ctx)
		switch {
		case errors.Is(err, errBusy):
			w.wait(ctx, r.cfg.Poll)
			continue
		case err != nil:
			r.report(err)
			backoff = min(max(2*backoff, 100*time.Millisecond), 30*time.Second)
			sleep(ctx, backoff)
			continue
		}
		r.report(nil)
		backoff = 0
		if time.Since(purged) > time.Minute {
			r.purge(ctx)
			purged = time.Now()
		}
		if n < r.cfg.Batch {
			w.wait(ctx, r.cfg.Poll)
		}
	}
}

// once publishes one batch. Its database work outlives ctx by a while, so
// that a stop marks what was just published.
func (r *Relay) once(ctx context.Context) (int, error) {
	dbctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.PublishTimeout+30*time.Second)
	defer cancel()
	var transient error
	n, err := r.db.s.batch(dbctx, r.cfg.Batch, func(rows []row) []result {
		results := r.publish(dbctx, rows)
		for _, res := range results {
			switch {
			case res.err == nil:
			case res.permanent:
				r.m.errors.Add(ctx, 1, metric.WithAttributes(attribute.String("class", "permanent")))
				r.cfg.Logger.Error("outbox row given up: it stays in the table with failed_at and last_error set",
					"id", res.id, "error", res.err)
			default:
				r.m.errors.Add(ctx, 1, metric.WithAttributes(attribute.String("class", "transient")))
				transient = cmp.Or(transient, res.err)
			}
		}
		return results
	})
	if err == nil && transient != nil {
		err = fmt.Errorf("publishing: %w", transient)
	}
	return n, err
}

// publish sends rows in id order without waiting between them, then waits
// for every acknowledgement: a row is published when JetStream has stored
// it (or had it already: a duplicate after a crash).
func (r *Relay) publish(ctx context.Context, rows []row) []result {
	results := make([]result, len(rows))
	futures := make([]jetstream.PubAckFuture, len(rows))
	for i, w := range rows {
		results[i].id = w.id
		m, err := w.msg()
		if err == nil {
			futures[i], err = r.js.PublishMsgAsync(m)
		}
		if err != nil {
			results[i].err, results[i].permanent = err, permanent(err)
		}
	}
	acks, cancel := context.WithTimeoutCause(ctx, r.cfg.PublishTimeout,
		fmt.Errorf("no acknowledgement within %s", r.cfg.PublishTimeout))
	defer cancel()
	var published, duplicates int64
	for i, f := range futures {
		if f == nil {
			continue
		}
		ack, err := await(acks, f)
		if err != nil {
			results[i].err, results[i].permanent = err, permanent(err)
			continue
		}
		published++
		if ack.Duplicate {
			duplicates++
		}
	}
	r.m.published.Add(ctx, published)
	r.m.duplicates.Add(ctx, duplicates)
	return results
}

// await is f's outcome; one that has arrived counts even once ctx is done.
func await(ctx context.Context, f jetstream.PubAckFuture) (*jetstream.PubAck, error) {
	select {
	case ack := <-f.Ok():
		return ack, nil
	case err := <-f.Err():
		return nil, err
	default:
	}
	select {
	case ack := <-f.Ok():
		return ack, nil
	case err := <-f.Err():
		return nil, err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// msg is the row as the message it holds. A row that is an event (a
// tenant and an id, in ce- headers or a structured event's body) goes with
// the Nats-Msg-Id Herald's publishers give it, event.MsgID, whatever the
// row says: an id another tenant can guess, such as the bare event id,
// would let that tenant have the stream drop it as a duplicate. Any other
// row needs a Nats-Msg-Id of its own, or an event id to take as one:
// without one, a relay restart could publish it twice.
func (w row) msg() (*nats.Msg, error) {
	if !validSubject(w.subject) {
		return nil, errBadRow{fmt.Errorf("subject %q is not one a message can be published on", w.subject)}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(w.headers, &raw); err != nil {
		return nil, errBadRow{fmt.Errorf("headers are not a JSON object: %w", err)}
	}
	h := nats.Header{}
	for k, v := range raw {
		var one string
		if json.Unmarshal(v, &one) == nil {
			h.Set(k, one)
			continue
		}
		var many []string
		if err := json.Unmarshal(v, &many); err != nil {
			return nil, errBadRow{fmt.Errorf("header %q is neither a string nor an array of strings", k)}
		}
		h[k] = many
	}
	switch tenant, id := w.event(h); {
	case tenant != "" && id != "":
		h.Set(nats.MsgIdHdr, event.MsgID(tenant, id, w.payload))
	case h.Get(nats.MsgIdHdr) != "":
	case id != "": // no tenant: an event the router will refuse, under its own id
		h.Set(nats.MsgIdHdr, id)
	default:
		return nil, errBadRow{errors.New("no Nats-Msg-Id header and no event id to take it from: published without one, a relay restart could send it twice")}
	}
	return &nats.Msg{Subject: w.subject, Header: h, Data: w.payload}, nil
}

// event is the tenant and id of the CloudEvent a row holds: from its ce-
// headers in binary mode, else from a structured event's body.
func (w row) event(h nats.Header) (tenant, id string) {
	if h.Get("ce-id") != "" {
		return h.Get("ce-tenant"), h.Get("ce-id")
	}
	var ev struct {
		ID     string `json:"id"`
		Tenant string `json:"tenant"`
	}
	_ = json.Unmarshal(w.payload, &ev)
	return ev.Tenant, ev.ID
}

// validSubject is a subject a message can be published on: dot-separated
// tokens, none empty or a wildcard, no spaces or control characters (which
// would break the protocol line).
func validSubject(s string) bool {
	if s == "" || len(s) > 1024 {
		return false
	}
	for tok := range strings.SplitSeq(s, ".") {
		if tok == "" || tok == "*" || tok == ">" {
			return false
		}
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f })
}

// errBadRow is a row no number of tries can publish.
type errBadRow struct{ error }

func (e errBadRow) Unwrap() error { return e.error }

// permanent is whether err is about the row rather than the moment: a bad
// row, a subject or size NATS refuses, or JetStream's refusal of the
// request itself. An unreachable server, a timeout or no stream (which
// JetStream reports the same way as being away) are worth another try.
func permanent(err error) bool {
	var bad errBadRow
	var api *jetstream.APIError
	return errors.As(err, &bad) || errors.Is(err, nats.ErrBadSubject) || errors.Is(err, nats.ErrMaxPayload) ||
		errors.As(err, &api) && api.Code == 400
}

// report logs an outage when it starts or changes and when it ends.
func (r *Relay) report(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	switch {
	case msg == r.failing:
	case err == nil:
		r.cfg.Logger.Info("outbox relay publishing again")
	default:
		r.cfg.Logger.Warn("outbox relay cannot publish; retrying with back-off", "error", err)
	}
	r.failing = msg
}

func (r *Relay) purge(ctx context.Context) {
	before := time.Now().Add(-r.cfg.Retention)
	for ctx.Err() == nil {
		n, err := r.db.s.purge(ctx, before, 10_000)
		if err != nil {
			r.cfg.Logger.Warn("outbox relay: deleting published rows", "error", err)
			return
		}
		if n < 10_000 {
			return
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// relayMetrics: published per second is the rate of published.
type relayMetrics struct {
	published, duplicates, errors metric.Int64Counter
	gauges                        metric.Registration
}

func (m *relayMetrics) register(meter metric.Meter, db *DB) error {
	var errs [7]error
	m.published, errs[0] = meter.Int64Counter("herald.outbox.published",
		metric.WithDescription("Outbox rows published to JetStream (duplicates included)."))
	m.duplicates, errs[1] = meter.Int64Counter("herald.outbox.duplicates",
		metric.WithDescription("Outbox rows JetStream already had: published again after a relay stopped before marking them."))
	m.errors, errs[2] = meter.Int64Counter("herald.outbox.publish_errors",
		metric.WithDescription("Outbox rows not published, by class: transient (retried) or permanent (given up, failed_at set)."))
	backlog, err3 := meter.Int64ObservableGauge("herald.outbox.backlog",
		metric.WithDescription("Outbox rows waiting to be published."))
	age, err4 := meter.Float64ObservableGauge("herald.outbox.oldest_age", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest waiting outbox row has waited."))
	failed, err5 := meter.Int64ObservableGauge("herald.outbox.failed",
		metric.WithDescription("Outbox rows given up on, kept with their reason."))
	errs[3], errs[4], errs[5] = err3, err4, err5
	m.gauges, errs[6] = meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		st, err := db.Status(ctx)
		if err != nil {
			return err
		}
		o.ObserveInt64(backlog, st.Backlog)
		o.ObserveFloat64(age, st.Age(time.Now()).Seconds())
		o.ObserveInt64(failed, st.Failed)
		return nil
	}, backlog, age, failed)
	return errors.Join(errs[:]...)
}

func (m *relayMetrics) unregister() error {
	if m.gauges == nil {
		return nil
	}
	return m.gauges.Unregister()
}
