package router

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// Outcome is what became of one event.
type Outcome string

const (
	// Routed: at least one delivery was planned.
	Routed Outcome = "routed"
	// Unrouted: no route applies to the event's type (or order kind).
	// Such events are acknowledged and counted, not errors.
	Unrouted Outcome = "unrouted"
	// NoRecipients: routes applied but no recipient has a matching role and
	// a deployed channel.
	NoRecipients Outcome = "no_recipients"
	// Invalid: the event is malformed, fails validation, or names another
	// tenant than the subject it came on; it is dead-lettered.
	Invalid Outcome = "invalid"
	// Refused: the tenant registry does not admit the event's tenant
	// (suspended, or unknown when registration is required); it is
	// dead-lettered with the registry's reason, to be redriven once the
	// tenant is admitted.
	Refused Outcome = "refused"
	// Duplicate: the tenant's event, by its id, was routed before (a copy
	// republished, or sent over NATS and over HTTP); it is acknowledged
	// without routing it again.
	Duplicate Outcome = "duplicate"
)

// Decision is the router's verdict on one event: deliveries to publish
// now, and documents to render, each with the deliveries that wait for it.
type Decision struct {
	Event      event.Event
	Outcome    Outcome
	Deliveries []notification.Delivery
	Renders    []documents.Request
	// Skipped counts recipient channels not deployed here (Config.Channels).
	Skipped int
	// Unplanned are the notifications not planned — the recipient's
	// preference, a reference that named nobody — recorded as skipped
	// with the reason in the event's Accepted record.
	Unplanned []notification.AcceptedNotification
	// fanouts are the topics too large to plan with the event: each is
	// asked for, a page at a time, on FANOUT (fanout.go).
	fanouts []fanout
	// missing are the subscribers and accounts the event named that the
	// directory did not have: read from their buckets before the event is
	// planned again (a record made a moment before the event).
	missing []lookup
	// sends are the Deliveries as the messages publish sends, made by fit
	// when it measures them.
	sends []*nats.Msg
	// runs are the workflow runs to start, one per recipient a route
	// with steps reaches, instead of its deliveries (runs.go).
	runs []RunStart
	// subject is what the event is about: its order's id, or its own.
	subject string
}

// stamp records when the event was stored in its stream in every delivery.
func (d Decision) stamp(storedAt time.Time) {
	for i := range d.Deliveries {
		d.Deliveries[i].Event.StoredAt = storedAt
	}
	for _, r := range d.Renders {
		for i := range r.Deliveries {
			r.Deliveries[i].Event.StoredAt = storedAt
		}
	}
}

// planned counts every delivery, sent now or waiting for its document.
func (d Decision) planned() int {
	n := len(d.Deliveries)
	for _, r := range d.Renders {
		n += len(r.Deliveries)
	}
	return n
}

// all is every delivery, sent now or waiting for its document.
func (d Decision) all() []notification.Delivery {
	out := slices.Clone(d.Deliveries)
	for _, r := range d.Renders {
		out = append(out, r.Deliveries...)
	}
	return out
}

// accepted is the event's one Accepted record: every delivery planned,
// sent or waiting, and every notification not planned, with why.
func (d Decision) accepted(now time.Time) notification.Accepted {
	a := notification.AcceptedOf(d.Event.ID, d.all(), now)
	a.Tenant = d.Event.Tenant
	a.Notifications = append(a.Notifications, d.Unplanned...)
	return a
}

// fit splits each render request into parts that fit maxPayload (the
// connection's), and checks that every delivery sent now fits, and so does
// the event's one Accepted record. A message that can never be published
// makes the event invalid at once: retrying cannot shrink it.
func (d *Decision) fit(maxPayload int64) error {
	sends, err := documents.FitDeliveries(d.Deliveries, maxPayload)
	var parts []documents.Request
	if err == nil {
		parts, err = d.split(maxPayload)
	}
	if err != nil {
		*d = Decision{Event: d.Event, Outcome: Invalid}
		return err
	}
	d.sends, d.Renders = sends, parts
	return nil
}

// split divides the render requests into parts that fit maxPayload, and
// checks that the Accepted record fits.
func (d Decision) split(maxPayload int64) ([]documents.Request, error) {
	var parts []documents.Request
	for _, r := range d.Renders {
		split, err := documents.Split(r, maxPayload)
		if err != nil {
			return nil, err
		}
		parts = append(parts, split...)
	}
	accepted, err := json.Marshal(d.accepted(time.Now()))
	if err != nil {
		return nil, err
	}
	if err := documents.Fit("the accepted record", accepted, maxPayload); err != nil {
		return nil, err
	}
	return parts, nil
}

