package router

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/telemetry"
)

// FanoutStream is the work queue of topic fan-out pages
// (streams/FANOUT), on fanout.<tenant>. A topic larger than
// Config.FanoutPage is not planned with its event: the event asks for its
// first page there, and each page, once planned and published, asks for
// the next — so a topic of 50,000 never holds the router, a crash replans
// at most one page (whose deliveries NOTIFY's duplicate window drops), and
// tenants' pages are served in turn (consumer.Fair, keyed by tenant).
const FanoutStream = "FANOUT"

// fanoutClass names the loop's consumers: router-fanout_<tenant>.
const fanoutClass = "router-fanout"

// fanoutTemplate is each tenant's consumer: a page is planned and
// published within seconds; one that keeps failing is dead-lettered.
var fanoutTemplate = jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute,
	MaxDeliver: 10, MaxAckPending: 100, MaxWaiting: 512}

func fanoutSubject(tenant string) string { return "fanout." + tenant }

// fanout asks for one page of a topic's members to be planned for an
// event's route: the members after Cursor (sorted by id), FanoutPage of
// them.
type fanout struct {
	Tenant string `json:"tenant"`
	// Event is the event as the router read it, structured.
	Event    json.RawMessage `json:"event"`
	StoredAt time.Time       `json:"stored_at"`
	Route    Route           `json:"route"`
	// Entry is the event's recipient entry that named the topic: its
	// role, channels and locale.
	Entry  event.Recipient `json:"entry"`
	Cursor string          `json:"cursor,omitempty"`
}

// msgID names the page: its event, route, entry and cursor. A page asked
// for twice (its event routed again, the page before replanned after a
// crash) is stored once.
func (f fanout) msgID(eventID string) string {
	route, _ := json.Marshal(f.Route)
	entry, _ := json.Marshal(f.Entry)
	h := sha256.New()
	for _, part := range [][]byte{[]byte(f.Tenant), []byte(eventID), route, entry, []byte(f.Cursor)} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write(part)
	}
	return "fanout:" + hex.EncodeToString(h.Sum(nil))
}

// page plans one page of f's topic; next asks for the page after it, nil
// after the last. The error, when set, says why the request is invalid.
func (c Config) page(f fanout, now time.Time) (d Decision, next *fanout, invalid error) {
	ev, data, err := event.Read(f.Event)
	if err == nil && ev.Tenant != f.Tenant {
		err = fmt.Errorf("forged fan-out request: tenant %q's, for an event of tenant %q", f.Tenant, ev.Tenant)
	}
	if err != nil {
		return Decision{Event: ev, Outcome: Invalid}, nil, err
	}
	p := planner{cfg: c, ev: ev, now: now, seen: map[string]bool{}, dir: c.Recipients}
	if p.dir == nil {
		p.dir = nobody{}
	}
	members := p.dir.Members(ev.Tenant, f.Entry.Topic)
	from, found := slices.BinarySearch(members, f.Cursor)
	if found {
		from++
	}
	to := min(from+c.FanoutPage, len(members))
	a := stockAbout(ev, event.Stock{})
	if data.Order != nil {
		a = orderAbout(data.Order.Order)
	} else if data.Stock != nil {
		a = stockAbout(ev, data.Stock.Stock)
	}
	for _, id := range members[from:to] {
		if sub, ok := p.dir.Subscriber(ev.Tenant, id); ok {
			p.fanOut(f.Route, target{entry: f.Entry, sub: &sub}, a)
		}
	}
	if data.Order != nil {
		p.out = p.waitForDocuments(data.Order.Order, p.out)
	}
	d = Decision{Event: ev, Outcome: NoRecipients, Deliveries: p.out, Renders: p.renders, Skipped: p.skipped, Unplanned: p.unplanned}
	if d.planned() > 0 {
		d.Outcome = Routed
	}
	if to < len(members) {
		n := f
		n.Cursor = members[to-1]
		next = &n
	}
	return d, next, nil
}

// startFanout serves the fan-out pages, tenants in turn.
func (s *Service) startFanout(ctx context.Context) error {
	// One page at a time: a fan-out is background work, and the events
	// the router routes meanwhile keep the other workers.
	cfg := s.loops.Config
	cfg.Concurrency = 1
	var err error
	s.fanout, err = consumer.StartFair(ctx, s.handlePage, consumer.FairConfig{Config: cfg, Stream: FanoutStream,
		Classes: []consumer.Class{{Name: fanoutClass, Prefix: "fanout", Weight: 1, Template: fanoutTemplate}}})
	if err != nil {
		return fmt.Errorf("router: the fan-out loop: %w", err)
	}
	return nil
}

