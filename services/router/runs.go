package router

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/telemetry"
)

// RunsStream carries workflow runs' messages (streams/RUNS): what the
// workflow service takes on runs.in.<tenant> (a run to start, an order's
// event), the waiting steps' schedules on runs.timer.<tenant>.<run>.<step>,
// and the sends the router plans on runs.send.<tenant>.
const RunsStream = "RUNS"

// RunsIn is the subject of tenant's messages to the workflow service.
func RunsIn(tenant string) string { return "runs.in." + tenant }

// RunsWake is where tenant's waiting steps' timers fire: a subject of its
// own, which the workflow service serves ahead of runs.in, so a timer due
// does not wait behind a burst of runs starting.
func RunsWake(tenant string) string { return "runs.wake." + tenant }

// RunsSend is the subject of tenant's send steps, for the router.
func RunsSend(tenant string) string { return "runs.send." + tenant }

// runsClass names the router's consumers of send steps: router-runs_<tenant>.
const runsClass = "router-runs"

// The kinds of message on runs.in.
const (
	RunStartKind = "start"
	RunEventKind = "event"
	RunWakeKind  = "wake"
	RunFlushKind = "flush"
	RunSentKind  = "sent"
)

// RunMessage is one message on runs.in.<tenant>: Kind says which of its
// parts is set.
type RunMessage struct {
	Kind  string    `json:"kind"`
	Start *RunStart `json:"start,omitempty"`
	Event *RunEvent `json:"event,omitempty"`
	Wake  *RunWake  `json:"wake,omitempty"`
	Flush *RunFlush `json:"flush,omitempty"`
	Sent  *RunSent  `json:"sent,omitempty"`
	// Status is a run's send's notification reaching a state
	// (RunStatusKind), told by a delivery service.
	Status *notification.RunStatus `json:"status,omitempty"`
}

// RunStart asks for a run: a workflow route reached a recipient.
type RunStart struct {
	// ID names the run: its tenant, event, route and recipient.
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	// Subject is what the run is about, for the events that end it: the
	// order's id, or the event's for events without an order.
	Subject string `json:"subject"`
	// Event is the event as the router read it, structured.
	Event    json.RawMessage `json:"event"`
	StoredAt time.Time       `json:"stored_at"`
	Route    Route           `json:"route"`
	// Recipient is the person: the contact the event wrote out, or a
	// reference to the subscriber (resolved again at each send, so a
	// change of address, or an erasure, is seen).
	Recipient event.Recipient `json:"recipient"`
}

// RunEvent tells the workflow service that an event of the runs' order
// arrived: it may end their waits (until_event) or the runs (cancel_on).
type RunEvent struct {
	Tenant  string `json:"tenant"`
	Subject string `json:"subject"`
	Type    string `json:"type"`
	ID      string `json:"id"`
}

// RunWake is a waiting step's timer firing.
type RunWake struct {
	Key  string `json:"key"`
	Step int    `json:"step"`
}

// RunFlush closes an open digest: its window's or cron's time came (a
// schedule on runs.flush.<tenant>.<digest>), or it holds max_items
// (Early).
type RunFlush struct {
	Tenant string `json:"tenant"`
	// Digest names the digest: its tenant, route, recipient and key.
	Digest string `json:"digest"`
	// Step is the route's digest step.
	Step int `json:"step"`
	// Max is how many items the digest holds at most (its max_items).
	Max   int  `json:"max"`
	Early bool `json:"early,omitempty"`
}

// RunSent tells a run what its send step planned, for its timeline: the
// notifications' ids (the first maxSentIDs), how many, and the fan-outs
// still to plan (a topic's pages).
type RunSent struct {
	Key           string   `json:"key"`
	Step          int      `json:"step"`
	Notifications []string `json:"notifications,omitempty"`
	Count         int      `json:"count"`
	Fanouts       int      `json:"fanouts,omitempty"`
}

// maxSentIDs bounds the ids a RunSent names.
const maxSentIDs = 20

// SendRequest is a run's send step, for the router to plan and publish:
// the run's event and route, with the step's channels, template and roles.
type SendRequest struct {
	Run string `json:"run"`
	// Key is the run's key in KV_runs, which its notifications name when
	// a wait waits for their status.
	Key       string          `json:"key,omitempty"`
	Step      int             `json:"step"`
	Tenant    string          `json:"tenant"`
	Event     json.RawMessage `json:"event"`
	StoredAt  time.Time       `json:"stored_at"`
	Route     Route           `json:"route"`
	Recipient event.Recipient `json:"recipient"`
	// Items, after a digest step, are the events it gathered: the
	// notification lists them all (notification.Digest).
	Items []json.RawMessage `json:"items,omitempty"`
}

// runFor records a run of workflow route r for t, instead of its
// deliveries.
func (p *planner) runFor(r Route, t target, a about) {
	rcpt := t.entry
	if t.sub != nil {
		rcpt = event.Recipient{Role: t.entry.Role, Subscriber: t.sub.ID, Channels: t.entry.Channels, Locale: t.entry.Locale}
	}
	id := runID(p.ev, r, rcpt)
	if p.seen[id] {
		return
	}
	p.seen[id] = true
	p.runs = append(p.runs, RunStart{ID: id, Tenant: p.ev.Tenant, Subject: a.subject, Route: r, Recipient: rcpt})
}

