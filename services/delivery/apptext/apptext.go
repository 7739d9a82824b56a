// Package apptext writes the text of app notifications — the push a phone
// or a browser shows, and the in-app inbox's item: a title and a body, in
// the recipient's language, plain text. Both channels say the same thing,
// so a notification reads alike in the inbox and on the lock screen.
package apptext

import (
	"bytes"
	"embed"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/heraldhq/herald/services/delivery/localized"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/money"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
)

//go:embed templates/*.tmpl
var templateFiles embed.FS

// MaxTitle and MaxBody are the longest title and body, in characters;
// longer text is cut, ending in "…". A lock screen shows a line of title
// and a few of body, and APNs refuses a payload over 4 KB: a longer text
// is a caller pasting a document, not a notification.
const (
	MaxTitle = 100
	MaxBody  = 500
)

// Text is an app notification's words.
type Text struct {
	Title string
	Body  string
}

// Composer renders deliveries into app notifications. Templates are parsed
// once; a Composer is safe for concurrent use.
type Composer struct {
	templates localized.Templates
}

// New parses the embedded templates.
func New() (*Composer, error) {
	templates, err := localized.Parse(templateFiles, "templates/*.tmpl", funcs)
	if err != nil {
		return nil, err
	}
	return &Composer{templates: templates}, nil
}

// Has reports whether a notification template exists (in the default
// locale, which every other locale falls back to).
func (c *Composer) Has(name string) bool {
	return c.templates.Has(name+".title") && c.templates.Has(name+".body")
}

// Compose renders d in its recipient's language (d.Locale), falling back to
// English for a locale or template a language lacks; a delivery its caller
// wrote is sent as written, its subject the title. An unknown template,
// and an empty notification, are permanent errors: retrying cannot help.
func (c *Composer) Compose(d notification.Delivery) (Text, error) {
	text, err := c.text(d)
	if err != nil {
		return Text{}, err
	}
	text = Text{Title: cut(words(text.Title), MaxTitle), Body: cut(lines(text.Body), MaxBody)}
	if text.Title == "" && text.Body == "" {
		return Text{}, provider.Permanentf("empty app notification")
	}
	return text, nil
}

func (c *Composer) text(d notification.Delivery) (Text, error) {
	if d.Message != nil {
		return Text{Title: d.Message.Subject, Body: d.Message.Text}, nil
	}
	data := localized.DataOf(d)
	title, err := c.render(d.Locale, d.Template+".title", data)
	if err != nil {
		return Text{}, err
	}
	body, err := c.render(d.Locale, d.Template+".body", data)
	return Text{Title: title, Body: body}, err
}

func (c *Composer) render(locale, name string, data localized.Data) (string, error) {
	t := c.templates.Pick(locale, name)
	if t == nil {
		return "", provider.Permanentf("no app notification template %q", name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return "", provider.Permanentf("rendering %s/%s: %w", t.Name(), name, err)
	}
	return buf.String(), nil
}

// lines trims each line of s, with single spaces inside it, and drops the
// blank ones: a template's layout is not the notification's.
func lines(s string) string {
	var out []string
	for line := range strings.Lines(s) {
		if line = words(line); line != "" {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// words is s on one line with single spaces. Only the layout's blanks
// go: the no-break spaces money writes ("1.668,48 €") keep an amount
// whole when a device wraps the line.
func words(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\n' }), " ")
}

// cut shortens s to at most max characters, the last of them "…".
func cut(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	runes := []rune(s)
	return strings.TrimSpace(string(runes[:limit-1])) + "…"
}

func funcs(locale string) template.FuncMap {
	style := money.StyleOf(locale)
	return template.FuncMap{
		"money": func(amount event.Decimal, currency string) string {
			if !amount.Valid() {
				return string(amount) + " " + currency
			}
			return style.Money(string(amount), currency, money.Symbols)
		},
		"quantity": func(amount event.Decimal, unit string) string {
			n := string(amount)
			if amount.Valid() {
				n = style.Number(n, 0)
			}
			return strings.TrimSpace(n + " " + unit)
		},
		"minus": func(a, b int) int { return a - b },
	}
}
