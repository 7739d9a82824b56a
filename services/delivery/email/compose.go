package email

import (
	"bytes"
	"embed"
	"io"
	"strings"
	"text/template"
	"time"

	"github.com/heraldhq/herald/services/delivery/localized"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/money"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
)

// templates/*.tmpl are each language's subjects and text bodies;
// templates/html/*.tmpl each language's HTML bodies, which fill the frame
// templates/html/layout.html draws.
//
//go:embed templates/*.tmpl templates/html/*.tmpl templates/html/layout.html
var templateFiles embed.FS

// Composer renders deliveries into messages. Templates are parsed once;
// a Composer is safe for concurrent use.
type Composer struct {
	from      string
	templates localized.Templates
	html      localized.HTMLTemplates
	// customs are tenants' own templates, once FollowCustoms began.
	customs *Customs
	// shared is what Herald's templates rendered for recent documents,
	// before each recipient's name and link are put in (shared.go).
	shared sharedParts
}

// templateData is what a template sees.
type templateData struct {
	Recipient notification.Recipient
	Order     *notification.OrderSummary
	Stock     *event.Stock
	// Items and Count, in a workflow's digest, are every event it
	// gathered (Order and Stock are the first's).
	Items        []notification.DigestItem
	Count        int
	DocumentName string    // localized, e.g. "Pedido de compra"
	Sender       string    // the party the document comes from
	Attached     bool      // whether the document is attached
	Link         string    // where to download it, when too large to attach
	LinkExpires  time.Time // until when the link works
	Brand        Brand     // how the HTML part shows the sender
	Unsubscribe  string    // the one-click unsubscribe link, for a category the recipient may leave
	Preferences  string    // the link to a subscriber's preference page
}

// Content is what a message carries besides its text: the document as an
// attachment, or a link to it, and the brand its HTML part shows.
type Content struct {
	Attachments []Attachment
	Link        string
	LinkExpires time.Time
	Brand       Brand // defaults to the sender's name in the default colour
	// Unsubscribe is the one-click unsubscribe link of a message in a
	// category its recipient may leave: sent as List-Unsubscribe, and
	// shown in the footer.
	Unsubscribe string
	// Preferences is the link to the preference page of a subscriber (not
	// an inline recipient), shown in the footer.
	Preferences string
}

// NewComposer parses the embedded templates. from is the From header.
func NewComposer(from string) (*Composer, error) {
	templates, err := localized.Parse(templateFiles, "templates/*.tmpl", funcs)
	if err != nil {
		return nil, err
	}
	html, err := localized.ParseHTML(templateFiles, "templates/html/*.tmpl", htmlFuncs, "templates/html/layout.html")
	if err != nil {
		return nil, err
	}
	return &Composer{from: from, templates: templates, html: html}, nil
}

// Has reports whether a notification template exists (in the default
// locale, which every other locale falls back to).
func (c *Composer) Has(name string) bool {
	return c.templates.Has(name + ".subject")
}

// Compose renders d in its recipient's language, falling back to English
// for a locale or template a language lacks, with content attached or
// linked: a text part and, when the template has one, an HTML part. An
// unknown template is a permanent error: retrying cannot help.
func (c *Composer) Compose(d notification.Delivery, content Content) (Message, error) {
	if d.Message != nil {
		return c.written(d, content), nil
	}
	var p *custom
	if found, ok := c.customs.find(d.Tenant, d.Template, d.Locale); ok {
		p = &found
	}
	return c.compose(d, content, p)
}

// compose renders d with the tenant's own template p, or Herald's when p
// is nil — Herald's from what it rendered for the same document already,
// when it has.
func (c *Composer) compose(d notification.Delivery, content Content, p *custom) (Message, error) {
	if p != nil || d.Digest != nil {
		// A tenant's own, or a digest's: what it lists is its recipient's.
		return c.render(d, content, p)
	}
	key := sharedKeyOf(d, content)
	r, ok := c.shared.get(key)
	if !ok {
		generic, genericContent := d, content
		if d.Recipient.Name != "" {
			generic.Recipient.Name = namePlaceholder
		}
		if content.Unsubscribe != "" {
			genericContent.Unsubscribe = linkPlaceholder
		}
		if content.Preferences != "" {
			genericContent.Preferences = prefsPlaceholder
		}
		m, err := c.render(generic, genericContent, nil)
		if err != nil {
			return Message{}, err
		}
		r = renderingOf(m)
		c.shared.put(key, r)
	}
	return r.fill(d, content, c.message(d, content))
}

// message is the envelope of d's message, its parts still to fill.
func (c *Composer) message(d notification.Delivery, content Content) Message {
	return Message{
		ID: d.ID, DedupeKey: d.DedupeKey, Tenant: d.Tenant,
		From: c.from, To: d.Recipient.Address, ToName: d.Recipient.Name,
		Attachments: content.Attachments, Date: time.Now(), ListUnsubscribe: content.Unsubscribe,
	}
}

