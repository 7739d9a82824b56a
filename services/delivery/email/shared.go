package email

import (
	"bytes"
	htmltemplate "html/template"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// Every recipient of one document gets the same email but for three
// things: the name it greets, for a category it may leave its own
// unsubscribe link, and for a subscriber the link to their preference
// page. So Herald's templates are rendered once per document — with
// placeholders for those three — and each recipient's message is that
// rendering with its name and links put in, escaped as the templates would
// have escaped them. Rendering is most of what composing an email costs.
//
// Only Herald's own templates are shared so: they use the recipient's
// name only as text and the links only as hrefs, which the placeholders
// are put in the place of (TestSharedRenderingsAreWhatRenderingWouldBe
// checks every template, language and context). A tenant's own templates
// may use any of them anywhere, and are rendered for each recipient.
const (
	namePlaceholder  = "HeraldRecipientName8d2f41"
	linkPlaceholder  = "https://herald.invalid/unsubscribe-8d2f41"
	prefsPlaceholder = "https://herald.invalid/preferences-8d2f41"
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
	// named, unsubscribable and preferable: whether there is a name, an
	// unsubscribe link and a preference link at all.
	named, unsubscribable, preferable bool
}

func sharedKeyOf(d notification.Delivery, content Content) sharedKey {
	k := sharedKey{tenant: d.Tenant, template: d.Template, locale: d.Locale, attached: len(content.Attachments) > 0,
		link: content.Link, linkExpires: content.LinkExpires, brand: content.Brand,
		named: d.Recipient.Name != "", unsubscribable: content.Unsubscribe != "", preferable: content.Preferences != ""}
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

// rendering is what Herald's templates rendered for a sharedKey, each
// part cut where its placeholders were.
type rendering struct{ subject, body, html part }

func renderingOf(m Message) rendering {
	return rendering{subject: cut(m.Subject), body: cut(m.Text), html: cut(m.HTML)}
}

// fill is m with the rendering's parts, d's name and content's links put
// in: as written in the text, escaped as html/template escapes them in the
// HTML.
func (r rendering) fill(d notification.Delivery, content Content, m Message) (Message, error) {
	v := values{name: d.Recipient.Name, link: content.Unsubscribe, prefs: content.Preferences}
	m.Subject, m.Text = r.subject.with(v), r.body.with(v)
	if !r.body.settles(v) {
		m.Text = tidy(m.Text) // a name across lines, say, as rendering alone would tidy it
	}
	if r.html.text != "" {
		name, link, err := escaped(v.name, v.link)
		if err != nil {
			return Message{}, err
		}
		_, prefs, err := escaped("", v.prefs)
		if err != nil {
			return Message{}, err
		}
		m.HTML = r.html.with(values{name: name, link: link, prefs: prefs})
	}
	return m, nil
}

// values are what a recipient's message puts in the holes.
type values struct{ name, link, prefs string }

// of is the value that goes in a hole of kind k.
func (v values) of(k hole) string {
	switch k {
	case nameHole:
		return v.name
	case linkHole:
		return v.link
	}
	return v.prefs
}

// A hole is where a placeholder was in a part of a rendering.
type hole uint8

const (
	nameHole hole = 1 << iota
	linkHole
	prefsHole
)

// holeKinds are every kind of hole.
var holeKinds = []hole{nameHole, linkHole, prefsHole}

// placeholder is what a rendering holds where the hole is.
func (h hole) placeholder() string {
	switch h {
	case nameHole:
		return namePlaceholder
	case linkHole:
		return linkPlaceholder
	}
	return prefsPlaceholder
}

// part is one part of a rendering, and where in its text its placeholders
// are: found once, when it is rendered, rather than searched for again for
// each recipient.
type part struct {
	text string
	// at are the placeholders' offsets in text, in order, and kinds which
	// each is.
	at    []int
	kinds []hole
	// holes are the kinds there are.
	holes hole
}

// cut finds the placeholders in s. They cannot overlap, so each is found
// where a left-to-right search finds it.
func cut(s string) part {
	p := part{text: s}
	for i := 0; i < len(s); {
		k, at := hole(0), -1
		for _, h := range holeKinds {
			if n := strings.Index(s[i:], h.placeholder()); n >= 0 && (at < 0 || n < at) {
				k, at = h, n
			}
		}
		if at < 0 {
			return p
		}
		p.at, p.kinds, p.holes = append(p.at, i+at), append(p.kinds, k), p.holes|k
		i += at + len(k.placeholder())
	}
	return p
}

// with is the part with v in the place of the placeholders. A value that
// holds a placeholder's text is left as written, as rendering for the
// recipient alone writes it.
func (p part) with(v values) string {
	if p.holes == 0 {
		return p.text
	}
	size := len(p.text)
	for _, k := range p.kinds {
		size += len(v.of(k)) - len(k.placeholder())
	}
	var b strings.Builder
	b.Grow(size)
	from := 0
	for i, at := range p.at {
		b.WriteString(p.text[from:at])
		b.WriteString(v.of(p.kinds[i]))
		from = at + len(p.kinds[i].placeholder())
	}
	b.WriteString(p.text[from:])
	return b.String()
}

// settles reports whether p, tidied when rendered, stays tidy with v put
// in its holes.
func (p part) settles(v values) bool {
	for _, k := range holeKinds {
		if p.holes&k != 0 && !settled(v.of(k)) {
			return false
		}
	}
	return true
}

// settled reports whether s, put into a text tidy already tidied, leaves
// it as tidy would: without a newline, or space at either end, s neither
// blanks nor splits a line, nor ends one in space, nor starts or ends the
// text with space. tidy need not run again then.
func settled(s string) bool {
	if s == "" || strings.ContainsRune(s, '\n') {
		return false
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	return !unicode.IsSpace(first) && !unicode.IsSpace(last)
}

// escapes renders a name as text and a link as an href, as the HTML
// templates place them.
var escapes = htmltemplate.Must(htmltemplate.New("escapes").Parse(`{{.Name}}` + "\x00" + `<a href="{{.Link}}">`))

// escaped is name and link as html/template writes them where the
// templates put them. Most are written as they are — a name without
// markup characters, an http(s) link of URL characters html/template
// neither encodes nor escapes — and need no template run to say so
// (TestPlainNamesAndLinksAreWrittenAsTheyAre proves it, for every
// character).
func escaped(name, link string) (string, string, error) {
	if plainName(name) && plainLink(link) {
		return name, link, nil
	}
	return escapedByTemplate(name, link)
}

// escapedByTemplate is escaped, by running html/template.
func escapedByTemplate(name, link string) (string, string, error) {
	var buf bytes.Buffer
	if err := escapes.Execute(&buf, struct{ Name, Link string }{name, link}); err != nil {
		return "", "", err
	}
	n, a, _ := strings.Cut(buf.String(), "\x00")
	return n, strings.TrimSuffix(strings.TrimPrefix(a, `<a href="`), `">`), nil
}

// plainName reports whether html/template writes name, as text, as it
// is: it replaces NUL and escapes " & ' + < > (htmlEscaper), and nothing
// else, whatever the bytes around them.
func plainName(name string) bool {
	return !strings.ContainsAny(name, "\x00\"&'+<>")
}

// plainLink reports whether html/template writes link, as an href, as it
// is: an http or https link (its URL filter passes it) of only the
// characters its URL normalizer leaves alone and its attribute escaper
// does not escape. A % is left out: whether the normalizer encodes it
// depends on what follows.
func plainLink(link string) bool {
	rest, ok := strings.CutPrefix(link, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(link, "http://"); !ok {
			return link == ""
		}
	}
	for i := 0; i < len(rest); i++ {
		if !urlSafe[rest[i]] {
			return false
		}
	}
	return true
}

// urlSafe are the bytes html/template's URL normalizer and attribute
// escaper both leave as they are: letters, digits, - . _ ~ and the
// reserved characters but & and +.
var urlSafe = func() (safe [256]bool) {
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!#$*,/:;=?@[]") {
		safe[c] = true
	}
	return safe
}()

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
