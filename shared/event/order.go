package event

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Kind says which side of the trade issued an order.
type Kind string

const (
	KindPurchase Kind = "purchase"
	KindSales    Kind = "sales"
)

// The order events that say what became of an order — the supplier
// accepted it, it was called off — rather than carry it: a workflow waiting
// on the order ends on them (a route's until_event and cancel_on). They name
// the order and need no document, so a publisher that knows only an
// order's id and kind can send one (IsOrderSignal).
const (
	TypeOrderConfirmed = "order.confirmed"
	TypeOrderCancelled = "order.cancelled"
)

// IsOrderSignal reports whether eventType is an order event that only names
// its order: data.order needs its id and kind, and the revision, parties,
// lines, totals and recipients an ERP may not have at hand are checked only
// when present. Every other order.* type needs the whole order.
func IsOrderSignal(eventType string) bool {
	return eventType == TypeOrderConfirmed || eventType == TypeOrderCancelled
}

// OrderData is the data of every order.* event.
type OrderData struct {
	Order      Order       `json:"order"`
	Recipients []Recipient `json:"recipients"`
}

// Order is the business document's source: parties, lines and totals.
type Order struct {
	ID       string    `json:"id"`
	Kind     Kind      `json:"kind"`
	Revision int       `json:"revision"`
	IssuedAt time.Time `json:"issued_at,omitzero"`
	Currency string    `json:"currency"`
	Locale   string    `json:"locale,omitempty"`
	Buyer    Party     `json:"buyer"`
	Supplier Party     `json:"supplier"`
	Lines    []Line    `json:"lines"`
	Totals   Totals    `json:"totals"`
}

// Party is one side of an order.
type Party struct {
	Name    string `json:"name"`
	TaxID   string `json:"tax_id,omitempty"`
	Address string `json:"address,omitempty"`
	// Account is the tenant's account (shared/recipient) the party is:
	// when the event lists no recipient of a role a route wants, the
	// router reaches the account's members in the route's account_roles.
	Account string `json:"account,omitempty"`
}

// Line is one row of an order.
type Line struct {
	SKU         string  `json:"sku,omitempty"`
	Description string  `json:"description"`
	Quantity    Decimal `json:"quantity"`
	Unit        string  `json:"unit,omitempty"`
	UnitPrice   Decimal `json:"unit_price"`
	TaxRate     Decimal `json:"tax_rate,omitempty"`
}

// Totals are the order's sums as the publisher computed them.
type Totals struct {
	Net   Decimal `json:"net"`
	Tax   Decimal `json:"tax"`
	Gross Decimal `json:"gross"`
}

// Recipient is who may hear about the event: a contact, on the channels
// listed, or a reference to people Herald keeps (shared/recipient) — one
// subscriber, an account's members in AccountRoles, or a topic's members —
// on the channels they have an address for (of Channels, when listed).
type Recipient struct {
	Name     string    `json:"name,omitempty"`
	Role     string    `json:"role,omitempty"`
	Email    string    `json:"email,omitempty"`
	Phone    string    `json:"phone,omitempty"`
	Webhook  string    `json:"webhook,omitempty"`
	Channels []Channel `json:"channels"`
	Locale   string    `json:"locale,omitempty"`

	Subscriber   string   `json:"subscriber,omitempty"`
	Account      string   `json:"account,omitempty"`
	AccountRoles []string `json:"account_roles,omitempty"`
	Topic        string   `json:"topic,omitempty"`
}

// Channel is a way of reaching a recipient.
type Channel string

const (
	ChannelEmail    Channel = "email"
	ChannelSMS      Channel = "sms"
	ChannelWhatsApp Channel = "whatsapp"
	ChannelWebhook  Channel = "webhook"
	// ChannelInbox writes an item to a subscriber's in-app feed, and
	// ChannelPush notifies a subscriber's registered devices: both reach
	// subscribers only, never an inline contact.
	ChannelInbox Channel = "inbox"
	ChannelPush  Channel = "push"
)

