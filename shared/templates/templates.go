// Package templates keeps tenants' own email templates — a subject, a text
// body and optionally an HTML body per template and locale — in the
// key-value bucket "templates" (streams/KV_templates), keyed
// <tenant>.<template>.<locale>. The email channel (services/delivery/email)
// checks one by rendering a sample before it is stored, and composes with
// it; every render of a tenant's template, sample or email, is bounded
// here (Bounded: MaxSteps, MaxOutput, MaxDepth, MaxNesting), for a
// template is code a tenant runs on Herald's workers.
package templates

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/resource"
)

// Bucket is the key-value bucket declared in streams/KV_templates.
const Bucket = "templates"

// Template is a tenant's own version of one email template in one locale.
type Template struct {
	Tenant string `json:"tenant"`
	// Name is the template it replaces: a document type
	// (purchase_order…) or a route's template (low_stock).
	Name string `json:"name"`
	// Locale is the language it is written in, "en", "es", "pt-br": the
	// recipients of that locale (and of its regions, for a language)
	// get it.
	Locale  string `json:"locale"`
	Subject string `json:"subject"`
	Text    string `json:"text"`
	// HTML is optional: without it, the tenant's emails from this
	// template are text only, rather than saying one thing in the text
	// and another in Herald's HTML.
	HTML      string    `json:"html,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Rendered is a template rendered for a sample delivery: what a preview
// shows.
type Rendered struct {
	Subject string `json:"subject"`
	Text    string `json:"text"`
	HTML    string `json:"html,omitempty"`
}

// Limits on a template's size, so that one tenant's template cannot make
// every email of its a megabyte.
const (
	MaxSubject = 1 << 10
	MaxBody    = 64 << 10
)

// ErrNotFound: the tenant has no template of that name and locale.
var ErrNotFound = errors.New("templates: no such template")

// ErrInvalid is what the store's refusals match; their messages name the
// field.
var ErrInvalid = errors.New("templates: invalid template")

type invalid string

func (e invalid) Error() string        { return string(e) }
func (e invalid) Is(target error) bool { return target == ErrInvalid || target == resource.ErrInvalid }

var (
	namePattern   = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)
	localePattern = regexp.MustCompile(`^[a-z]{2,3}(-[a-z0-9]{2,8})?$`)
)

// Check says what is wrong with t's fields, if anything — not whether it
// renders, which its channel says. The subject is one line and the bodies
// hold no control character but their layout: a CR or LF in a subject
// would end its header, and an ESC in a body reaches whoever reads it raw.
func (t Template) Check() error {
	if err := t.checkText(); err != nil {
		return err
	}
	switch {
	case !namePattern.MatchString(t.Name):
		return invalid(fmt.Sprintf("name: %q is not a template name (1-64 lowercase letters, digits or '_')", t.Name))
	case !localePattern.MatchString(t.Locale):
		return invalid(fmt.Sprintf("locale: %q is not a locale such as en, es or pt-br", t.Locale))
	case strings.TrimSpace(t.Subject) == "":
		return invalid("subject: required")
	case strings.TrimSpace(t.Text) == "":
		return invalid("text: required: every email has a text part")
	case len(t.Subject) > MaxSubject:
		return invalid(fmt.Sprintf("subject: longer than %d bytes", MaxSubject))
	case len(t.Text) > MaxBody || len(t.HTML) > MaxBody:
		return invalid(fmt.Sprintf("text, html: each at most %d bytes", MaxBody))
	}
	return nil
}

// checkText refuses control characters in t's texts.
func (t Template) checkText() error {
	if err := event.CheckText(t.Subject); err != nil {
		return invalid("subject: " + err.Error())
	}
	if err := event.CheckLines(t.Text); err != nil {
		return invalid("text: " + err.Error())
	}
	if err := event.CheckLines(t.HTML); err != nil {
		return invalid("html: " + err.Error())
	}
	return nil
}

// Key is where t is kept.
func Key(tenant, name, locale string) string { return tenant + "." + name + "." + locale }

// NormalizeLocale is the form locales are kept in: lowercase, '-' between
// language and region.
func NormalizeLocale(locale string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(locale), "_", "-"))
}

// Decode reads a stored template.
func Decode(b []byte) (Template, error) {
	var t Template
	if err := json.Unmarshal(b, &t); err != nil {
		return Template{}, fmt.Errorf("templates: unreadable entry: %w", err)
	}
	return t, nil
}
