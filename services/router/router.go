// Package router decides who hears about each business event. It consumes
// ORDERS and INVENTORY with the durable consumer "router", applies the routes
// (YAML config, with the defaults docs/ARCHITECTURE.md describes built in),
// and publishes one delivery per recipient per channel to
// notify.<channel>.<priority>.<tenant> with
// Nats-Msg-Id set to the delivery's dedupe key. It never talks to a provider.
//
// Deliveries that carry a document wait for it instead, in render requests
// on docs.render.<doc_type> (split to fit the max payload, identified by
// the deliveries they carry: see documents.MsgID and documents.Split).
// Every delivery an event produced, sent or waiting, is then named in one
// notification.Accepted record on notify.accepted.<tenant>, so it is listed
// as pending before any worker claims it.
//
// An event is acknowledged only after every delivery it produced is stored,
// and its Accepted record too, so a crash mid-way redelivers the event and
// what is republished is dropped by the duplicate windows of NOTIFY, DOCS
// and STATUS. An event that is malformed, lists more than MaxRecipients,
// or would need a message larger than the max payload (its Accepted record
// included) is dead-lettered with its reason and terminated; so is one whose
// last allowed delivery fails, one published on a subject bound to another
// tenant (orders.<name>.<tenant>: "tenant mismatch"), and one whose tenant
// the registry does not admit (Config.Registry). An event no route applies
// to is acknowledged and counted, and so is a tenant's event routed before
// (EventsBucket: the same tenant and id, for an hour), whatever its
// Nats-Msg-Id.
package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Durable is the router's consumer name on each input stream.
const Durable = "router"

// Streams are the input streams the router consumes.
var Streams = []string{"ORDERS", "INVENTORY"}

// Service is the router.
type Service struct {
	cfg     Config
	js      jetstream.JetStream
	seen    jetstream.KeyValue
	loops   consumer.Group
	events  metric.Int64Counter
	planned metric.Int64Counter
	dupes   metric.Int64Counter
	docs    metric.Int64Counter
	skipped metric.Int64Counter
	// unplanned counts the notifications recorded as skipped (Decision.Unplanned).
	unplanned metric.Int64Counter
	// dir is the recipients' watched copy, when the router keeps one
	// (Config.Recipients unset).
	dir *directory
	// fanout plans large topics a page at a time (fanout.go); gate lets
	// the events being routed go ahead of it (gate.go).
	fanout *consumer.Fair
	gate   *gate
	// sends plans the workflow runs' send steps (runs.go); runEvents are
	// the event types the workflow service hears of.
	sends     *consumer.Fair
	runEvents []string
	// workflows are the tenants' own, when the router follows them
	// (Config.Workflows unset).
	workflows *workflowIndex
}

// New validates cfg (after filling its defaults) and returns a router.
func New(js jetstream.JetStream, cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, js: js, gate: newGate(fanoutPatience), runEvents: RunEventTypes(cfg.Routes)}
	m := cfg.MeterProvider.Meter("github.com/heraldhq/herald/services/router")
	var errs [6]error
	s.events, errs[0] = m.Int64Counter("herald.router.events", metric.WithDescription("Events the router consumed, by type and outcome (routed, unrouted, no_recipients, invalid, refused, duplicate)."))
	s.planned, errs[1] = m.Int64Counter("herald.router.deliveries", metric.WithDescription("Deliveries the router published, by channel and priority: to NOTIFY, or waiting in their document's render request."))
	s.skipped, errs[2] = m.Int64Counter("herald.router.skipped", metric.WithDescription("Recipient channels not published because this deployment does not deliver on them."))
	s.dupes, errs[3] = m.Int64Counter("herald.router.duplicates", metric.WithDescription("Deliveries already stored (a republished or redelivered event), dropped by the duplicate window of NOTIFY or DOCS."))
	s.docs, errs[4] = m.Int64Counter("herald.router.documents", metric.WithDescription("Render requests the router published, each with the deliveries that wait for the document."))
	s.unplanned, errs[5] = m.Int64Counter("herald.router.unplanned", metric.WithDescription("Notifications the router did not plan, recorded as skipped in the history, by reason: preference (the subscriber's, or the tenant's default) or no_recipient (a subscriber, account or topic that named nobody)."))
	return s, errors.Join(errs[:]...)
}

