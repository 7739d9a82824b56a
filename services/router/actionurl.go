package router

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// parseActionURL reads a route's action_url: a template over the event's
// data, as a throttle's or digest's key is, that fails on a key the data
// does not have rather than render "<no value>" into a link.
func parseActionURL(text string) (*template.Template, error) {
	if err := event.CheckText(text); err != nil {
		return nil, err
	}
	t, err := template.New("action_url").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("does not parse: %w", err)
	}
	return t, nil
}

// renderActionURL renders a route's action_url over view (dataView) and
// checks the result is a link a notification may carry
// (notification.CheckActionURL).
func renderActionURL(text string, view map[string]any) (string, error) {
	t, err := parseActionURL(text)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := t.Execute(&out, view); err != nil {
		return "", fmt.Errorf("does not render: %w", err)
	}
	link := out.String()
	if err := notification.CheckActionURL(link); err != nil {
		return "", err
	}
	return link, nil
}

// dataView is what a route's templates see of an event: .Order (its id,
// parties, lines, totals…) or .Stock (its sku, warehouse…), as the
// workflow service's keys see it.
func dataView(order *event.Order, stock *event.Stock) map[string]any {
	v := map[string]any{}
	if order != nil {
		v["Order"] = *order
	}
	if stock != nil {
		v["Stock"] = *stock
	}
	return v
}

// sampleView is an event of the route's family with every field a link
// is likely to name filled in: what start-up renders an action_url over,
// so that a misspelt field or a relative link is refused before any event
// comes.
func sampleView(eventType string) map[string]any {
	if strings.HasPrefix(eventType, "inventory.") {
		return dataView(nil, &event.Stock{SKU: "SKU-1", Description: "Sample", Warehouse: "main", OnHand: "1", ReorderPoint: "5",
			Unit: "ea", Locale: "en"})
	}
	party := func(name string) event.Party {
		return event.Party{Name: name, TaxID: "X1", Address: "1 Sample St", Account: "acct_" + strings.ToLower(name)}
	}
	return dataView(&event.Order{ID: "PO-1", Kind: event.KindPurchase, Revision: 1, IssuedAt: time.Unix(0, 0).UTC(),
		Currency: "EUR", Locale: "en", Buyer: party("Buyer"), Supplier: party("Supplier"),
		Lines:  []event.Line{{SKU: "SKU-1", Description: "Sample", Quantity: "1", UnitPrice: "1"}},
		Totals: event.Totals{Net: "1", Tax: "0", Gross: "1"}}, nil)
}

// checkActionURL: a route's action_url parses, and renders over a sample
// of its events to a link (absolute http(s), at most
// notification.MaxActionURL bytes).
func checkActionURL(text, eventType string) error {
	if len(text) > notification.MaxActionURL {
		return fmt.Errorf("%d bytes; at most %d", len(text), notification.MaxActionURL)
	}
	if _, err := parseActionURL(text); err != nil {
		return err
	}
	if _, err := renderActionURL(text, sampleView(eventType)); err != nil {
		return fmt.Errorf("a sample %s event: %w", eventType, err)
	}
	return nil
}

// link is the route's action URL for this event, rendered once per
// route per event. One that does not render to a link for this event (a
// line it indexes that this order lacks) is logged and left off: the
// notification still goes, without a link, rather than not at all.
func (p *planner) link(r Route, a about) string {
	if r.ActionURL == "" {
		return ""
	}
	if l, ok := p.links[r.ActionURL]; ok {
		return l
	}
	l, err := renderActionURL(r.ActionURL, a.view)
	if err != nil {
		p.cfg.Logger.WarnContext(context.Background(), "action_url left off", "tenant", p.ev.Tenant, "event", p.ev.ID,
			"type", p.ev.Type, "error", err)
	}
	if p.links == nil {
		p.links = map[string]string{}
	}
	p.links[r.ActionURL] = l
	return l
}