// handlePage plans one page, asks for the next, and publishes the page's
// deliveries, render requests and Accepted record — all before the page is
// acknowledged, so a crash replans this page, whose deliveries the
// duplicate windows drop, and the next page is asked for once.
func (s *Service) handlePage(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	f, err := request(msg, "fan-out request", func(f fanout) string { return f.Tenant })
	if err != nil {
		return consumer.GiveUp(err)
	}
	// The events being routed go first: planning a page, and storing it,
	// take the CPU they would wait for (gate.go).
	s.gate.yield(ctx)
	d, next, invalid := s.cfg.page(f, time.Now().UTC())
	if invalid = s.settle(msg.Subject(), &d, f.StoredAt, invalid); invalid != nil {
		return consumer.GiveUp(invalid)
	}
	if invalid, err = s.sequence(ctx, &d); err != nil {
		return consumer.Retry(err, 2*time.Second, time.Minute)
	} else if invalid != nil {
		return consumer.GiveUp(invalid)
	}
	// The next page is asked for before this one is published or
	// acknowledged: a crash in between replans only this page, and the
	// request for the next, made again, is dropped as a duplicate.
	if next != nil {
		if err := s.requestPage(ctx, *next, d.Event.ID); err != nil {
			return consumer.Retry(err, 2*time.Second, time.Minute)
		}
	}
	s.countUnplanned(ctx, d)
	if err := s.publish(ctx, d, s.gate.yield); err != nil {
		return consumer.Retry(fmt.Errorf("publishing a fan-out page: %w", err), 2*time.Second, time.Minute)
	}
	if err := s.publishRuns(ctx, d, f.StoredAt); err != nil {
		return consumer.Retry(fmt.Errorf("starting a fan-out page's runs: %w", err), 2*time.Second, time.Minute)
	}
	return consumer.Done()
}

// request decodes a message of a loop served per tenant (what names it in
// errors) and refuses one whose tenant is not its subject's last token.
func request[T any](msg jetstream.Msg, what string, tenantOf func(T) string) (T, error) {
	var v T
	if err := json.Unmarshal(msg.Data(), &v); err != nil {
		return v, fmt.Errorf("malformed %s: %w", what, err)
	}
	if tenant := msg.Subject()[strings.LastIndexByte(msg.Subject(), '.')+1:]; tenant != tenantOf(v) {
		return v, fmt.Errorf("forged %s: tenant %q published on %s", what, tenantOf(v), msg.Subject())
	}
	return v, nil
}

// settle readies a decision planned outside an event's own routing (a
// fan-out page, a run's send) as handle readies an event's: stamped with
// when its event was stored, admitted for its tenant, measured against
// the connection's max payload. It returns why the decision is invalid.
func (s *Service) settle(subject string, d *Decision, storedAt time.Time, invalid error) error {
	d.stamp(storedAt)
	if invalid == nil {
		invalid = s.admit(subject, d)
	}
	if invalid == nil {
		invalid = d.fit(s.js.Conn().MaxPayload())
	}
	return invalid
}

// requestFanouts asks for the first page of each topic the event's
// decision left to the fan-out loop.
func (s *Service) requestFanouts(ctx context.Context, d Decision, storedAt time.Time) error {
	if len(d.fanouts) == 0 {
		return nil
	}
	body, err := json.Marshal(d.Event)
	if err != nil {
		return err
	}
	for _, f := range d.fanouts {
		f.Tenant, f.Event, f.StoredAt = d.Event.Tenant, body, storedAt
		if err := s.requestPage(ctx, f, d.Event.ID); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) requestPage(ctx context.Context, f fanout, eventID string) error {
	body, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := documents.Fit("a fan-out request", body, s.js.Conn().MaxPayload()); err != nil {
		return err
	}
	msg := nats.NewMsg(fanoutSubject(f.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, f.msgID(eventID))
	if _, err := telemetry.PublishMsg(ctx, s.js, msg); err != nil {
		return fmt.Errorf("asking for a page of topic %q: %w", f.Entry.Topic, err)
	}
	return nil
}

// countUnplanned counts the notifications not planned, by reason.
func (s *Service) countUnplanned(ctx context.Context, d Decision) {
	for _, n := range d.Unplanned {
		s.unplanned.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", unplannedLabel(n.Reason)),
			attribute.String("tenant", s.cfg.Tenants.Value(d.Event.Tenant))))
	}
}
