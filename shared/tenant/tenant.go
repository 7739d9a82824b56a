package tenant

import (
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/event"
)

// Status says whether a tenant's traffic is accepted.
type Status string

const (
	// Active tenants send.
	Active Status = "active"
	// Suspended tenants' events and notifications are dead-lettered with
	// the reason, not dropped, so they can be redriven once the tenant is
	// active again.
	Suspended Status = "suspended"
)

// Statuses are every status, in the order people read them.
var Statuses = []Status{Active, Suspended}

// Tenant is one customer of Herald, as the registry keeps it.
type Tenant struct {
	// ID is the tenant token of subjects, KV keys and metrics
	// (event.ValidTenant). It never changes.
	ID string `json:"id"`
	// Name is what people call the tenant, for tables and the console.
	Name string `json:"name,omitempty"`
	// Plan names one of the configured plans.
	Plan string `json:"plan"`
	// Status is active or suspended.
	Status Status `json:"status"`
	// From is the tenant's default sending identity, "Name <address>".
	// Empty: the platform's email.from.
	From string `json:"from,omitempty"`
	// Providers is the tenant's email provider chain, by provider name,
	// tried in this order within one try. Empty: the platform's
	// email.providers.
	Providers []string `json:"providers,omitempty"`
	// SMSProviders and WhatsAppProviders are its chains of the text
	// channels, likewise. Empty: the platform's sms.providers and
	// whatsapp.providers.
	SMSProviders      []string `json:"sms_providers,omitempty"`
	WhatsAppProviders []string `json:"whatsapp_providers,omitempty"`
	// LogoURL and Colour brand the HTML part of the tenant's emails: its
	// logo (an https image, shown 40 px high) on a header bar of Colour
	// (#rgb or #rrggbb). Empty: its name on the default colour.
	LogoURL string `json:"logo_url,omitempty"`
	Colour  string `json:"colour,omitempty"`
	// Retention is how long its history, payloads and inbox items are kept; unset
	// periods are the platform's.
	Retention Retention `json:"retention,omitzero"`
	// InboxOrigins are the web origins (scheme://host[:port]) whose pages
	// may call the inbox's browser routes with a subscriber token: the
	// API's CORS answers name only these. Empty: no browser page may.
	InboxOrigins []string `json:"inbox_origins,omitempty"`
	// CreatedAt and UpdatedAt are set by the registry.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// chainFields are the channels a tenant names a chain for, and the JSON
// field that holds it.
var chainFields = []struct {
	channel event.Channel
	field   string
}{
	{event.ChannelEmail, "providers"},
	{event.ChannelSMS, "sms_providers"},
	{event.ChannelWhatsApp, "whatsapp_providers"},
}

// Chain is the tenant's provider chain on a channel; empty when it names
// none there (and for a channel whose providers are not the tenant's to
// choose, such as its webhooks).
func (t Tenant) Chain(channel event.Channel) []string {
	switch channel {
	case event.ChannelEmail:
		return t.Providers
	case event.ChannelSMS:
		return t.SMSProviders
	case event.ChannelWhatsApp:
		return t.WhatsAppProviders
	}
	return nil
}

// ValidationError lists everything wrong with a tenant, each problem
// naming its field.
type ValidationError struct {
	Problems []string
	// unknownPlan: one problem is a plan the plans checked against lack.
	unknownPlan bool
}

func (e *ValidationError) Error() string {
	return "invalid tenant: " + strings.Join(e.Problems, "; ")
}

// ErrUnknownPlan is what a ValidationError matches when the tenant's plan
// is not one of the plans it was checked against: a caller that knows
// where those came from can say so.
var ErrUnknownPlan = errors.New("not a plan")

// Is matches ErrUnknownPlan when the plan was among the problems.
func (e *ValidationError) Is(target error) bool { return target == ErrUnknownPlan && e.unknownPlan }

// namePattern is what a plan or provider name may be: like a tenant id, it
// may become part of a KV key or a metric label.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// colourPattern is a CSS hex colour: what every mail client renders.
var colourPattern = regexp.MustCompile(`^#[0-9A-Fa-f]{3}([0-9A-Fa-f]{3})?$`)

// Validate reports, as a *ValidationError, every problem of t: an id that
// cannot be a subject token, a plan plans does not name, an unknown status,
// a From that is not one address, a provider name that is not a simple
// token or appears twice.
func (t Tenant) Validate(plans Plans) error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if !event.ValidTenant(t.ID) {
		add("id: %q is not a tenant id (1 to 64 letters, digits, '-' or '_')", t.ID)
	}
	if err := event.CheckText(t.Name); err != nil {
		add("name: %q %v", t.Name, err)
	}
	_, known := plans[t.Plan]
	if !known {
		add("plan: %q is not a plan (known: %s)", t.Plan, strings.Join(plans.Names(), ", "))
	}
	if !slices.Contains(Statuses, t.Status) {
		add("status: %q is not a status (want %s or %s)", t.Status, Active, Suspended)
	}
	if t.From != "" {
		if err := checkFrom(t.From); err != nil {
			add("from: %q is not one address like \"Acme <orders@acme.example>\" (%v)", t.From, err)
		}
	}
	if t.LogoURL != "" {
		if u, err := url.Parse(t.LogoURL); err != nil || u.Scheme != "https" || u.Host == "" || event.CheckText(t.LogoURL) != nil {
			add("logo_url: %q is not an https URL (mail clients block others)", t.LogoURL)
		}
	}
	if t.Colour != "" && !colourPattern.MatchString(t.Colour) {
		add("colour: %q is not a colour like #1f4e79", t.Colour)
	}
	problems = append(problems, t.Retention.problems()...)
	problems = append(problems, originProblems(t.InboxOrigins)...)
	for _, c := range chainFields {
		chain := t.Chain(c.channel)
		for i, p := range chain {
			switch {
			case !namePattern.MatchString(p):
				add("%s[%d]: %q is not a provider name (1 to 64 letters, digits, '-' or '_')", c.field, i, p)
			case slices.Index(chain, p) < i:
				add("%s[%d]: %q is already in the chain", c.field, i, p)
			}
		}
	}
	if len(problems) > 0 {
		return &ValidationError{Problems: problems, unknownPlan: !known}
	}
	return nil
}

