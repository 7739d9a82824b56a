package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/provider"
)

// domainTimeout bounds a request that asks the email provider: a round
// trip to it and two to NATS.
const domainTimeout = 30 * time.Second

// SendingDomain is a domain the tenant sends email from, registered with
// its email provider.
type SendingDomain struct {
	Tenant      string      `json:"tenant"`
	Domain      string      `json:"domain" example:"acme.example" doc:"As compared: lowercased."`
	Provider    string      `json:"provider" example:"ses" doc:"The email provider it is registered with: the platform's (ses, sendgrid) or the tenant's own account, by name."`
	ProviderRef string      `json:"provider_ref,omitempty" doc:"The provider's own id for it (SendGrid's), for its support."`
	Status      string      `json:"status" enum:"pending,verified,failed" doc:"The provider's word when last asked: pending until it finds the records, verified once it sends from the domain, failed when it gave up."`
	Detail      string      `json:"detail,omitempty" doc:"The provider's reason, in its words."`
	Records     []DNSRecord `json:"records" doc:"What to publish at the domain's DNS host. Providers find them within hours, at most 72."`
	CreatedAt   time.Time   `json:"created_at"`
	CheckedAt   time.Time   `json:"checked_at" doc:"When the provider last said what status says."`
}

// DNSRecord is a record to publish for the provider.
type DNSRecord struct {
	Type  string `json:"type" example:"CNAME"`
	Name  string `json:"name" example:"abcdefgh._domainkey.acme.example"`
	Value string `json:"value" example:"abcdefgh.dkim.amazonses.com"`
}

// NewSendingDomain is a domain to register.
type NewSendingDomain struct {
	// Not a format: the store checks it, and its answer names the field.
	Domain string `json:"domain" maxLength:"300" example:"acme.example"`
}

type createDomainInput struct {
	WebhookTenant
	Body NewSendingDomain
}

func (in createDomainInput) key() string { return domains.Normalize(in.Body.Domain) }

func (in createDomainInput) record(string) string { return in.key() }

type domainInput struct {
	WebhookTenant
	Domain string `path:"domain"`
}

func (in domainInput) key() string { return domains.Normalize(in.Domain) }

type listDomainsOutputBody struct {
	Domains []SendingDomain `json:"domains"`
}

func registerDomains(s *Service) {
	r := &resource[string, string, domains.Entry, SendingDomain]{
		what: "sending domains", path: "/v1/domains", item: "/{domain}", tags: []string{"Sending domains"},
		read: ScopeRead, write: ScopeSend,
		store: func(st *stores) (resourceStore[string, string, domains.Entry], error) {
			return sendingDomains{st.domains, s}, nil
		},
		view:     sendingDomainOf,
		notFound: domains.ErrNotFound, invalid: domains.ErrInvalid,
		absent: func(_, domain string) string { return domain + " is not one of the tenant's sending domains" },
		broken: "the sending domains could not be read or written right now",
		own:    s.providerProblem,
	}
	listRoute(s, r, route{Operation: huma.Operation{OperationID: "list-domains",
		Summary: "List sending domains", Description: "The tenant's sending domains in name order, as the provider last described them (it is not asked)."}},
		func(l []SendingDomain) listDomainsOutputBody { return listDomainsOutputBody{l} })
	createRoute[createDomainInput](s, r, route{timeout: domainTimeout, Operation: huma.Operation{OperationID: "create-domain",
		Summary: "Register a sending domain",
		Description: "Registers the domain with the tenant's email provider (the first of its chain that registers domains: ses or sendgrid) " +
			"and answers the DNS records to publish for it. On the platform's SES account, which every tenant shares, the tenant first proves the " +
			"domain to Herald: the answer is one TXT record (_herald.<domain>, a token made for the tenant), and SES is asked only once Herald finds it. " +
			"Adding a domain again registers it once: the provider is asked where it stands instead " +
			"(one that failed is registered anew, as when it was deleted at the provider). " +
			"A provider's refusal is a 503 in its words."}},
		sendingDomainOf)
	getRoute[domainInput](s, r, route{timeout: domainTimeout, Operation: huma.Operation{OperationID: "get-domain",
		Summary:     "Check a sending domain",
		Description: "Asks the provider where the domain stands now, keeps its answer, and answers it.",
		Errors:      []int{http.StatusConflict}}})
	deleteRoute[domainInput](s, r, route{Operation: huma.Operation{OperationID: "delete-domain",
		Summary: "Forget a sending domain",
		Description: "Herald forgets the domain; the provider keeps it registered, and sends from it still, until it is removed there " +
			"(the SES or SendGrid console)."}})
}

