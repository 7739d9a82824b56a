package domains_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

var cname = domains.Record{Type: "CNAME", Name: "tok1._domainkey.acme.example", Value: "tok1.dkim.amazonses.com"}

// A domain is kept per tenant, compared without case, listed in name
// order, and forgotten.
func TestDomainsAreKeptPerTenantUntilDeleted(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	s, err := domains.Open(ctx, n.JS)
	require.NoError(t, err)

	e, err := s.Put(ctx, domains.Entry{Tenant: "acme", Domain: " Mail.ACME.example. ", Provider: "ses",
		Records: []domains.Record{cname}, Status: domains.Pending})
	require.NoError(t, err)
	require.Equal(t, "mail.acme.example", e.Domain)
	require.False(t, e.CreatedAt.IsZero())
	_, err = s.Put(ctx, domains.Entry{Tenant: "acme", Domain: "acme.example", Provider: "ses", Status: domains.Verified})
	require.NoError(t, err)

	got, err := s.Get(ctx, "acme", "MAIL.acme.example")
	require.NoError(t, err)
	require.Equal(t, e, got)
	_, err = s.Get(ctx, "globex", "mail.acme.example")
	require.ErrorIs(t, err, domains.ErrNotFound, "another tenant's domain is not this one's")

	list, err := s.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "acme.example", list[0].Domain, "in name order")
	require.Equal(t, []domains.Record{}, list[0].Records, "none is an empty list")
	other, err := s.List(ctx, "globex")
	require.NoError(t, err)
	require.Empty(t, other)

	require.NoError(t, s.Delete(ctx, "acme", "mail.acme.example"))
	_, err = s.Get(ctx, "acme", "mail.acme.example")
	require.ErrorIs(t, err, domains.ErrNotFound)
	require.ErrorIs(t, s.Delete(ctx, "acme", "mail.acme.example"), domains.ErrNotFound)
}

// A domain must be a hostname a provider can register; the refusal names
// the field and matches ErrInvalid.
func TestAnInvalidDomainIsRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	for domain, says := range map[string]string{
		"":                                   "domain: required",
		"localhost":                          "has no dot",
		"acme..example":                      "empty label",
		".acme.example":                      "empty label",
		"-acme.example":                      "begins or ends with a hyphen",
		"acme_mail.example":                  `'_'`,
		"bücher.example":                     "xn--",
		"192.0.2.1":                          "an address, not a domain name",
		strings.Repeat("a", 64) + ".example": "a label of 64 characters",
		strings.Repeat("abcdefghi.", 26) + "example": "267 characters; a domain name has at most 253",
	} {
		err := domains.Validate(domains.Normalize(domain))
		require.ErrorIs(t, err, domains.ErrInvalid, domain)
		require.ErrorContains(t, err, says, domain)
	}
	for _, ok := range []string{"acme.example", "mail.acme.example", "xn--bcher-kva.example", "a-1.b2.example", strings.Repeat("a", 63) + ".example"} {
		require.NoError(t, domains.Validate(ok), ok)
	}
}

// registrar is a provider as the store sees it: what it answers, and
// what it was asked.
type registrar struct {
	state      domains.State
	err        error
	registered []string
	asked      []string
}

func (r *registrar) RegisterDomain(_ context.Context, domain string) (domains.State, error) {
	r.registered = append(r.registered, domain)
	return r.state, r.err
}

func (r *registrar) DomainStatus(_ context.Context, domain, ref string) (domains.State, error) {
	r.asked = append(r.asked, domain+"#"+ref)
	return r.state, r.err
}