// Start consumes every input stream.
func (s *Service) Start(ctx context.Context) error {
	seen, err := s.js.KeyValue(ctx, EventsBucket)
	if err != nil {
		return fmt.Errorf("router: the %s bucket: %w", EventsBucket, err)
	}
	s.seen = seen
	if s.cfg.Recipients == nil {
		// Loaded before the first event is consumed: a reference resolves
		// against every record there is, not the part loaded so far.
		if s.dir, err = watchDirectory(ctx, s.js); err != nil {
			return err
		}
		s.cfg.Recipients = s.dir
	}
	if s.cfg.Workflows == nil {
		if s.workflows, err = watchWorkflows(ctx, s.js); err != nil {
			return fmt.Errorf("router: %w", err)
		}
		s.cfg.Workflows = s.workflows
	}
	s.loops.Config = consumer.Config{JetStream: s.js, Concurrency: s.cfg.Concurrency, Logger: s.cfg.Logger,
		TracerProvider: s.cfg.TracerProvider, MeterProvider: s.cfg.MeterProvider}
	for _, stream := range Streams {
		c, err := consumer.Lookup(ctx, s.js, stream, Durable)
		if err != nil {
			return fmt.Errorf("router: %w", err)
		}
		if err := s.loops.Start(ctx, c, s.handle); err != nil {
			return fmt.Errorf("router: %w", err)
		}
	}
	if err := s.startFanout(ctx); err != nil {
		return err
	}
	return s.startSends(ctx)
}

// Stop drains: events being routed finish and are acknowledged. Then the
// recipients' watches end.
func (s *Service) Stop(ctx context.Context) error {
	err := s.loops.Stop(ctx)
	for _, f := range []*consumer.Fair{s.fanout, s.sends} {
		if f != nil {
			err = errors.Join(err, f.Stop(ctx))
		}
	}
	if s.dir != nil {
		s.dir.Stop()
	}
	if s.workflows != nil {
		s.workflows.Stop()
	}
	return err
}