// decide reads an event, in structured or binary content mode (header
// says which), with event.ReadMsg — the check herald publish and the client
// run too, envelope and data, whether a route applies or not — and plans
// its deliveries. It does no I/O, so every routing
// rule can be tested as a table. The error, when set, says why the event is
// invalid.
func (c Config) decide(header nats.Header, payload []byte, now time.Time) (Decision, error) {
	ev, data, err := event.ReadMsg(header, payload)
	if err != nil {
		return Decision{Event: ev, Outcome: Invalid}, err
	}
	d := Decision{Event: ev, Outcome: Unrouted, subject: ev.ID}
	var kind event.Kind
	if data.Order != nil {
		d.subject, kind = data.Order.Order.ID, data.Order.Order.Kind
	}
	c.Routes = c.routesFor(ev.Tenant, ev.Type, kind)
	if !slices.ContainsFunc(c.Routes, func(r Route) bool { return r.Event == ev.Type }) {
		return d, nil
	}
	p := planner{cfg: c, ev: ev, now: now, seen: map[string]bool{}, dir: c.Recipients}
	if p.dir == nil {
		p.dir = nobody{}
	}
	if data.Stock != nil {
		err = p.stock(*data.Stock)
	} else {
		err = p.order(*data.Order)
	}
	if err == nil {
		err = p.tooMany()
	}
	if err != nil {
		return Decision{Event: ev, Outcome: Invalid}, err
	}
	d.Deliveries, d.Renders, d.Skipped, d.Unplanned, d.missing = p.out, p.renders, p.skipped, p.unplanned, p.missing
	d.fanouts, d.runs = p.fanouts, p.runs
	switch {
	case d.planned() > 0 || len(d.fanouts) > 0 || len(d.runs) > 0:
		d.Outcome = Routed
	case p.matched:
		d.Outcome = NoRecipients
	}
	return d, nil
}

// planner fans one event out into deliveries, one per recipient per channel,
// without repeating a dedupe key when several routes reach the same person.
type planner struct {
	cfg     Config
	ev      event.Event
	now     time.Time
	seen    map[string]bool
	out     []notification.Delivery
	renders []documents.Request
	skipped int
	matched bool
	// dir is who references resolve to; unplanned and missing what
	// became of those that did not (see Decision).
	dir       Directory
	unplanned []notification.AcceptedNotification
	missing   []lookup
	fanouts   []fanout
	runs      []RunStart
	// people counts those references resolved to, against maxPeople.
	people int
	// links are the routes' action URLs rendered for this event, by
	// template (planner.link).
	links map[string]string
}

func (p *planner) order(data event.OrderData) error {
	if err := p.limit(data.Recipients); err != nil {
		return err
	}
	o := data.Order
	a := orderAbout(o)
	for _, r := range p.cfg.Routes {
		if !r.matches(p.ev.Type, o.Kind) {
			continue
		}
		p.matched = true
		for _, rcpt := range data.Recipients {
			p.each(r, rcpt, a)
		}
		p.partyAccounts(r, o, data.Recipients, a)
	}
	p.out = p.waitForDocuments(o, p.out)
	return nil
}

// waitForDocuments takes the deliveries that carry a document out of the
// ones to publish now, into one render request per document revision.
func (p *planner) waitForDocuments(o event.Order, deliveries []notification.Delivery) []notification.Delivery {
	now := deliveries[:0:0]
	byObject := map[string]int{}
	for _, d := range deliveries {
		if d.Document == nil {
			now = append(now, d)
			continue
		}
		object := documents.ObjectName(p.ev.Tenant, o.ID, d.Document.Type, o.Revision)
		d.Document.Object = object
		i, ok := byObject[object]
		if !ok {
			i = len(p.renders)
			byObject[object] = i
			p.renders = append(p.renders, documents.Request{
				Tenant: p.ev.Tenant, Type: d.Document.Type, Object: object, Locale: cmp.Or(o.Locale, "en"), Order: o,
				Date: cmp.Or(p.ev.Time, o.IssuedAt), Event: d.Event,
			})
		}
		p.renders[i].Deliveries = append(p.renders[i].Deliveries, d)
	}
	return now
}

// limit refuses an event listing more recipients than the config allows.
func (p *planner) limit(recipients []event.Recipient) error {
	if len(recipients) > p.cfg.MaxRecipients {
		return fmt.Errorf("data.recipients: %d recipients, more than router.max_recipients (%d)", len(recipients), p.cfg.MaxRecipients)
	}
	return nil
}

func (p *planner) stock(data event.StockData) error {
	if err := p.limit(data.Recipients); err != nil {
		return err
	}
	for _, r := range p.cfg.Routes {
		if !r.matches(p.ev.Type, "") {
			continue
		}
		p.matched = true
		a := stockAbout(p.ev, data.Stock)
		for _, rcpt := range data.Recipients {
			p.each(r, rcpt, a)
		}
	}
	return nil
}

