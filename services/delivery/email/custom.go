package email

import (
	"context"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"log/slog"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/delivery/localized"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/kvmirror"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/templates"
)

// custom is a tenant's own template (package templates), parsed over the
// shipped templates of its language, so that it may use their parts
// ({{template "summary" .}}, {{template "footer" .}}, and in HTML "top"
// and "bottom"): its subject and body replace the shipped ones. Every
// render of it is bounded (templates.Bounded): a tenant's template runs on
// the workers that send everyone's email.
type custom struct {
	text *templates.Bounded[*template.Template]
	html *templates.Bounded[*htmltemplate.Template] // nil: the tenant's emails of it are text only
}

// parse reads t over the shipped templates nearest its locale. A template
// Herald does not ship cannot be customised: no route would use it.
func (c *Composer) parse(t templates.Template) (custom, error) {
	base := c.templates.Pick(t.Locale, t.Name+".subject")
	if base == nil {
		return custom{}, fmt.Errorf("name: %q is not a template Herald has (%v)", t.Name, c.names())
	}
	var out custom
	var err error
	out.text, err = boundText(base, `{{define "`+t.Name+`.subject"}}`+t.Subject+`{{end}}`+
		`{{define "`+t.Name+`.body"}}`+t.Text+`{{end}}`)
	if err != nil {
		return custom{}, fmt.Errorf("subject, text: %w", err)
	}
	if t.HTML == "" {
		return out, nil
	}
	if out.html, err = boundHTML(base.Name(), `{{define "`+t.Name+`.html"}}`+t.HTML+`{{end}}`); err != nil {
		return custom{}, fmt.Errorf("html: %w", err)
	}
	return out, nil
}

// boundText is the shipped text templates of base's language, with defs
// (a tenant's definitions) over them, bounded.
func boundText(base *template.Template, defs string) (*templates.Bounded[*template.Template], error) {
	text, err := base.Clone()
	if err == nil && defs != "" {
		_, err = text.Parse(defs)
	}
	if err != nil {
		return nil, err
	}
	return templates.BoundText(text)
}

// boundHTML is the shipped HTML templates of language, with defs over
// them, bounded. An html/template cannot be cloned once it has run, and
// the shipped ones have: the language's file is read again.
func boundHTML(language, defs string) (*templates.Bounded[*htmltemplate.Template], error) {
	html, err := localized.ParseHTML(templateFiles, "templates/html/"+language+".tmpl", htmlFuncs, "templates/html/layout.html")
	if err == nil && defs != "" {
		_, err = html[language].Parse(defs)
	}
	if err != nil {
		return nil, err
	}
	return templates.BoundHTML(html[language])
}

// names are the templates Herald ships.
func (c *Composer) names() []string {
	var out []string
	for _, t := range c.templates[localized.Default].Templates() {
		if name, ok := strings.CutSuffix(t.Name(), ".subject"); ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Customs are tenants' own templates, parsed, kept current by a watch of
// the bucket templates.
type Customs struct {
	mirror *kvmirror.Mirror[custom]
}

// FollowCustoms starts following the tenants' templates, parsed with c's;
// one that no longer parses (stored by an older Herald, say) is logged and
// left out: its tenant's emails use Herald's own until it is fixed. Stop
// ends the watch.
func (c *Composer) FollowCustoms(ctx context.Context, js jetstream.JetStream, logger *slog.Logger) (*Customs, error) {
	m, err := kvmirror.Watch(ctx, js, templates.Bucket, func(kve jetstream.KeyValueEntry) (custom, bool) {
		t, err := templates.Decode(kve.Value())
		if err == nil {
			var p custom
			if p, err = c.parse(t); err == nil {
				return p, true
			}
		}
		logger.Warn("a tenant's template does not parse; Herald's own is used", "key", kve.Key(), "error", err)
		return custom{}, false
	})
	if err != nil {
		return nil, err
	}
	c.customs = &Customs{mirror: m}
	return c.customs, nil
}

// find is the tenant's template of name for locale: of the locale's own
// language, or its base language's. A tenant's template for one language
// is not another's: those recipients get Herald's in theirs.
func (cs *Customs) find(tenant, name, locale string) (custom, bool) {
	if cs == nil {
		return custom{}, false
	}
	for _, l := range localized.Candidates(locale)[:2] {
		if p, ok := cs.mirror.Get(templates.Key(tenant, name, templates.NormalizeLocale(l))); ok {
			return p, true
		}
	}
	return custom{}, false
}

// Stop ends the watch.
func (cs *Customs) Stop() { cs.mirror.Stop() }

// Check renders t for a sample of the deliveries that use it — the order
// of examples/events/order.created.json, or a stock alert — and returns
// what it renders, or why it cannot: a parse or execution error naming the
// part (subject, text or html).
func (c *Composer) Check(t templates.Template) (templates.Rendered, error) {
	p, err := c.parse(t)
	if err != nil {
		return templates.Rendered{}, err
	}
	return c.preview(sample(t.Tenant, t.Name, t.Locale), &p)
}

// Shipped renders Herald's own template name for a sample delivery to a
// tenant's recipient in locale.
func (c *Composer) Shipped(tenant, name, locale string) (templates.Rendered, error) {
	if !c.Has(name) {
		return templates.Rendered{}, fmt.Errorf("name: %q is not a template Herald has (%v)", name, c.names())
	}
	return c.preview(sample(tenant, name, locale), nil)
}

func (c *Composer) preview(d notification.Delivery, p *custom) (templates.Rendered, error) {
	m, err := c.compose(d, Content{Attachments: []Attachment{{Filename: "sample.pdf"}}}, p)
	if permanent := (*provider.PermanentError)(nil); errors.As(err, &permanent) {
		err = permanent.Err // what a delivery would be given up for, said without the label
	}
	if err != nil {
		return templates.Rendered{}, err
	}
	return templates.Rendered{Subject: m.Subject, Text: m.Text, HTML: m.HTML}, nil
}

// workflowDocuments are the documents Herald's workflow templates are
// about: a route with steps sends them beside its document's own.
var workflowDocuments = map[string]string{"po_reminder": notification.PurchaseOrder, "po_unconfirmed": notification.PurchaseOrder}

// sample is a delivery of the template name to a sample recipient in
// locale: the sample purchase order's for a document or a template about
// one, a stock alert's otherwise.
func sample(tenant, name, locale string) notification.Delivery {
	d := notification.Delivery{ID: "ntf_sample", Tenant: tenant, Channel: event.ChannelEmail, Template: name, Locale: locale,
		Recipient: notification.Recipient{Name: "Olga Petrova", Role: "supplier", Address: "olga@zarya.example"}}
	doc, about := workflowDocuments[name]
	if slices.Contains(notification.DocumentTypes, name) {
		doc, about = name, true
	}
	if about {
		d.Document = &notification.Document{Type: doc}
		d.Order = &notification.OrderSummary{ID: "PO-2026-0042", Kind: event.KindPurchase, Revision: 1,
			IssuedAt: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), Currency: "EUR",
			Buyer: "Frutas del Sur S.L.", Supplier: "Molochnaya Ferma Zarya", Lines: 2,
			Totals: event.Totals{Net: "166.80", Tax: "16.68", Gross: "183.48"}}
		return d
	}
	d.Stock = &event.Stock{SKU: "MILK-1L", Description: "Milk 1 l", Warehouse: "SEV-01", OnHand: "12", ReorderPoint: "40", Unit: "pcs"}
	return d
}