func (s *Service) handle(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	s.gate.enter()
	fansOut := false
	defer func() { s.gate.leave(fansOut) }()
	ctx, span := telemetry.Start(ctx, "route")
	defer span.End()
	d, invalid, err := s.decide(ctx, msg.Headers(), msg.Data())
	if err != nil {
		return consumer.Retry(err, 2*time.Second, time.Minute)
	}
	fansOut = len(d.fanouts) > 0
	md, _ := msg.Metadata()
	if md != nil {
		d.stamp(md.Timestamp.UTC())
	}
	if invalid == nil {
		invalid = s.admit(msg.Subject(), &d)
	}
	if invalid == nil {
		routed, err := s.routedBefore(ctx, d.Event)
		if err != nil {
			return consumer.Retry(err, 2*time.Second, time.Minute)
		}
		if routed {
			d = Decision{Event: d.Event, Outcome: Duplicate}
		}
	}
	if invalid == nil && d.Outcome != Duplicate {
		invalid = d.fit(s.js.Conn().MaxPayload())
	}
	if invalid == nil && d.Outcome != Duplicate {
		if invalid, err = s.sequence(ctx, &d); err != nil {
			return consumer.Retry(err, 2*time.Second, time.Minute)
		}
	}
	span.SetAttributes(
		attribute.String("cloudevents.event_id", d.Event.ID), attribute.String("cloudevents.event_type", d.Event.Type),
		attribute.String("cloudevents.event_source", d.Event.Source), attribute.String("herald.tenant", d.Event.Tenant),
		attribute.String("herald.outcome", string(d.Outcome)), attribute.Int("herald.deliveries", d.planned()),
		attribute.Int("herald.documents", len(d.Renders)))
	log := s.cfg.Logger.With("event_id", d.Event.ID, "type", d.Event.Type, "tenant", d.Event.Tenant, "subject", msg.Subject())
	s.events.Add(ctx, 1, metric.WithAttributes(
		attribute.String("type", typeLabel(d.Event.Type)), attribute.String("tenant", s.cfg.Tenants.Value(d.Event.Tenant)),
		attribute.String("outcome", string(d.Outcome))))
	if d.Skipped > 0 {
		s.skipped.Add(ctx, int64(d.Skipped), metric.WithAttributes(attribute.String("tenant", s.cfg.Tenants.Value(d.Event.Tenant))))
	}
	s.countUnplanned(ctx, d)
	if invalid != nil {
		span.SetStatus(codes.Error, invalid.Error())
		log.WarnContext(ctx, "dead-lettering event", "reason", invalid.Error())
		return consumer.GiveUp(invalid)
	}
	if d.Outcome == Duplicate {
		log.DebugContext(ctx, "event routed before: acknowledged without routing it again")
		return consumer.Done()
	}
	if err := s.publish(ctx, d, nil); err != nil {
		span.SetStatus(codes.Error, err.Error())
		log.ErrorContext(ctx, "publishing deliveries failed; the event will be redelivered", "error", err)
		return consumer.Retry(fmt.Errorf("routing failed: %w", err), 2*time.Second, time.Minute)
	}
	var storedAt time.Time
	if md != nil {
		storedAt = md.Timestamp.UTC()
	}
	if err := s.requestFanouts(ctx, d, storedAt); err != nil {
		span.SetStatus(codes.Error, err.Error())
		log.ErrorContext(ctx, "asking for a topic's fan-out failed; the event will be redelivered", "error", err)
		return consumer.Retry(fmt.Errorf("routing failed: %w", err), 2*time.Second, time.Minute)
	}
	if err := errors.Join(s.publishRuns(ctx, d, storedAt), s.tellRuns(ctx, d.Event, d.subject)); err != nil {
		span.SetStatus(codes.Error, err.Error())
		log.ErrorContext(ctx, "a workflow run was not told; the event will be redelivered", "error", err)
		return consumer.Retry(fmt.Errorf("routing failed: %w", err), 2*time.Second, time.Minute)
	}
	if err := s.remember(ctx, d.Event, md); err != nil {
		// Routed all the same: a later copy is routed again, and what it
		// republishes is dropped downstream (see remember).
		log.WarnContext(ctx, "the routed event is not remembered", "error", err)
	}
	log.DebugContext(ctx, "event routed", "outcome", d.Outcome, "deliveries", d.planned(), "documents", len(d.Renders), "skipped", d.Skipped)
	return consumer.Done()
}

// decide plans the event with the router's recipients (decideWith).
func (s *Service) decide(ctx context.Context, header nats.Header, payload []byte) (d Decision, invalid, err error) {
	return s.cfg.decideWith(ctx, s.dir, header, payload, time.Now().UTC())
}

// decideWith plans the event, and plans it again with what the recipient
// buckets hold of the subscribers and accounts it named that dir, the
// watched copy, did not have yet (at most MaxRecipients reads, over two
// rounds: an account, then its members). Without dir, c's own Recipients
// plan it. The error, when set, is a bucket that could not be read.
func (c Config) decideWith(ctx context.Context, dir *directory, header nats.Header, payload []byte, now time.Time) (d Decision, invalid, err error) {
	if dir == nil {
		d, invalid = c.decide(header, payload, now)
		return d, invalid, nil
	}
	c.Recipients = dir
	d, invalid = c.decide(header, payload, now)
	over := dir.overlay()
	for round := 0; invalid == nil && len(d.missing) > 0 && round < 2; round++ {
		found, err := dir.fetch(ctx, d.Event.Tenant, d.missing, over, c.MaxRecipients)
		if err != nil || !found {
			return d, nil, err
		}
		c.Recipients = over
		d, invalid = c.decide(header, payload, now)
	}
	return d, invalid, nil
}