// Registering keeps the provider's records and status; checking keeps its
// new word and when it said it, with the records it gave before when it
// does not repeat them. Adding the domain again asks rather than registers.
func TestRegisterThenCheckKeepsTheProvidersWord(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	s, err := domains.Open(ctx, n.JS)
	require.NoError(t, err)
	sg := &registrar{state: domains.State{Records: []domains.Record{cname}, Status: domains.Pending, ProviderRef: "42",
		Detail: "mail_cname: no CNAME found"}}

	e, err := s.Register(ctx, "acme", "ACME.example", "sendgrid", sg)
	require.NoError(t, err)
	require.Equal(t, []string{"acme.example"}, sg.registered)
	require.Equal(t, domains.Entry{Tenant: "acme", Domain: "acme.example", Provider: "sendgrid", ProviderRef: "42",
		Records: []domains.Record{cname}, Status: domains.Pending, Detail: "mail_cname: no CNAME found",
		CreatedAt: e.CreatedAt, CheckedAt: e.CheckedAt}, e)
	verified, _, err := s.Verified(ctx, "acme", "acme.example")
	require.NoError(t, err)
	require.False(t, verified)

	sg.state = domains.State{Status: domains.Verified}
	checked, err := s.Check(ctx, "acme", "acme.example", "sendgrid", sg)
	require.NoError(t, err)
	require.Equal(t, []string{"acme.example#42"}, sg.asked, "asked by the provider's own id")
	require.Equal(t, domains.Verified, checked.Status)
	require.Empty(t, checked.Detail)
	require.Equal(t, []domains.Record{cname}, checked.Records, "the records still hold")
	require.Equal(t, e.CreatedAt, checked.CreatedAt)
	require.False(t, checked.CheckedAt.Before(e.CheckedAt))
	verified, got, err := s.Verified(ctx, "acme", "acme.example")
	require.NoError(t, err)
	require.True(t, verified)
	require.Equal(t, checked, got)

	_, err = s.Register(ctx, "acme", "acme.example", "sendgrid", sg)
	require.NoError(t, err)
	require.Len(t, sg.registered, 1, "registered once")
	require.Len(t, sg.asked, 2)

	// Deleted at the provider, the domain has failed; adding it again
	// registers it anew.
	sg.state = domains.State{Status: domains.Failed, Detail: "SendGrid has no authenticated domain acme.example (id 42)"}
	failed, err := s.Check(ctx, "acme", "acme.example", "sendgrid", sg)
	require.NoError(t, err)
	require.Equal(t, domains.Failed, failed.Status)
	sg.state = domains.State{Records: []domains.Record{cname}, Status: domains.Pending, ProviderRef: "43"}
	again, err := s.Register(ctx, "acme", "acme.example", "sendgrid", sg)
	require.NoError(t, err)
	require.Len(t, sg.registered, 2, "registered anew")
	require.Equal(t, "43", again.ProviderRef)
	require.Equal(t, e.CreatedAt, again.CreatedAt, "the tenant's domain since it was first added")

	_, err = s.Check(ctx, "acme", "acme.example", "ses", sg)
	require.ErrorIs(t, err, domains.ErrProviderChanged)
	require.ErrorContains(t, err, "acme.example is registered with sendgrid, and the tenant's email goes through ses now")
	_, err = s.Check(ctx, "acme", "other.example", "sendgrid", sg)
	require.ErrorIs(t, err, domains.ErrNotFound)
	_, _, err = s.Verified(ctx, "acme", "other.example")
	require.ErrorIs(t, err, domains.ErrNotFound)
}

// A provider's refusal is its own error, naming it, and nothing is kept;
// an invalid domain is refused before the provider is asked.
func TestAProvidersRefusalKeepsNothing(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	s, err := domains.Open(ctx, n.JS)
	require.NoError(t, err)
	ses := &registrar{err: errors.New("HTTP 400: BadRequestException: Invalid domain name")}

	_, err = s.Register(ctx, "acme", "acme.example", "ses", ses)
	var pe *domains.ProviderError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "ses", pe.Provider)
	require.EqualError(t, err, "ses: HTTP 400: BadRequestException: Invalid domain name")
	_, err = s.Get(ctx, "acme", "acme.example")
	require.ErrorIs(t, err, domains.ErrNotFound)

	_, err = s.Register(ctx, "acme", "not a domain", "ses", ses)
	require.ErrorIs(t, err, domains.ErrInvalid)
	require.Len(t, ses.registered, 1)
}

// The cache answers as the store does, from memory: what was there before
// it began, and what changes after, within moments.
func TestTheCacheFollowsTheBucket(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	s, err := domains.Open(ctx, n.JS)
	require.NoError(t, err)
	_, err = s.Put(ctx, domains.Entry{Tenant: "acme", Domain: "acme.example", Provider: "ses", Status: domains.Pending})
	require.NoError(t, err)
	c, err := domains.Watch(ctx, n.JS)
	require.NoError(t, err)
	t.Cleanup(c.Stop)

	verified, e, err := c.Verified(ctx, "acme", "ACME.example")
	require.NoError(t, err)
	require.False(t, verified)
	require.Equal(t, domains.Pending, e.Status)
	_, _, err = c.Verified(ctx, "globex", "acme.example")
	require.ErrorIs(t, err, domains.ErrNotFound)

	_, err = s.Put(ctx, domains.Entry{Tenant: "acme", Domain: "gone.example", Provider: "ses", Status: domains.Verified})
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "acme", "gone.example"))
	// Last: once the cache has it, it has seen the others (one stream, in
	// order).
	_, err = s.Put(ctx, domains.Entry{Tenant: "acme", Domain: "acme.example", Provider: "ses", Status: domains.Verified})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		verified, _, err := c.Verified(ctx, "acme", "acme.example")
		_, errGone := c.Get(ctx, "acme", "gone.example")
		return err == nil && verified && errors.Is(errGone, domains.ErrNotFound)
	}, 5*time.Second, 5*time.Millisecond)
}
