package event

import (
	"encoding/json"
	"fmt"
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

// Recipient is a contact who may hear about the event, on the channels listed.
type Recipient struct {
	Name     string    `json:"name,omitempty"`
	Role     string    `json:"role,omitempty"`
	Email    string    `json:"email,omitempty"`
	Phone    string    `json:"phone,omitempty"`
	Webhook  string    `json:"webhook,omitempty"`
	Channels []Channel `json:"channels"`
	Locale   string    `json:"locale,omitempty"`
}

// Channel is a way of reaching a recipient.
type Channel string

const (
	ChannelEmail    Channel = "email"
	ChannelSMS      Channel = "sms"
	ChannelWhatsApp Channel = "whatsapp"
	ChannelWebhook  Channel = "webhook"
)

// Channels lists every channel Herald knows, in a stable order.
var Channels = []Channel{ChannelEmail, ChannelSMS, ChannelWhatsApp, ChannelWebhook}

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
	var d OrderData
	var p problems
	if err := decodeData(ev, &d, &p); err != nil {
		return OrderData{}, err
	}
	d.Order.validate(&p)
	validateRecipients(&p, d.Recipients)
	return d, p.err()
}

// decodeData decodes an event's data into the shape its type implies. A
// key that the shape's fields match only ignoring case goes into p; an
// error means there is nothing to validate.
func decodeData(ev Event, into any, p *problems) error {
	if len(ev.Data) == 0 || string(ev.Data) == "null" {
		return &ValidationError{Problems: []string{"data: is required"}}
	}
	if err := json.Unmarshal(ev.Data, into); err != nil {
		return &ValidationError{Problems: []string{"data: " + describeJSONError(err)}}
	}
	if err := checkDataKeys(p, ev.Data, into); err != nil {
		return &ValidationError{Problems: []string{err.Error()}}
	}
	return nil
}

func (o Order) validate(p *problems) {
	checkID(p, "data.order.id", o.ID, 128)
	if o.Kind != KindPurchase && o.Kind != KindSales {
		p.add("data.order.kind", "%s must be %q or %q", quote(string(o.Kind)), KindPurchase, KindSales)
	}
	if o.Revision < 1 {
		p.add("data.order.revision", "is required and must be 1 or more (got %d)", o.Revision)
	}
	if len(o.Currency) != 3 || strings.ToUpper(o.Currency) != o.Currency {
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
	o.Totals.Net.check(p, "data.order.totals.net", true)
	o.Totals.Tax.check(p, "data.order.totals.tax", true)
	o.Totals.Gross.check(p, "data.order.totals.gross", true)
}

// validate checks a party's text. Its name reaches email subjects and
// bodies; its address only documents, so it alone may span lines.
func (party Party) validate(p *problems, field string) {
	checkText(p, field+".name", party.Name)
	checkText(p, field+".tax_id", party.TaxID)
	checkMultiline(p, field+".address", party.Address)
}

var phonePattern = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

func validateRecipients(p *problems, rs []Recipient) {
	if len(rs) == 0 {
		p.add("data.recipients", "at least one recipient is required")
	}
	for i, r := range rs {
		field := fmt.Sprintf("data.recipients[%d]", i)
		r.validateText(p, field)
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
	}
}