// unplannedLabel is a skipped notification's reason as a metric label.
func unplannedLabel(reason string) string {
	if strings.HasPrefix(reason, notification.Skipped+": preference") {
		return "preference"
	}
	return "no_recipient"
}

// publish sends the deliveries that need no document to NOTIFY, and each
// document's render requests (with the deliveries that wait for it) to DOCS,
// and counts which NOTIFY stored and which it already had. Then it records
// every one of them as accepted (notification.Accepted), so the listing
// shows them pending before any worker claims them. With yield set (a
// fan-out page), the deliveries go fanoutWindow at a time, yield asked
// before each part.
func (s *Service) publish(ctx context.Context, d Decision, yield func(context.Context)) error {
	for _, r := range d.Renders {
		body, err := json.Marshal(r)
		if err != nil {
			return err
		}
		msg := nats.NewMsg(documents.Subject(r.Type, r.Tenant))
		msg.Data = body
		msg.Header.Set(jetstream.MsgIDHeader, documents.MsgID(r))
		ack, err := telemetry.PublishMsg(ctx, s.js, msg)
		if err != nil {
			return fmt.Errorf("requesting %s: %w", r.Object, err)
		}
		s.docs.Add(ctx, 1, metric.WithAttributes(attribute.String("type", r.Type), attribute.String("tenant", s.cfg.Tenants.Value(r.Tenant))))
		for _, waiting := range r.Deliveries {
			s.countDelivery(ctx, waiting, ack.Duplicate)
		}
	}
	if len(d.sends) != len(d.Deliveries) {
		return errors.New("deliveries not encoded: fit the decision before publishing it")
	}
	step := len(d.sends)
	if yield != nil {
		step = fanoutWindow
	}
	for from := 0; from < len(d.sends); from += step {
		if yield != nil {
			yield(ctx)
		}
		acks, err := notification.PublishMsgs(ctx, s.js, d.sends[from:min(from+step, len(d.sends))])
		if err != nil {
			return err
		}
		for i, ack := range acks {
			s.countDelivery(ctx, d.Deliveries[from+i], ack.Duplicate)
		}
	}
	// Failing to record them fails the event as any other publish does: it
	// is redelivered, its deliveries and render requests, already stored,
	// are dropped as duplicates (Nats-Msg-Id), and the record is tried
	// again. Acknowledging without it would keep them out of the listing
	// until a worker claims them, and nothing would say why.
	if err := notification.PublishAccepted(ctx, s.js, d.accepted(time.Now())); err != nil {
		return fmt.Errorf("recording the accepted notifications: %w", err)
	}
	return nil
}

// countDelivery counts a delivery stored — in NOTIFY, or waiting in its
// document's render request — or found already stored (a duplicate).
func (s *Service) countDelivery(ctx context.Context, d notification.Delivery, duplicate bool) {
	counter := s.planned
	if duplicate {
		counter = s.dupes
	}
	counter.Add(ctx, 1, metric.WithAttributes(attribute.String("channel", string(d.Channel)),
		attribute.String("priority", string(d.Priority)), attribute.String("tenant", s.cfg.Tenants.Value(d.Tenant))))
}

var typePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}\.[a-z][a-z0-9_]{0,31}$`)

// typeLabel keeps the type label to values of a sane shape, so a stream of
// garbage events cannot create unbounded time series. (Tenants, which any
// publisher picks freely, are bounded in number too: Config.Tenants.)
func typeLabel(t string) string {
	if t == "" || typePattern.MatchString(t) {
		return t
	}
	return telemetry.Invalid
}
