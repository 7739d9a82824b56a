package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/heraldhq/herald/shared/event"
)

// ContentType is the media type of a structured-mode CloudEvent in JSON,
// sent as the content-type of every message and request.
const ContentType = "application/cloudevents+json"

// Envelope is what every event says besides its data.
type Envelope struct {
	// Tenant the event belongs to: 1-64 letters, digits, '-' or '_'.
	// Required.
	Tenant string
	// Source names the system that publishes, a URI reference such as
	// "/erp/orders". Required.
	Source string
	// ID identifies the event and is its dedupe key: letters, digits, '-',
	// '_' and '.', not starting with '.', at most 256 bytes. Give the same
	// id to what is the same business event (a retry after a crash), so
	// Herald drops the copy. Defaults to a new unique id ("evt-" and a nuid).
	ID string
	// Time is when it happened. Defaults to when the event is made.
	Time time.Time
	// TenantSubject publishes on the subject bound to the tenant
	// (orders.created.acme), as a publisher whose NATS user may publish
	// only its own tenant's subjects must. Defaults to false: the subject
	// of trusted publishers (orders.created).
	TenantSubject bool
}

// Event is one event, encoded and validated, ready to publish any number of
// times: its id and time are fixed when it is made, so every publish sends
// the same bytes and the copies are recognised as duplicates. Make one with
// OrderCreated, LowStock or another constructor.
type Event struct {
	id string
	// msgID is its Nats-Msg-Id (event.MsgID), fixed with the payload.
	msgID   string
	subject string
	payload []byte
	err     error
}

// The order events Herald's default routes read.
const (
	TypeOrderCreated  = "order.created"
	TypeOrderUpdated  = "order.updated"
	TypeOrderShipped  = "order.shipped"
	TypeOrderReceived = "order.received"
	TypeOrderInvoiced = "order.invoiced"
	TypeLowStock      = "inventory.low_stock"
)

// The order events that say what became of an order: no route of their
// own, they end a workflow's waits and runs for the order.
const (
	TypeOrderConfirmed = event.TypeOrderConfirmed
	TypeOrderCancelled = event.TypeOrderCancelled
)

// OrderCreated is an order issued: the purchase or sales order goes to the
// other party (and, for a purchase, the buyer's own copy).
func OrderCreated(env Envelope, order event.Order, recipients ...event.Recipient) *Event {
	return NewOrderEvent(TypeOrderCreated, env, order, recipients...)
}

// OrderUpdated is an order edited; a new Revision makes a new document.
func OrderUpdated(env Envelope, order event.Order, recipients ...event.Recipient) *Event {
	return NewOrderEvent(TypeOrderUpdated, env, order, recipients...)
}

// OrderShipped is goods sent: a delivery note for the buyer or customer.
func OrderShipped(env Envelope, order event.Order, recipients ...event.Recipient) *Event {
	return NewOrderEvent(TypeOrderShipped, env, order, recipients...)
}

// OrderReceived is goods taken in: a goods received note for the supplier
// or seller.
func OrderReceived(env Envelope, order event.Order, recipients ...event.Recipient) *Event {
	return NewOrderEvent(TypeOrderReceived, env, order, recipients...)
}

// OrderInvoiced is an invoice issued, for the buyer or customer.
func OrderInvoiced(env Envelope, order event.Order, recipients ...event.Recipient) *Event {
	return NewOrderEvent(TypeOrderInvoiced, env, order, recipients...)
}

// OrderConfirmed is the other party accepting an order (a supplier its
// purchase order). The order needs only its ID and Kind; its Revision,
// when known, says which revision was accepted.
func OrderConfirmed(env Envelope, order event.Order) *Event {
	return newEvent("order", TypeOrderConfirmed, env, signalData{Order: signalOrder(order)})
}

// OrderCancelled is an order called off. The order needs only its ID and
// Kind.
func OrderCancelled(env Envelope, order event.Order) *Event {
	return newEvent("order", TypeOrderCancelled, env, signalData{Order: signalOrder(order)})
}

// signalData is the data of an order signal (event.IsOrderSignal) as the
// client writes it: the order without the members left empty, so that the
// event says no more than the publisher knew — a revision 0 or a currency
// "" reads as a value, not as unknown, to whoever else reads the event.
type signalData struct {
	Order signalOrder `json:"order"`
}

// signalOrder is event.Order with every member but the id and kind
// omitted when empty. It converts from event.Order, so a field added there
// and not here does not compile.
type signalOrder struct {
	ID       string       `json:"id"`
	Kind     event.Kind   `json:"kind"`
	Revision int          `json:"revision,omitzero"`
	IssuedAt time.Time    `json:"issued_at,omitzero"`
	Currency string       `json:"currency,omitempty"`
	Locale   string       `json:"locale,omitempty"`
	Buyer    event.Party  `json:"buyer,omitzero"`
	Supplier event.Party  `json:"supplier,omitzero"`
	Lines    []event.Line `json:"lines,omitempty"`
	Totals   event.Totals `json:"totals,omitzero"`
}

// LowStock is a stock level below its reorder point, for the warehouse.
func LowStock(env Envelope, stock event.Stock, recipients ...event.Recipient) *Event {
	return NewStockEvent(TypeLowStock, env, stock, recipients...)
}

