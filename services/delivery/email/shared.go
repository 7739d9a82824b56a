package email

import (
	"bytes"
	htmltemplate "html/template"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// Every recipient of one document gets the same email but for two things:
// the name it greets and, for a category it may leave, its own unsubscribe
// link. So Herald's templates are rendered once per document — with
// placeholders for those two — and each recipient's message is that
// rendering with its name and link put in, escaped as the templates would
// have escaped them. Rendering is most of what composing an email costs.
//
// Only Herald's own templates are shared so: they use the recipient's
// name only as text and the link only as an href, which the placeholders
// are put in the place of (TestSharedRenderingsAreWhatRenderingWouldBe
// checks every template, language and context). A tenant's own templates
// may use either anywhere, and are rendered for each recipient.
const (
	namePlaceholder = "HeraldRecipientName8d2f41"
	linkPlaceholder = "https://herald.invalid/unsubscribe-8d2f41"
)

// sharedKey is everything but the recipient that Herald's templates read:
// two deliveries of one key render alike but for name and link.
type sharedKey struct {
	tenant, template, locale, document string
	order                              notification.OrderSummary
	stock                              event.Stock
	attached                           bool
	link                               string
	linkExpires                        time.Time
	brand                              Brand
	// named and unsubscribable: whether there is a name and a link at all.
	named, unsubscribable bool
}

func sharedKeyOf(d notification.Delivery, content Content) sharedKey {
	k := sharedKey{tenant: d.Tenant, template: d.Template, locale: d.Locale, attached: len(content.Attachments) > 0,
		link: content.Link, linkExpires: content.LinkExpires, brand: content.Brand,
		named: d.Recipient.Name != "", unsubscribable: content.Unsubscribe != ""}
	if d.Document != nil {
		k.document = d.Document.Type
	}
	if d.Order != nil {
		k.order = *d.Order
	}
	if d.Stock != nil {
		k.stock = *d.Stock
	}
	return k
}

// rendering is what Herald's templates rendered for a sharedKey.
type rendering struct{ subject, body, html string }

// fill is m with the rendering's parts, d's name and content's link put
// in: as written in the text, escaped as html/template escapes them in the
// HTML.
func (r rendering) fill(d notification.Delivery, content Content, m Message) (Message, error) {
	name, link := d.Recipient.Name, content.Unsubscribe
	m.Subject, m.Text = putIn(r.subject, name, link), tidy(putIn(r.body, name, link))
	if r.html != "" {
		htmlName, htmlLink, err := escaped(name, link)
		if err != nil {
			return Message{}, err
		}
		m.HTML = putIn(r.html, htmlName, htmlLink)
	}
	return m, nil
}

// putIn replaces the placeholders of s: the link's first, so that a name
// that happens to hold the link's placeholder is left as written.
func putIn(s, name, link string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, linkPlaceholder, link), namePlaceholder, name)
}

// escapes renders a name as text and a link as an href, as the HTML
// templates place them.
var escapes = htmltemplate.Must(htmltemplate.New("escapes").Parse(`{{.Name}}` + "\x00" + `<a href="{{.Link}}">`))

// escaped is name and link as html/template writes them where the
// templates put them.
func escaped(name, link string) (string, string, error) {
	var buf bytes.Buffer
	if err := escapes.Execute(&buf, struct{ Name, Link string }{name, link}); err != nil {
		return "", "", err
	}
	n, a, _ := strings.Cut(buf.String(), "\x00")
	return n, strings.TrimSuffix(strings.TrimPrefix(a, `<a href="`), `">`), nil
}

// sharedParts keeps the latest renderings, a bounded number: a burst of
// orders to many recipients reuses each while its recipients are served.
type sharedParts struct {
	mu      sync.Mutex
	entries map[sharedKey]rendering
}

// maxShared bounds the renderings kept, some 6 KB each: the recipients
// of one document are served close together (64 did as well as 1,024 in
// herald bench, docs/BENCHMARKS.md).
const maxShared = 64

func (s *sharedParts) get(k sharedKey) (rendering, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.entries[k]
	return r, ok
}

func (s *sharedParts) put(k sharedKey, r rendering) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil || len(s.entries) >= maxShared {
		s.entries = make(map[sharedKey]rendering, maxShared) // the oldest go with the rest
	}
	s.entries[k] = r
}