// runID names a run by its tenant, event, route and recipient: an event
// routed twice starts each run once.
func runID(ev event.Event, r Route, rcpt event.Recipient) string {
	route, _ := json.Marshal(r)
	person, _ := json.Marshal(rcpt)
	h := sha256.New()
	for _, part := range [][]byte{[]byte(ev.Tenant), []byte(ev.ID), route, person} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write(part)
	}
	return "run_" + hex.EncodeToString(h.Sum(nil))[:32]
}

// RunEventTypes are the event types some route's runs end on (cancel_on,
// a wait's until_event): the router tells the workflow service of each.
func RunEventTypes(routes []Route) []string {
	var out []string
	for _, r := range routes {
		out = append(out, r.CancelOn...)
		for _, s := range r.Steps {
			if s.Wait != nil && s.Wait.UntilEvent != "" {
				out = append(out, s.Wait.UntilEvent)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// publishRuns asks the workflow service for the decision's runs, each
// once (its id is its Nats-Msg-Id).
func (s *Service) publishRuns(ctx context.Context, d Decision, storedAt time.Time) error {
	if len(d.runs) == 0 {
		return nil
	}
	body, err := json.Marshal(d.Event)
	if err != nil {
		return err
	}
	for _, r := range d.runs {
		r.Event, r.StoredAt = body, storedAt
		if err := s.publishRun(ctx, r.Tenant, "run:"+r.ID, RunMessage{Kind: RunStartKind, Start: &r}); err != nil {
			return fmt.Errorf("starting run %s: %w", r.ID, err)
		}
	}
	return nil
}

// tellRuns tells the workflow service of an event some run may end on.
func (s *Service) tellRuns(ctx context.Context, ev event.Event, subject string) error {
	if !slices.Contains(s.runEvents, ev.Type) && (s.cfg.Workflows == nil || !slices.Contains(s.cfg.Workflows.RunEventTypes(ev.Tenant), ev.Type)) {
		return nil
	}
	e := RunEvent{Tenant: ev.Tenant, Subject: subject, Type: ev.Type, ID: ev.ID}
	if err := s.publishRun(ctx, ev.Tenant, "runevent:"+ev.Tenant+":"+ev.ID, RunMessage{Kind: RunEventKind, Event: &e}); err != nil {
		return fmt.Errorf("telling the runs of %s: %w", subject, err)
	}
	return nil
}

func (s *Service) publishRun(ctx context.Context, tenant, id string, m RunMessage) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := documents.Fit("a run's message", body, s.js.Conn().MaxPayload()); err != nil {
		return err
	}
	msg := nats.NewMsg(RunsIn(tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, id)
	_, err = telemetry.PublishMsg(ctx, s.js, msg)
	return err
}

// startSends serves the runs' send steps, tenants in turn.
func (s *Service) startSends(ctx context.Context) error {
	var err error
	s.sends, err = consumer.StartFair(ctx, s.handleSend, consumer.FairConfig{Config: s.loops.Config, Stream: RunsStream,
		Classes: []consumer.Class{{Name: runsClass, Prefix: "runs.send", Weight: 1, Template: fanoutTemplate}}})
	if err != nil {
		return fmt.Errorf("router: the runs' sends: %w", err)
	}
	return nil
}

// handleSend plans and publishes one run's send step.
func (s *Service) handleSend(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	req, err := request(msg, "send request", func(r SendRequest) string { return r.Tenant })
	if err != nil {
		return consumer.GiveUp(err)
	}
	d, invalid := s.cfg.send(req, time.Now().UTC())
	if invalid = s.settle(msg.Subject(), &d, req.StoredAt, invalid); invalid != nil {
		return consumer.GiveUp(invalid)
	}
	s.countUnplanned(ctx, d)
	if err := s.publish(ctx, d, nil); err != nil {
		return consumer.Retry(fmt.Errorf("publishing run %s's step %d: %w", req.Run, req.Step, err), 2*time.Second, time.Minute)
	}
	if err := s.requestFanouts(ctx, d, req.StoredAt); err != nil {
		return consumer.Retry(err, 2*time.Second, time.Minute)
	}
	if err := s.tellSent(ctx, req, d); err != nil {
		return consumer.Retry(err, 2*time.Second, time.Minute)
	}
	return consumer.Done()
}

// tellSent tells the run which notifications its send step planned, once
// (its Nats-Msg-Id names the run and the step).
func (s *Service) tellSent(ctx context.Context, req SendRequest, d Decision) error {
	if req.Key == "" {
		return nil
	}
	sent := RunSent{Key: req.Key, Step: req.Step, Count: d.planned(), Fanouts: len(d.fanouts)}
	for _, n := range d.all()[:min(d.planned(), maxSentIDs)] {
		sent.Notifications = append(sent.Notifications, n.ID)
	}
	if err := s.publishRun(ctx, req.Tenant, fmt.Sprintf("sent:%s:%d", req.Run, req.Step), RunMessage{Kind: RunSentKind, Sent: &sent}); err != nil {
		return fmt.Errorf("telling run %s what its step %d sent: %w", req.Run, req.Step, err)
	}
	return nil
}

// send plans a run's send step: the step's route to the run's recipient,
// or, when the step names roles, to the event's recipients in those.
func (c Config) send(req SendRequest, now time.Time) (Decision, error) {
	ev, data, err := event.Read(req.Event)
	if err == nil && ev.Tenant != req.Tenant {
		err = fmt.Errorf("forged send request: tenant %q's, for an event of tenant %q", req.Tenant, ev.Tenant)
	}
	if err == nil && (req.Step < 0 || req.Step >= len(req.Route.Steps) || req.Route.Steps[req.Step].Send == nil) {
		err = fmt.Errorf("send request for step %d of a route whose step is not a send", req.Step)
	}
	if err != nil {
		return Decision{Event: ev, Outcome: Invalid}, err
	}
	r := req.Route.stepRoute(req.Step)
	r.Run = req.runRef()
	p := planner{cfg: c, ev: ev, now: now, seen: map[string]bool{}, dir: c.Recipients}
	if p.dir == nil {
		p.dir = nobody{}
	}
	var a about
	var listed []event.Recipient
	switch {
	case data.Order != nil:
		a, listed = orderAbout(data.Order.Order), data.Order.Recipients
	case data.Stock != nil:
		a, listed = stockAbout(ev, data.Stock.Stock), data.Stock.Recipients
	}
	if len(req.Items) > 0 {
		digest, err := digestOf(req.Items, req.Tenant)
		if err != nil {
			return Decision{Event: ev, Outcome: Invalid}, err
		}
		fill := a.fill
		a.fill = func(d *notification.Delivery) { fill(d); d.Digest = digest }
		// A digest lists its orders; it carries none's document.
		r.Document = ""
	}
	if len(r.Roles) == 0 {
		p.each(r, req.Recipient, a)
	} else {
		for _, rcpt := range listed {
			p.each(r, rcpt, a)
		}
		if data.Order != nil {
			p.partyAccounts(r, data.Order.Order, listed, a)
		}
	}
	if data.Order != nil {
		p.out = p.waitForDocuments(data.Order.Order, p.out)
	}
	d := Decision{Event: ev, Outcome: NoRecipients, Deliveries: p.out, Renders: p.renders, Skipped: p.skipped,
		Unplanned: p.unplanned, fanouts: p.fanouts}
	if d.planned() > 0 {
		d.Outcome = Routed
	}
	return d, nil
}

// digestOf is what a digest's notifications list: each event it gathered,
// as templates see an event.
func digestOf(items []json.RawMessage, tenant string) (*notification.Digest, error) {
	d := &notification.Digest{Count: len(items), Items: make([]notification.DigestItem, 0, len(items))}
	for i, raw := range items {
		ev, data, err := event.Read(raw)
		if err == nil && ev.Tenant != tenant {
			err = fmt.Errorf("an event of tenant %q", ev.Tenant)
		}
		if err != nil {
			return nil, fmt.Errorf("digest item %d: %w", i, err)
		}
		item := notification.DigestItem{EventID: ev.ID}
		var a about
		switch {
		case data.Order != nil:
			a = orderAbout(data.Order.Order)
		case data.Stock != nil:
			a = stockAbout(ev, data.Stock.Stock)
		default:
			return nil, fmt.Errorf("digest item %d: event %s has neither an order nor stock", i, ev.ID)
		}
		var into notification.Delivery
		a.fill(&into)
		item.Order, item.Stock = into.Order, into.Stock
		d.Items = append(d.Items, item)
	}
	return d, nil
}

// DigestSuffix names a template's digest form.
const DigestSuffix = "_digest"

// digests says whether a digest step comes before step.
func (r Route) digests(step int) bool {
	return slices.ContainsFunc(r.Steps[:step], func(s Step) bool { return s.Digest != nil })
}

// stepRoute is the route a send step plans with: the route's, with the
// step's channels, template and roles, no steps of its own, and the step's
// index in its deliveries' dedupe keys — a reminder is not the first
// send's duplicate, and an escalation reached from several runs is one.
func (r Route) stepRoute(step int) Route {
	s := *r.Steps[step].Send
	out := r
	out.Steps, out.CancelOn, out.Stage = nil, nil, step
	// A workflow's sends wait for their steps' times, not for each other.
	out.Ordered = new(bool)
	if len(s.Channels) > 0 || len(s.Fallback) > 0 {
		out.Channels, out.Fallback = s.Channels, s.Fallback
	}
	switch {
	case s.Template != "":
		out.Template = s.Template
	case r.digests(step):
		// After a digest, the route's template's digest form, which
		// lists the items: low_stock_digest.
		out.Template = cmp.Or(r.Template, r.Document) + DigestSuffix
	}
	out.Roles = s.Roles
	return out
}