// NewOrderEvent makes an order event of any type order.<name> — one an
// operator's own routes read, say. The typed constructors are this with
// their type.
func NewOrderEvent(eventType string, env Envelope, order event.Order, recipients ...event.Recipient) *Event {
	return newEvent("order", eventType, env, event.OrderData{Order: order, Recipients: recipients})
}

// NewStockEvent makes an inventory event of any type inventory.<name>.
func NewStockEvent(eventType string, env Envelope, stock event.Stock, recipients ...event.Recipient) *Event {
	return newEvent("inventory", eventType, env, event.StockData{Stock: stock, Recipients: recipients})
}

func newEvent(family, eventType string, env Envelope, data any) *Event {
	if env.ID == "" {
		env.ID = "evt-" + nuid.Next()
	}
	if env.Time.IsZero() {
		env.Time = time.Now().UTC()
	}
	e := &Event{id: env.ID}
	subject, err := subjectOf(family, eventType, env)
	if err != nil {
		e.err = err
		return e
	}
	e.subject = subject
	e.payload, e.err = encode(eventType, env, data)
	if e.err == nil {
		e.msgID = event.MsgID(env.Tenant, env.ID, e.payload)
	}
	return e
}

// subjectOf is the subject Herald reads events of this type on, as
// event.Subject says, refusing a type of the other family.
func subjectOf(family, eventType string, env Envelope) (string, error) {
	if f, _, _ := strings.Cut(eventType, "."); f != family {
		return "", &event.ValidationError{Problems: []string{fmt.Sprintf("type: %q is not an %s event (want %s.<name>)", eventType, family, family)}}
	}
	subject, err := event.Subject(eventType)
	if err != nil {
		return "", &event.ValidationError{Problems: []string{"type: " + strings.TrimPrefix(err.Error(), "event type ")}}
	}
	if env.TenantSubject {
		subject += "." + env.Tenant
	}
	return subject, nil
}

// encode returns the structured-mode JSON of the event, or why the router
// would refuse it: the bytes go through the router's own decoding and
// validation, so the two can never disagree.
func encode(eventType string, env Envelope, data any) ([]byte, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("client: encoding the data of %s: %w", eventType, err)
	}
	payload, err := json.Marshal(event.Event{
		SpecVersion: event.SpecVersion, ID: env.ID, Source: env.Source, Type: eventType, Time: env.Time,
		DataContentType: "application/json", Tenant: env.Tenant, Data: raw,
	})
	if err != nil {
		return nil, fmt.Errorf("client: encoding %s: %w", eventType, err)
	}
	return payload, validate(payload)
}

// validate runs on an event's bytes what the router runs on them,
// event.Read: the envelope and the data, every problem of both named.
func validate(payload []byte) error {
	_, _, err := event.Read(payload)
	return err
}

// FromJSON makes an Event of a structured-mode CloudEvent that the
// publisher already has as JSON (from its own templates, or another
// system), checked as the router will check it: an invalid one's error is
// the reason the router would dead-letter it with, naming every field at
// fault. It is published with its bytes as they are, on the subject its
// type implies, with the tenant as a third token when tenantSubject is set
// (Envelope.TenantSubject).
func FromJSON(payload []byte, tenantSubject bool) *Event {
	ev, _, err := event.Read(payload)
	e := &Event{id: ev.ID, err: err}
	if err != nil {
		return e
	}
	family, _, _ := strings.Cut(ev.Type, ".")
	if e.subject, e.err = subjectOf(family, ev.Type, Envelope{Tenant: ev.Tenant, TenantSubject: tenantSubject}); e.err == nil {
		e.payload = bytes.Clone(payload)
		e.msgID = event.MsgID(ev.Tenant, ev.ID, e.payload)
	}
	return e
}

// errNotMade is the error of an Event that no constructor made.
var errNotMade = errors.New("client: an Event must be made by a constructor such as OrderCreated")

// Build returns the event as Herald reads it — structured-mode CloudEvents
// JSON — or, for an invalid event, the *event.ValidationError that says
// every reason the router would dead-letter it.
func (e *Event) Build() ([]byte, error) {
	switch {
	case e == nil || (e.payload == nil && e.err == nil):
		return nil, errNotMade
	case e.err != nil:
		return nil, e.err
	}
	return bytes.Clone(e.payload), nil
}

// ID is the event id, the dedupe key of every publish of it.
func (e *Event) ID() string { return e.id }

// Subject is the NATS subject the event is published on: orders.<name> for
// order.<name>, inventory.<name> for inventory.<name>, with the tenant as a
// third token when Envelope.TenantSubject is set.
func (e *Event) Subject() string { return e.subject }

// Msg returns the NATS message that publishes the event: the structured
// JSON body, Nats-Msg-Id set to event.MsgID — tenant, id and a digest of
// the body, which no other tenant can guess to make the stream drop the
// event, and with which the stream drops a second copy of these bytes —
// content-type application/cloudevents+json, and
// the trace context of ctx's span in W3C traceparent and tracestate
// headers, as Herald's router reads them. An invalid event is the error
// Build returns.
func (e *Event) Msg(ctx context.Context) (*nats.Msg, error) {
	payload, err := e.Build()
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(e.subject)
	msg.Data = payload
	msg.Header.Set(jetstream.MsgIDHeader, e.msgID)
	msg.Header.Set("content-type", ContentType)
	injectTrace(ctx, natsHeader(msg.Header))
	return msg, nil
}