// sendingDomains is the domain store as the API exposes it: a domain is
// put by registering it with the tenant's email provider, and got by
// asking the provider where it stands.
type sendingDomains struct {
	*domains.Store
	s *Service
}

func (d sendingDomains) Get(ctx context.Context, tenant, domain string) (domains.Entry, error) {
	if err := domains.Validate(domain); err != nil {
		return domains.Entry{}, err
	}
	// Unknown before the provider is looked for: a 404 says more than a 503.
	if _, err := d.Store.Get(ctx, tenant, domain); err != nil {
		return domains.Entry{}, err
	}
	name, r, err := d.s.registrar(ctx, tenant)
	if err != nil {
		return domains.Entry{}, err
	}
	return d.Check(ctx, tenant, domain, name, r)
}

func (d sendingDomains) Put(ctx context.Context, tenant, domain string) (domains.Entry, error) {
	if err := domains.Validate(domain); err != nil {
		return domains.Entry{}, err
	}
	name, r, err := d.s.registrar(ctx, tenant)
	if err != nil {
		return domains.Entry{}, err
	}
	return d.Register(ctx, tenant, domain, name, r)
}

// registrar is the provider that registers the tenant's domains, by name.
// Why it could not be set up is the operator's to read, in the log: it
// names the configuration, not the tenant's domain.
func (s *Service) registrar(ctx context.Context, tenant string) (string, domains.Registrar, error) {
	if s.cfg.Domains == nil {
		return "", nil, huma.Error503ServiceUnavailable(domains.ErrNoRegistrar.Error())
	}
	name, r, err := s.cfg.Domains(ctx, tenant)
	switch {
	case errors.Is(err, domains.ErrNoRegistrar), err == nil && r == nil:
		return "", nil, huma.Error503ServiceUnavailable(domains.ErrNoRegistrar.Error())
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "email provider for sending domains not set up", "tenant", tenant, "error", err)
		return "", nil, unavailable("the tenant's email provider could not be set up")
	}
	return name, r, nil
}

// providerProblem answers what the email provider said of a domain, or
// nil for what it did not say. A provider's refusal is told in its words,
// which never hold a credential (the providers leave them out).
func (s *Service) providerProblem(ctx context.Context, tenant, domain string, err error) error {
	var pe *domains.ProviderError
	switch {
	case errors.Is(err, domains.ErrProviderChanged):
		return huma.Error409Conflict(strings.TrimPrefix(err.Error(), domains.ErrProviderChanged.Error()+": "))
	case !errors.As(err, &pe):
		return nil
	}
	s.cfg.Logger.WarnContext(ctx, "email provider did not register or check a sending domain", "tenant", tenant,
		"domain", domain, "provider", pe.Provider, "error", err)
	var refused *provider.PermanentError
	if errors.As(pe.Err, &refused) {
		// Trying again would not help: no Retry-After.
		return huma.Error503ServiceUnavailable("the email provider " + pe.Provider + " refused: " + refused.Err.Error())
	}
	return unavailable("the email provider " + pe.Provider + " did not answer: " + pe.Err.Error())
}

func sendingDomainOf(e domains.Entry) SendingDomain {
	d := SendingDomain{Tenant: e.Tenant, Domain: e.Domain, Provider: e.Provider, ProviderRef: e.ProviderRef, Status: string(e.Status),
		Detail: e.Detail, Records: make([]DNSRecord, len(e.Records)), CreatedAt: e.CreatedAt, CheckedAt: e.CheckedAt}
	for i, r := range e.Records {
		d.Records[i] = DNSRecord(r)
	}
	return d
}