// Channels lists every channel Herald knows, in a stable order.
var Channels = []Channel{ChannelEmail, ChannelSMS, ChannelWhatsApp, ChannelWebhook, ChannelInbox, ChannelPush}

// Address returns where this recipient is reached on channel c, or "".
func (r Recipient) Address(c Channel) string {
	switch c {
	case ChannelEmail:
		return strings.ToLower(strings.TrimSpace(r.Email))
	case ChannelSMS, ChannelWhatsApp:
		return strings.TrimSpace(r.Phone)
	case ChannelWebhook:
		return strings.TrimSpace(r.Webhook)
	}
	return ""
}

// OrderData decodes and validates the data of an order.* event.
func (ev Event) OrderData() (OrderData, error) {
	var p problems
	d, _ := ev.orderData(&p) // the zero value when it could not be decoded
	return d, p.err()
}

// orderData is OrderData with its problems left in p; false when the data
// could not be decoded at all.
func (ev Event) orderData(p *problems) (OrderData, bool) {
	var d OrderData
	if !decodeData(ev, &d, p) {
		return OrderData{}, false
	}
	signal := IsOrderSignal(ev.Type)
	d.Order.validate(p, signal)
	// The parties' accounts stand for their contacts: such an event may
	// list nobody. A signal reaches nobody by itself.
	if len(d.Recipients) > 0 || (!signal && d.Order.Buyer.Account == "" && d.Order.Supplier.Account == "") {
		validateRecipients(p, d.Recipients)
	}
	return d, true
}

// decodeData decodes an event's data into the shape its type implies,
// with every problem found on the way in p: a key that the shape's fields
// match only ignoring case, and each value of the wrong JSON type (a
// number where a decimal string is due), which is then decoded as absent
// so that the rest of the data is still decoded and validated — one dead
// letter names every field at fault, not the first. False means there is
// nothing to validate.
func decodeData(ev Event, into any, p *problems) bool {
	if len(ev.Data) == 0 || string(ev.Data) == "null" {
		p.add("data", "is required")
		return false
	}
	err := json.Unmarshal(ev.Data, into)
	if err == nil {
		if err := checkDataKeys(p, ev.Data, into); err != nil {
			p.addErr(err)
			return false
		}
		return true
	}
	if !json.Valid(ev.Data) {
		p.add("data", "%s", describeJSONError(err))
		return false
	}
	return decodeMistyped(ev.Data, into, p, err)
}

// decodeMistyped decodes data that holds values of the wrong type (err is
// encoding/json's word on the first): the strict walk, told the shape,
// finds each of them and the data is decoded again with them as null.
func decodeMistyped(data []byte, into any, p *problems, err error) bool {
	s := newKeyScan(data, p, "data")
	s.typed = true
	if err := s.value(reflect.TypeOf(into), 0, false); err != nil {
		p.addErr(err)
		return false
	}
	if len(s.mistyped) == 0 { // a fault the walk does not know: encoding/json's word
		p.add("data", "%s", describeJSONError(err))
		return false
	}
	reflect.ValueOf(into).Elem().SetZero()
	if err := json.Unmarshal(s.withoutMistyped(), into); err != nil {
		p.add("data", "%s", describeJSONError(err))
		return false
	}
	return true
}