// render renders d with p, or Herald's templates when p is nil, for its
// recipient alone.
func (c *Composer) render(d notification.Delivery, content Content, p *custom) (Message, error) {
	var t executor
	if p != nil {
		t = p.text
	} else if shipped := c.templates.Pick(d.Locale, d.Template+".subject"); shipped != nil {
		t = shipped
	} else {
		return Message{}, provider.Permanentf("no email template %q", d.Template)
	}
	data := templateData{
		Recipient: d.Recipient, Order: d.Order, Stock: d.Stock, Items: d.Digest.List(), Count: d.Digest.Len(),
		Sender: sender(d), Attached: len(content.Attachments) > 0, Link: content.Link, LinkExpires: content.LinkExpires,
		Unsubscribe: content.Unsubscribe, Preferences: content.Preferences,
	}
	data.Brand = content.Brand.withDefaults(data.Sender)
	data.DocumentName = documentName(d, t.Name())
	subject, err := execute(t, d.Template+".subject", data)
	if err != nil {
		return Message{}, err
	}
	body, err := execute(t, d.Template+".body", data)
	if err != nil {
		return Message{}, err
	}
	var html string
	switch {
	case p == nil:
		html, err = c.renderHTML(d, data)
	case p.html != nil:
		html, err = execute(p.html, d.Template+".html", data)
	}
	if err != nil {
		return Message{}, err
	}
	m := c.message(d, content)
	m.Subject, m.Text, m.HTML = strings.Join(strings.Fields(subject), " "), tidy(body), html
	return m, nil
}

// renderHTML is d's HTML body, its language picked as the text's is (so
// the same one, as every language's HTML twins its text); empty when no
// language has HTML for the template, and the message goes as text only.
func (c *Composer) renderHTML(d notification.Delivery, data templateData) (string, error) {
	t := c.html.Pick(d.Locale, d.Template+".html")
	if t == nil {
		return "", nil
	}
	data.DocumentName = documentName(d, t.Name())
	return execute(t, d.Template+".html", data)
}

// documentName is d's document named in language, e.g. "Pedido de compra";
// empty for a delivery without a document.
func documentName(d notification.Delivery, language string) string {
	if d.Document == nil {
		return ""
	}
	return notification.DocumentTitle(d.Document.Type, language)
}

// written is a delivery whose caller wrote its message: sent as written,
// subject on one line, with its attachments.
func (c *Composer) written(d notification.Delivery, content Content) Message {
	return Message{
		ID: d.ID, DedupeKey: d.DedupeKey, Tenant: d.Tenant,
		From: c.from, To: d.Recipient.Address, ToName: d.Recipient.Name,
		Subject: strings.Join(strings.Fields(d.Message.Subject), " "), Text: d.Message.Text, HTML: d.Message.HTML,
		Attachments: content.Attachments, Date: time.Now(), ListUnsubscribe: content.Unsubscribe,
	}
}

// executor is a parsed set of templates, text or HTML.
type executor interface {
	Name() string
	ExecuteTemplate(w io.Writer, name string, data any) error
}

func execute(t executor, name string, data templateData) (string, error) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return "", provider.Permanentf("rendering %s/%s: %w", t.Name(), name, err)
	}
	return buf.String(), nil
}

// tidy trims blank lines that template actions leave at the edges and
// collapses runs of them inside.
func tidy(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	out := make([]string, 0, len(lines))
	for i, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" && i > 0 && out[len(out)-1] == "" {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n") + "\n"
}

// sender is the party a document comes from, named in the footer.
func sender(d notification.Delivery) string {
	if d.Order == nil {
		return d.Tenant
	}
	switch {
	case d.Document == nil:
		return d.Tenant
	case d.Document.Type == notification.PurchaseOrder, d.Document.Type == notification.GoodsReceivedNote:
		return d.Order.Buyer
	default:
		return d.Order.Supplier
	}
}

func funcs(locale string) template.FuncMap {
	return template.FuncMap{
		"money": func(amount event.Decimal, currency string) string { return FormatMoney(amount, currency, locale) },
		"date": func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return t.Format(time.DateOnly)
		},
		"lower": strings.ToLower,
	}
}

// htmlFuncs are funcs, and lang: the language the template is written in,
// for <html lang>.
func htmlFuncs(locale string) template.FuncMap {
	f := funcs(locale)
	f["lang"] = func() string { return locale }
	return f
}

// FormatMoney writes an exact decimal amount the way locale writes money,
// as the PDFs do: "€1,234.50", "1.234,50 €", "1 234,50 €". It never rounds.
func FormatMoney(amount event.Decimal, currency, locale string) string {
	if !amount.Valid() {
		return string(amount) + " " + currency
	}
	return money.StyleOf(locale).Money(string(amount), currency, money.Symbols)
}
