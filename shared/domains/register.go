package domains

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Registrar is an email provider that registers sending domains: SES and
// SendGrid implement it (email.DomainRegistrar names it beside the
// providers).
type Registrar interface {
	// RegisterDomain asks the provider to send from domain, and returns the
	// records to publish and where the domain stands. Registering a domain
	// the provider has already is not an error: it answers as for the first
	// time.
	RegisterDomain(ctx context.Context, domain string) (State, error)
	// DomainStatus asks the provider where domain stands now; ref is the
	// ProviderRef RegisterDomain returned.
	DomainStatus(ctx context.Context, domain, ref string) (State, error)
}

// State is a provider's answer about a domain. Records may be empty when
// the provider does not repeat them; the ones it gave before still hold.
type State struct {
	Records     []Record
	Status      Status
	Detail      string
	ProviderRef string
}

// ErrNoRegistrar: none of the tenant's email providers registers domains.
var ErrNoRegistrar = errors.New("sending domains need an email provider that registers domains (ses or sendgrid)")

// ErrProviderChanged: the domain is registered with a provider that no
// longer sends the tenant's email, which cannot be asked about it.
var ErrProviderChanged = errors.New("domains: registered with another provider")

// ProviderError is a provider's failure to answer, or its refusal, in its
// words (which name no credential: the providers leave them out).
type ProviderError struct {
	Provider string
	Err      error
}

func (e *ProviderError) Error() string { return e.Provider + ": " + e.Err.Error() }
func (e *ProviderError) Unwrap() error { return e.Err }

// Register registers the tenant's domain with r, the provider named
// provider, and keeps what it answered. A domain the tenant registered with
// the same provider before is asked about again instead, so adding it twice
// registers it once (SendGrid would make a second authenticated domain) —
// unless the provider had failed it, when it is registered anew: that is
// how a registration deleted at the provider is made again.
func (s *Store) Register(ctx context.Context, tenant, domain, provider string, r Registrar) (Entry, error) {
	domain = Normalize(domain)
	if err := Validate(domain); err != nil {
		return Entry{}, err
	}
	old, err := s.Get(ctx, tenant, domain)
	switch {
	case err == nil && old.Provider == provider && old.Status != Failed:
		return s.Check(ctx, tenant, domain, provider, r)
	case err != nil && !errors.Is(err, ErrNotFound):
		return Entry{}, err
	}
	e := Entry{Tenant: tenant, Domain: domain, Provider: provider, CreatedAt: old.CreatedAt, Proof: old.Proof}
	st, err := s.ask(ctx, &e, r, func() (State, error) { return r.RegisterDomain(ctx, domain) })
	if err != nil {
		return Entry{}, &ProviderError{Provider: provider, Err: err}
	}
	return s.Put(ctx, s.apply(e, st))
}

// Check asks r, the provider named provider, where the tenant's domain
// stands now, and keeps its answer. ErrNotFound if the tenant has no such
// domain; ErrProviderChanged if it is registered with another provider.
func (s *Store) Check(ctx context.Context, tenant, domain, provider string, r Registrar) (Entry, error) {
	e, err := s.Get(ctx, tenant, domain)
	if err != nil {
		return Entry{}, err
	}
	if e.Provider != provider {
		return e, fmt.Errorf("%w: %s is registered with %s, and the tenant's email goes through %s now; add it again to register it there",
			ErrProviderChanged, e.Domain, e.Provider, provider)
	}
	st, err := s.ask(ctx, &e, r, func() (State, error) { return r.DomainStatus(ctx, e.Domain, e.ProviderRef) })
	if err != nil {
		return Entry{}, &ProviderError{Provider: provider, Err: err}
	}
	return s.Put(ctx, s.apply(e, st))
}

// ask is the provider's answer about e: what call asks it, unless r is a
// Shared account (or a pointer to one), which asks Herald's proof for the
// tenant first, giving e a token if it has none yet.
func (s *Store) ask(ctx context.Context, e *Entry, r Registrar, call func() (State, error)) (State, error) {
	p, shared := r.(prover)
	if !shared {
		return call()
	}
	if e.Proof == "" {
		e.Proof = newProof()
	}
	return p.state(ctx, *e)
}

// prover is what Shared is to ask: its state.
type prover interface {
	state(ctx context.Context, e Entry) (State, error)
}

// apply is e as the provider's answer st has it, checked now.
func (s *Store) apply(e Entry, st State) Entry {
	if len(st.Records) > 0 {
		e.Records = st.Records
	}
	if st.ProviderRef != "" {
		e.ProviderRef = st.ProviderRef
	}
	e.Status, e.Detail, e.CheckedAt = st.Status, st.Detail, time.Now().UTC()
	return e
}
