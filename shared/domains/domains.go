// Package domains keeps each tenant's sending domains — a domain it sends
// email from, registered with its email provider (SES, SendGrid) — in the
// key-value bucket "sending_domains" (streams/KV_sending_domains): the DNS
// records the provider asks the tenant to publish, and the provider's last
// word on whether it has seen them.
//
// The provider decides whether a domain is verified; this package only
// remembers what it said and when — except on a provider account tenants
// share, where the provider's word proves nothing to the tenant asking and
// Herald asks its own proof first (Shared). A domain is keyed by tenant and the hex
// of the domain name, so the name's dots, which would split a KV key into
// tokens, are only in the value.
package domains

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/resource"
)

// Bucket is the key-value bucket declared in streams/KV_sending_domains.
const Bucket = "sending_domains"

// Status is where a domain stands with its provider.
type Status string

// The statuses a provider's answer comes to.
const (
	// Pending: the provider has not seen the records yet; DNS may take
	// hours to reach it.
	Pending Status = "pending"
	// Verified: the provider sends from the domain.
	Verified Status = "verified"
	// Failed: the provider looked and gave up; Detail says why.
	Failed Status = "failed"
)

// Record is a DNS record the tenant publishes for its provider.
type Record struct {
	// Type is the record type, upper case: CNAME, TXT, MX.
	Type string `json:"type"`
	// Name is the fully qualified name to publish it at.
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Entry is one sending domain of a tenant.
type Entry struct {
	Tenant string `json:"tenant"`
	Domain string `json:"domain"`
	// Provider is the name of the email provider it is registered with:
	// the platform's provider type (ses, sendgrid), or the tenant's own
	// account's name.
	Provider string `json:"provider"`
	// ProviderRef is the provider's own id for it, when the provider needs
	// one to answer about it (SendGrid's authenticated domain id).
	ProviderRef string   `json:"provider_ref,omitempty"`
	Records     []Record `json:"records"`
	Status      Status   `json:"status"`
	// Detail is the provider's reason for the status, in words.
	Detail string `json:"detail,omitempty"`
	// Proof is the token Herald asks the tenant to publish at
	// _herald.<domain> when the provider account is Shared: made for this
	// entry alone, and forgotten with it.
	Proof     string    `json:"proof,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// CheckedAt is when the provider last said what Status says.
	CheckedAt time.Time `json:"checked_at"`
}

// ErrNotFound: the tenant has no such sending domain.
var ErrNotFound = errors.New("domains: no such sending domain")

// ErrInvalid is what refusals of a domain or an entry match; their
// messages name the field ("domain: …").
var ErrInvalid = errors.New("domains: invalid entry")

type invalid string

func (e invalid) Error() string        { return string(e) }
func (e invalid) Is(target error) bool { return target == ErrInvalid || target == resource.ErrInvalid }

// Domains is the resource kind of sending domains: a domain is keyed by
// tenant and the hex of its name.
var Domains = resource.Kind[Entry]{Name: "sending domain", Bucket: Bucket, NotFound: ErrNotFound,
	Key:      func(e Entry) string { return key(e.Tenant, e.Domain) },
	Validate: Entry.validate, MaxBytes: resource.MaxPayload}

// Store reads and writes sending domains: the kind's resource store, with the
// package's own methods.
type Store resource.Store[Entry]

// Open binds to the bucket, which streams.Apply creates.
func Open(ctx context.Context, js jetstream.JetStream) (*Store, error) {
	s, err := resource.Open(ctx, js, Domains)
	return (*Store)(s), err
}

// Records is s as the generic store, for code that handles every kind of
// resource alike; the package's own methods normalize what they are given
// first.
func (s *Store) Records() *resource.Store[Entry] { return (*resource.Store[Entry])(s) }

// Normalize is the form a domain is kept and compared in: trimmed,
// lowercased, without the root's trailing dot.
func Normalize(domain string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), ".")
}

// Validate says what is wrong with domain (as Normalize leaves it), in
// words naming the field, matching ErrInvalid; nil if it is a hostname a
// provider can register: dotted labels of letters, digits and hyphens, at
// most 253 characters. A name in another script is registered in its
// ASCII form (xn--…), which is what DNS holds.
func Validate(domain string) error {
	switch {
	case domain == "":
		return invalid("domain: required")
	case len(domain) > 253:
		return invalid(fmt.Sprintf("domain: %d characters; a domain name has at most 253", len(domain)))
	case !strings.Contains(domain, "."):
		return invalid(fmt.Sprintf("domain: %q is not a domain name such as mail.example.com (it has no dot)", domain))
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if err := validLabel(domain, l); err != nil {
			return err
		}
	}
	if tld := labels[len(labels)-1]; strings.Trim(tld, "0123456789") == "" {
		return invalid(fmt.Sprintf("domain: %q is an address, not a domain name", domain))
	}
	return nil
}

func validLabel(domain, l string) error {
	switch {
	case l == "":
		return invalid(fmt.Sprintf("domain: %q has an empty label (two dots, or a leading dot)", domain))
	case len(l) > 63:
		return invalid(fmt.Sprintf("domain: %q has a label of %d characters; DNS allows 63", domain, len(l)))
	case l[0] == '-' || l[len(l)-1] == '-':
		return invalid(fmt.Sprintf("domain: %q has a label that begins or ends with a hyphen", domain))
	}
	for _, r := range l {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return invalid(fmt.Sprintf("domain: %q has %q, which a hostname cannot (a name in another script is registered as xn--…)", domain, r))
		}
	}
	return nil
}

func key(tenant, domain string) string {
	return tenant + "." + hex.EncodeToString([]byte(Normalize(domain)))
}

// Put keeps e as e.Tenant's entry for e.Domain, replacing one it had.
func (s *Store) Put(ctx context.Context, e Entry) (Entry, error) {
	e.Domain = Normalize(e.Domain)
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now().UTC()
	}
	if e.Records == nil {
		e.Records = []Record{} // none yet is an empty list, not null
	}
	if _, err := s.Records().Put(ctx, e); err != nil {
		return Entry{}, err
	}
	return e, nil
}

func (e Entry) validate() error {
	switch {
	case e.Tenant == "":
		return invalid("domains: a tenant is required")
	case e.Provider == "":
		return invalid("provider: required")
	case !slices.Contains([]Status{Pending, Verified, Failed}, e.Status):
		return invalid(fmt.Sprintf("status: %q is not one of pending, verified, failed", e.Status))
	}
	return Validate(e.Domain)
}

// Get returns the tenant's entry for domain, or ErrNotFound.
func (s *Store) Get(ctx context.Context, tenant, domain string) (Entry, error) {
	e, _, err := s.Records().Get(ctx, key(tenant, domain))
	return e, err
}

// Delete forgets the tenant's domain — here only: the provider keeps its
// registration. ErrNotFound if there was none.
func (s *Store) Delete(ctx context.Context, tenant, domain string) error {
	return s.Records().Delete(ctx, key(tenant, domain))
}

// List returns the tenant's sending domains in name order.
func (s *Store) List(ctx context.Context, tenant string) ([]Entry, error) {
	out, err := s.Records().All(ctx, tenant)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Domain, b.Domain) })
	return out, nil
}

// Verified says whether the tenant may send from domain: the provider
// said it verified it when last asked. An unknown domain is not verified,
// and the error is ErrNotFound, for a caller that treats "never
// registered" apart from "registered, not verified yet".
func (s *Store) Verified(ctx context.Context, tenant, domain string) (bool, Entry, error) {
	e, err := s.Get(ctx, tenant, domain)
	if err != nil {
		return false, Entry{}, err
	}
	return e.Status == Verified, e, nil
}