// checkFrom says why from is not one address, free of control characters
// as written and as its encoded words decode: "=?utf-8?q?=1B?=" is an ESC
// in the From header mail clients show.
func checkFrom(from string) error {
	a, err := mail.ParseAddress(from)
	if err != nil {
		return err
	}
	if err := event.CheckText(from); err != nil {
		return err
	}
	if err := event.CheckText(a.Name); err != nil {
		return fmt.Errorf("its name, decoded, %w", err)
	}
	return nil
}

// The registry's errors. Each wraps into a message that names the tenant:
// `tenant "acme" is not registered`.
var (
	// ErrNotFound: no tenant has this id.
	ErrNotFound = errors.New("not registered")
	// ErrExists: Create found the id taken.
	ErrExists = errors.New("already registered")
	// ErrConflict: Update lost the race to other writers every time it
	// tried.
	ErrConflict = errors.New("being changed by others too often to update")
)

// idError names the tenant an error is about: tenant "acme" is <err>.
func idError(id string, err error) error { return fmt.Errorf("tenant %q is %w", id, err) }

// MaxInboxOrigins bounds a tenant's inbox origins: a CORS check scans them
// on every browser request.
const MaxInboxOrigins = 20

// originProblems names each inbox origin that is not an origin a browser
// sends: https (http only for localhost, a developer's page), a host, an
// optional port, and nothing else — no path, query, user or trailing slash.
func originProblems(origins []string) []string {
	var problems []string
	if len(origins) > MaxInboxOrigins {
		problems = append(problems, fmt.Sprintf("inbox_origins: %d origins; at most %d", len(origins), MaxInboxOrigins))
	}
	for i, o := range origins {
		if why := checkOrigin(o); why != "" {
			problems = append(problems, fmt.Sprintf("inbox_origins[%d]: %q is not an origin like https://app.acme.example (%s)", i, o, why))
		} else if slices.Index(origins, o) < i {
			problems = append(problems, fmt.Sprintf("inbox_origins[%d]: %q is listed twice", i, o))
		}
	}
	return problems
}

func checkOrigin(o string) string {
	u, err := url.Parse(o)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return "scheme://host[:port]"
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#"):
		return "nothing after the host and port"
	case u.Scheme == "http" && u.Hostname() != "localhost":
		return "https; http only for localhost"
	case u.Scheme != "https" && u.Scheme != "http":
		return "https; http only for localhost"
	case o != u.Scheme+"://"+u.Host || strings.ToLower(o) != o:
		return "lowercase, as a browser sends it"
	}
	return ""
}