// validate checks the order; for a signal (IsOrderSignal) only its id and
// kind are required, and what else it carries must still be valid.
func (o Order) validate(p *problems, signal bool) {
	checkID(p, "data.order.id", o.ID, 128)
	if o.Kind != KindPurchase && o.Kind != KindSales {
		p.add("data.order.kind", "%s must be %q or %q", quote(string(o.Kind)), KindPurchase, KindSales)
	}
	switch {
	case signal && o.Revision < 0:
		p.add("data.order.revision", "must be 1 or more when given (got %d)", o.Revision)
	case !signal && o.Revision < 1:
		p.add("data.order.revision", "is required and must be 1 or more (got %d)", o.Revision)
	}
	if (!signal || o.Currency != "") && (len(o.Currency) != 3 || strings.ToUpper(o.Currency) != o.Currency) {
		p.add("data.order.currency", "%s must be an ISO 4217 code such as EUR", quote(o.Currency))
	}
	checkText(p, "data.order.locale", o.Locale)
	o.Buyer.validate(p, "data.order.buyer")
	o.Supplier.validate(p, "data.order.supplier")
	for i, l := range o.Lines {
		field := fmt.Sprintf("data.order.lines[%d]", i)
		if strings.TrimSpace(l.Description) == "" {
			p.add(field+".description", "is required")
		}
		checkText(p, field+".description", l.Description)
		checkText(p, field+".sku", l.SKU)
		checkText(p, field+".unit", l.Unit)
		l.Quantity.check(p, field+".quantity", true)
		l.UnitPrice.check(p, field+".unit_price", true)
		l.TaxRate.check(p, field+".tax_rate", false)
	}
	o.Totals.Net.check(p, "data.order.totals.net", !signal)
	o.Totals.Tax.check(p, "data.order.totals.tax", !signal)
	o.Totals.Gross.check(p, "data.order.totals.gross", !signal)
}

// validate checks a party's text. Its name reaches email subjects and
// bodies; its address only documents, so it alone may span lines.
func (party Party) validate(p *problems, field string) {
	checkText(p, field+".name", party.Name)
	checkText(p, field+".tax_id", party.TaxID)
	checkMultiline(p, field+".address", party.Address)
	if party.Account != "" {
		if err := CheckRecipientID(party.Account); err != nil {
			p.add(field+".account", "%v", err)
		}
	}
}

var phonePattern = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

func validateRecipients(p *problems, rs []Recipient) {
	if len(rs) == 0 {
		p.add("data.recipients", "at least one recipient is required")
	}
	for i, r := range rs {
		field := fmt.Sprintf("data.recipients[%d]", i)
		r.validateText(p, field)
		if _, ok := r.Reference(); ok || len(r.AccountRoles) > 0 {
			r.validateReference(p, field)
			continue
		}
		if len(r.Channels) == 0 {
			p.add(field+".channels", "at least one channel is required")
		}
		for _, c := range r.Channels {
			if !slices.Contains(Channels, c) {
				p.add(field+".channels", "%s is not a channel (want one of %v)", quote(string(c)), Channels)
				continue
			}
			validateAddress(p, field, r, c)
		}
	}
}

// validateText refuses control characters in every text of a recipient:
// the name becomes the display name of an email's To header.
func (r Recipient) validateText(p *problems, field string) {
	checkText(p, field+".name", r.Name)
	checkText(p, field+".role", r.Role)
	checkText(p, field+".email", r.Email)
	checkText(p, field+".phone", r.Phone)
	checkText(p, field+".webhook", r.Webhook)
	checkText(p, field+".locale", r.Locale)
}

func validateAddress(p *problems, field string, r Recipient, c Channel) {
	if ValidAddress(c, r.Address(c)) {
		return
	}
	switch c {
	case ChannelEmail:
		p.add(field+".email", "%s is not an email address (needed for channel email)", quote(r.Email))
	case ChannelSMS, ChannelWhatsApp:
		p.add(field+".phone", "%s is not an E.164 phone number such as +34600111222 (needed for channel %s)", quote(r.Phone), c)
	case ChannelWebhook:
		p.add(field+".webhook", "%s is not an http(s) URL (needed for channel webhook)", quote(r.Webhook))
	case ChannelInbox, ChannelPush:
		p.add(field+".channels", "channel %s reaches the tenant's subscribers only: name one with subscriber (or an account or topic) instead of writing the contact out", c)
	}
}
