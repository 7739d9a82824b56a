package sms

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/heraldhq/herald/services/delivery/localized"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
)

// Templates are a tenant's approved WhatsApp content templates, keyed by
// notification template name ("low_stock"). WhatsApp approves a template
// in one language, so a key may also name a locale ("low_stock/es");
// a delivery takes the template of its exact locale, then of its base
// language, then the one without a locale.
type Templates map[string]ContentTemplate

// ContentTemplate is one approved template and what fills its variables.
type ContentTemplate struct {
	// ContentSID identifies the approved template ("HX…"). Empty means
	// none is approved yet: the message goes as free-form text.
	ContentSID string `json:"content_sid,omitempty" yaml:"content_sid,omitempty"`
	// Variables name, in order, the values for {{1}}, {{2}}, …: each one
	// of TemplateVariables.
	Variables []string `json:"variables,omitempty" yaml:"variables,omitempty"`
}

// TemplateVariables are the values a content template can take, and what
// each is. Amounts are written in the delivery's language.
var TemplateVariables = map[string]string{
	"recipient_name": "the recipient's name",
	"sku":            "the stock item's SKU",
	"description":    "the stock item's description",
	"warehouse":      "the warehouse",
	"on_hand":        "the stock on hand, with its unit (\"14 ud\")",
	"reorder_point":  "the reorder point, with its unit",
	"order_id":       "the order id",
	"revision":       "the order's revision number",
	"document":       "the document's name (\"Purchase order\")",
	"buyer":          "the buyer",
	"supplier":       "the supplier",
	"counterparty":   "the party the document comes from: the buyer for a purchase order or goods received note, the supplier otherwise",
	"total":          "the order's gross total (\"€183.48\")",
}

// emptyVariable stands in for a value the delivery lacks: WhatsApp
// refuses a template whose variable is empty.
const emptyVariable = "-"

// Validate reports variables no delivery can fill, so a mistyped name is
// found when the configuration loads rather than on every message.
func (ts Templates) Validate() error {
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(ts)) {
		for _, v := range ts[key].Variables {
			if _, ok := TemplateVariables[v]; !ok {
				errs = append(errs, fmt.Errorf("whatsapp template %s: unknown variable %q", key, v))
			}
		}
	}
	return errors.Join(errs...)
}

// lookup finds the template for a notification template in a locale.
func (ts Templates) lookup(name, locale string) (ContentTemplate, bool) {
	for _, l := range localized.Candidates(locale) {
		if t, ok := ts[name+"/"+l]; ok {
			return t, true
		}
	}
	t, ok := ts[name]
	return t, ok
}

// ComposeWhatsApp composes d as Compose does and, for a WhatsApp delivery
// whose template has an approved ContentSID in templates, sends that
// template with its variables filled; Body keeps the rendered text for
// the ledger. Any other delivery — no approved template, or a message
// its caller wrote — goes as free-form text, which a provider refuses
// outside the 24-hour session window: falling back to another channel is
// then the fallback's job. SMS deliveries come back as Compose makes them.
func (c *Composer) ComposeWhatsApp(d notification.Delivery, templates Templates) (Message, error) {
	m, err := c.Compose(d)
	if err != nil || d.Channel != event.ChannelWhatsApp || d.Message != nil {
		return m, err
	}
	t, ok := templates.lookup(d.Template, d.Locale)
	if !ok || t.ContentSID == "" {
		return m, nil
	}
	vars, err := t.fill(d)
	if err != nil {
		return Message{}, err
	}
	m.Template = &Template{ContentSID: t.ContentSID, Variables: vars}
	return m, nil
}

// fill numbers the template's variables ("1" → "SKU-42").
func (t ContentTemplate) fill(d notification.Delivery) (map[string]string, error) {
	values := variableValues(d)
	vars := make(map[string]string, len(t.Variables))
	for i, name := range t.Variables {
		if _, known := TemplateVariables[name]; !known {
			return nil, provider.Permanentf("whatsapp template %s: unknown variable %q", t.ContentSID, name)
		}
		v := collapse(values[name]) // WhatsApp refuses line breaks and tabs in a variable
		if v == "" {
			v = emptyVariable
		}
		vars[strconv.Itoa(i+1)] = v
	}
	return vars, nil
}

// variableValues is every TemplateVariables value d has.
func variableValues(d notification.Delivery) map[string]string {
	v := map[string]string{"recipient_name": d.Recipient.Name}
	if s := d.Stock; s != nil {
		v["sku"], v["description"], v["warehouse"] = s.SKU, s.Description, s.Warehouse
		v["on_hand"] = quantity(s.OnHand, s.Unit, d.Locale)
		if s.ReorderPoint != "" {
			v["reorder_point"] = quantity(s.ReorderPoint, s.Unit, d.Locale)
		}
	}
	if o := d.Order; o != nil {
		v["order_id"], v["revision"] = o.ID, strconv.Itoa(o.Revision)
		v["buyer"], v["supplier"], v["counterparty"] = o.Buyer, o.Supplier, counterparty(d)
		v["total"] = formatMoney(o.Totals.Gross, o.Currency, d.Locale)
		v["document"] = notification.DocumentTitle(documentType(d), localized.Base(d.Locale))
	}
	return v
}

// documentType is the delivery's document, or for one without (an order
// notification sent before its PDF exists) the template, which is named
// after the document.
func documentType(d notification.Delivery) string {
	if d.Document != nil && d.Document.Type != "" {
		return d.Document.Type
	}
	return d.Template
}

// counterparty is the party a document comes from, as the email's footer
// names it: the buyer issues purchase orders and goods received notes,
// the supplier the rest.
func counterparty(d notification.Delivery) string {
	switch documentType(d) {
	case notification.PurchaseOrder, notification.GoodsReceivedNote:
		return d.Order.Buyer
	default:
		return d.Order.Supplier
	}
}