// about is what an event's notifications concern: the order (or, for a
// stock alert, the event itself) and its revision, the locale that
// speaks for it when a recipient has none, and what each delivery
// carries of it.
type about struct {
	subject  string
	revision int
	order    string // the order's id; empty for a stock alert
	locale   string
	fill     func(*notification.Delivery)
	// view is the event's data as a route's action_url sees it.
	view map[string]any
}

// orderAbout is what an order's notifications concern.
func orderAbout(o event.Order) about {
	summary := &notification.OrderSummary{
		ID: o.ID, Kind: o.Kind, Revision: o.Revision, IssuedAt: o.IssuedAt, Currency: o.Currency,
		Buyer: o.Buyer.Name, Supplier: o.Supplier.Name, Lines: len(o.Lines), Totals: o.Totals,
	}
	return about{subject: o.ID, revision: o.Revision, order: o.ID, locale: o.Locale, fill: func(d *notification.Delivery) {
		d.Order = summary
	}, view: dataView(&o, nil)}
}

// stockAbout is what a stock alert's notifications concern: it has no
// order, so the event itself is the subject, and there is no revision.
func stockAbout(ev event.Event, stock event.Stock) about {
	return about{subject: ev.ID, locale: stock.Locale, fill: func(d *notification.Delivery) {
		d.Stock = &stock
	}, view: dataView(nil, &stock)}
}

func (p *planner) fanOut(r Route, t target, a about) {
	if len(r.Steps) > 0 {
		p.runFor(r, t, a)
		return
	}
	for _, ch := range p.reachable(r, r.Channels, t, a) {
		p.plan(r, t, ch, nil, a)
	}
	// A fallback is published on its first channel, carrying the others.
	if chain := p.reachable(r, r.Fallback, t, a); len(chain) > 0 {
		steps := make([]notification.FallbackStep, len(chain)-1)
		for i, ch := range chain[1:] {
			steps[i] = notification.FallbackStep{Channel: ch, Address: t.address(ch), DedupeKey: p.key(r, t, ch, a)}
		}
		p.plan(r, t, chain[0], steps, a)
	}
}

// reachable are the channels of channels the recipient has and this
// deployment delivers on; the others the recipient has are counted as
// skipped. Of a subscriber's, those their preferences switch off for the
// route's category are left out too, each recorded as not planned.
func (p *planner) reachable(r Route, channels []event.Channel, t target, a about) []event.Channel {
	var out []event.Channel
	for _, ch := range channels {
		switch {
		case !t.has(ch), ch == event.ChannelPush && !p.hasDevices(t):
		case !slices.Contains(p.cfg.Channels, ch):
			p.skipped++
		case !p.allows(r, t, ch):
			p.unplan(r, a, ch, t.address(ch), p.key(r, t, ch, a), fmt.Sprintf("preference %s.%s", r.Category, ch))
		default:
			out = append(out, ch)
		}
	}
	return out
}

// hasDevices says whether t is a subscriber with a push device: push
// reaches no one else, so a route falls back, or skips her, as for any
// channel she has no address on.
func (p *planner) hasDevices(t target) bool {
	return t.sub != nil && p.dir.HasDevices(p.ev.Tenant, t.sub.ID)
}

func (p *planner) key(r Route, t target, ch event.Channel, a about) string {
	return notification.Key{
		Tenant: p.ev.Tenant, Subject: a.subject, Revision: a.revision,
		Document: cmp.Or(r.Document, r.Template) + r.stage(), Channel: ch, Recipient: t.address(ch),
	}.String()
}

// plan adds the delivery to t on ch, unless another route already did.
func (p *planner) plan(r Route, t target, ch event.Channel, fallback []notification.FallbackStep, a about) {
	key := p.key(r, t, ch, a)
	if p.seen[key] {
		return
	}
	p.seen[key] = true
	d := notification.Delivery{
		ID: notification.ID(key), DedupeKey: key, Tenant: p.ev.Tenant, Channel: ch, Priority: r.Priority,
		Recipient: t.recipient(ch), Template: r.Template, Locale: cmp.Or(t.locale(a.locale), "en"), Fallback: fallback,
		Category: r.Category, Required: r.Required, Run: r.Run, ActionURL: p.link(r, a),
		Event:     notification.EventRef{ID: p.ev.ID, Type: p.ev.Type, Source: p.ev.Source, Time: p.ev.Time},
		CreatedAt: p.now,
	}
	if r.Document != "" {
		d.Document = &notification.Document{Type: r.Document}
	}
	// Without Sequences to register it in, no notification is ordered.
	if a.order != "" && r.ordered() && p.cfg.Sequences != nil {
		d.Sequence = &notification.Sequence{Key: notification.SequenceKey(p.ev.Tenant, a.order, ch, d.Recipient.Address)}
	}
	a.fill(&d)
	p.out = append(p.out, d)
}
