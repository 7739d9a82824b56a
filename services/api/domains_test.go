package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
	"github.com/heraldhq/herald/services/delivery/email/ses"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/domains/dnstest"
)

// sesProvider is the ses provider on its fake.
func sesProvider(t *testing.T) (*ses.Provider, *sestest.Server) {
	t.Helper()
	srv := sestest.New(t)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	p, err := ses.New(context.Background(), ses.Config{Region: "eu-west-1", Endpoint: srv.URL(),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "api-test-secret", ""), HTTPClient: &http.Client{Transport: tr}})
	require.NoError(t, err)
	return p, srv
}

// sesDomains is an API whose tenants register their domains with SES,
// played by its fake.
func sesDomains(t *testing.T) (*bundle, *sestest.Server) {
	t.Helper()
	p, srv := sesProvider(t)
	b := setup(t, api.Config{Domains: func(context.Context, string) (string, domains.Registrar, error) { return ses.Name, p, nil }})
	return b, srv
}

func sendingDomain(t *testing.T, a answer) api.SendingDomain {
	t.Helper()
	var d api.SendingDomain
	require.NoError(t, json.Unmarshal([]byte(a.body), &d), a.body)
	return d
}

// A domain is registered with the provider and answered with the records
// to publish; checking it asks the provider again, and once the provider
// found them it is verified. It is listed, then forgotten.
func TestSendingDomainsAreRegisteredCheckedListedAndForgotten(t *testing.T) {
	t.Parallel()
	b, srv := sesDomains(t)

	added := b.sendJSON(t, http.MethodPost, "/v1/domains", acmeSend, `{"domain":" Acme.Example "}`)
	require.Equal(t, http.StatusCreated, added.status, added.body)
	d := sendingDomain(t, added)
	tokens := srv.DKIMTokens("acme.example")
	require.Len(t, tokens, 3)
	require.Equal(t, api.SendingDomain{Tenant: "acme", Domain: "acme.example", Provider: "ses", Status: "pending",
		Detail: "SES has not found the DKIM records yet (PENDING)",
		Records: []api.DNSRecord{
			{Type: "CNAME", Name: tokens[0] + "._domainkey.acme.example", Value: tokens[0] + ".dkim.amazonses.com"},
			{Type: "CNAME", Name: tokens[1] + "._domainkey.acme.example", Value: tokens[1] + ".dkim.amazonses.com"},
			{Type: "CNAME", Name: tokens[2] + "._domainkey.acme.example", Value: tokens[2] + ".dkim.amazonses.com"},
		}, CreatedAt: d.CreatedAt, CheckedAt: d.CheckedAt}, d)

	checked := b.do(t, http.MethodGet, "/v1/domains/acme.example", acmeRead, nil)
	require.Equal(t, http.StatusOK, checked.status, checked.body)
	require.Equal(t, "pending", sendingDomain(t, checked).Status)

	srv.VerifyDomain("acme.example")
	checked = b.do(t, http.MethodGet, "/v1/domains/ACME.example", acmeRead, nil)
	require.Equal(t, http.StatusOK, checked.status, checked.body)
	verified := sendingDomain(t, checked)
	require.Equal(t, "verified", verified.Status)
	require.Empty(t, verified.Detail)
	require.Equal(t, d.Records, verified.Records)
	require.Equal(t, d.CreatedAt, verified.CreatedAt)
	require.True(t, verified.CheckedAt.After(d.CheckedAt), "checked now")

	later := b.sendJSON(t, http.MethodPost, "/v1/domains", acmeSend, `{"domain":"mail.acme.example"}`)
	require.Equal(t, http.StatusCreated, later.status, later.body)
	list := b.do(t, http.MethodGet, "/v1/domains", acmeRead, nil)
	require.Equal(t, http.StatusOK, list.status, list.body)
	var got struct{ Domains []api.SendingDomain }
	require.NoError(t, json.Unmarshal([]byte(list.body), &got))
	require.Len(t, got.Domains, 2)
	require.Equal(t, verified, got.Domains[0], "in name order, as last checked")
	require.Equal(t, "mail.acme.example", got.Domains[1].Domain)

	forgotten := b.do(t, http.MethodDelete, "/v1/domains/acme.example", acmeSend, nil)
	require.Equal(t, http.StatusNoContent, forgotten.status, forgotten.body)
	for _, a := range []answer{
		b.do(t, http.MethodGet, "/v1/domains/acme.example", acmeRead, nil),
		b.do(t, http.MethodDelete, "/v1/domains/acme.example", acmeSend, nil),
	} {
		require.Equal(t, http.StatusNotFound, a.status, a.body)
		require.Equal(t, "application/problem+json", a.header.Get("Content-Type"))
		require.Contains(t, a.body, "acme.example is not one of the tenant's sending domains")
	}
	require.NotContains(t, b.do(t, http.MethodGet, "/v1/domains", acmeRead, nil).body, `"acme.example"`)
	require.NotNil(t, srv.DKIMTokens("acme.example"), "SES keeps it: forgetting is Herald's only")
}

// A tenant's key sees and forgets its own tenant's domains only; an admin
// key names the tenant, as for suppressions.
func TestSendingDomainsAreTheTenantsOwn(t *testing.T) {
	t.Parallel()
	b, _ := sesDomains(t)
	added := b.sendJSON(t, http.MethodPost, "/v1/domains?tenant=globex", adminKey, `{"domain":"globex.example"}`)
	require.Equal(t, http.StatusCreated, added.status, added.body)
	require.Contains(t, added.body, `"tenant":"globex"`)

	require.JSONEq(t, `{"domains":[]}`, b.do(t, http.MethodGet, "/v1/domains", acmeRead, nil).body)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/domains/globex.example", acmeRead, nil).status, "looked for among acme's")
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodDelete, "/v1/domains/globex.example", acmeSend, nil).status)
	require.Equal(t, http.StatusForbidden, b.do(t, http.MethodGet, "/v1/domains/globex.example?tenant=globex", acmeRead, nil).status)
	require.Equal(t, http.StatusForbidden, b.do(t, http.MethodGet, "/v1/domains?tenant=globex", acmeRead, nil).status)
	require.Equal(t, http.StatusForbidden, b.sendJSON(t, http.MethodPost, "/v1/domains?tenant=globex", acmeSend, `{"domain":"x.example"}`).status)
	require.Equal(t, http.StatusUnprocessableEntity, b.do(t, http.MethodGet, "/v1/domains", adminKey, nil).status, "an admin key names the tenant")

	require.Contains(t, b.do(t, http.MethodGet, "/v1/domains/globex.example", globexRead, nil).body, `"domain":"globex.example"`)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/domains/globex.example?tenant=globex", adminKey, nil).status)
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/v1/domains/globex.example", globexSend, nil).status)
}

// What is not a domain name is refused in words naming the field, before
// the provider is asked; registering needs the send scope.
func TestSendingDomainsAreRefusedWithTheReason(t *testing.T) {
	t.Parallel()
	b, srv := sesDomains(t)
	for body, says := range map[string]string{
		`{"domain":"localhost"}`:      `domain: \"localhost\" is not a domain name such as mail.example.com (it has no dot)`,
		`{"domain":"acme_mail.test"}`: `domain: \"acme_mail.test\" has '_'`,
		`{"domain":""}`:               "domain: required",
	} {
		got := b.sendJSON(t, http.MethodPost, "/v1/domains", acmeSend, body)
		require.Equal(t, http.StatusUnprocessableEntity, got.status, "%s: %s", body, got.body)
		require.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
		require.Contains(t, got.body, says, body)
	}
	got := b.do(t, http.MethodGet, "/v1/domains/192.0.2.1", acmeRead, nil)
	require.Equal(t, http.StatusUnprocessableEntity, got.status, got.body)
	require.Contains(t, got.body, "an address, not a domain name")
	require.Equal(t, http.StatusForbidden, b.sendJSON(t, http.MethodPost, "/v1/domains", acmeRead, `{"domain":"acme.example"}`).status,
		"registering needs the send scope")
	require.Zero(t, srv.Calls(), "SES was not asked")
	require.JSONEq(t, `{"domains":[]}`, b.do(t, http.MethodGet, "/v1/domains", acmeRead, nil).body, "nothing was stored")
}

// Without a provider that registers domains, registering and checking
// answer 503 saying so; what is stored can still be listed.
func TestSendingDomainsNeedAProviderThatRegistersThem(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	got := b.sendJSON(t, http.MethodPost, "/v1/domains", acmeSend, `{"domain":"acme.example"}`)
	require.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
	require.Contains(t, got.body, "sending domains need an email provider that registers domains (ses or sendgrid)")
	require.JSONEq(t, `{"domains":[]}`, b.do(t, http.MethodGet, "/v1/domains", acmeRead, nil).body)
}

// A provider's refusal is answered in its words, without its key, and
// nothing is stored; a provider that does not answer is worth trying
// again (Retry-After).
func TestAProvidersRefusalIsAnsweredInItsWords(t *testing.T) {
	t.Parallel()
	const key = "SG.api-test-key-must-not-leak"
	fake := sendgridtest.New(t, key)
	p, err := sendgrid.New(sendgrid.Config{APIKey: key, Endpoint: fake.URL()})
	require.NoError(t, err)
	b := setup(t, api.Config{Domains: func(context.Context, string) (string, domains.Registrar, error) { return sendgrid.Name, p, nil }})

	fake.Faults(func(int) sendgridtest.Fault { return sendgridtest.Unauthorized })
	got := b.sendJSON(t, http.MethodPost, "/v1/domains", acmeSend, `{"domain":"acme.example"}`)
	require.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
	require.Contains(t, got.body, "the email provider sendgrid refused: authentication rejected: HTTP 401: The provided authorization grant is invalid")
	require.NotContains(t, got.body, key)
	require.Empty(t, got.header.Get("Retry-After"), "trying again would not help")
	require.JSONEq(t, `{"domains":[]}`, b.do(t, http.MethodGet, "/v1/domains", acmeRead, nil).body, "nothing was stored")

	fake.Faults(nil)
	added := b.sendJSON(t, http.MethodPost, "/v1/domains", acmeSend, `{"domain":"acme.example"}`)
	require.Equal(t, http.StatusCreated, added.status, added.body)
	require.Equal(t, "1", sendingDomain(t, added).ProviderRef, "SendGrid's id")
	fake.Faults(func(int) sendgridtest.Fault { return sendgridtest.ServerError })
	got = b.do(t, http.MethodGet, "/v1/domains/acme.example", acmeRead, nil)
	require.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
	require.Contains(t, got.body, "the email provider sendgrid did not answer")
	require.NotEmpty(t, got.header.Get("Retry-After"))

	fake.Faults(nil)
	again := b.sendJSON(t, http.MethodPost, "/v1/domains", acmeSend, `{"domain":"acme.example"}`)
	require.Equal(t, http.StatusCreated, again.status, again.body)
	require.Len(t, fake.Domains(), 1, "adding it again asks SendGrid rather than authenticating it twice")
	require.Contains(t, sendingDomain(t, again).Detail, "dkim1: Expected CNAME")
}

// A domain registered with a provider that no longer sends the tenant's
// email cannot be checked there: 409, saying to add it again.
func TestADomainOfAnotherProviderIsAConflict(t *testing.T) {
	t.Parallel()
	p, _ := sesProvider(t)
	var name atomic.Value // the tenant's first provider that registers domains
	name.Store("acme-ses")
	b := setup(t, api.Config{Domains: func(context.Context, string) (string, domains.Registrar, error) {
		return name.Load().(string), p, nil
	}})
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPost, "/v1/domains", acmeSend, `{"domain":"acme.example"}`).status)

	name.Store("ses")
	got := b.do(t, http.MethodGet, "/v1/domains/acme.example", acmeRead, nil)
	require.Equal(t, http.StatusConflict, got.status, got.body)
	require.Contains(t, got.body, "acme.example is registered with acme-ses, and the tenant's email goes through ses now; add it again to register it there")
	added := b.sendJSON(t, http.MethodPost, "/v1/domains", acmeSend, `{"domain":"acme.example"}`)
	require.Equal(t, http.StatusCreated, added.status, added.body)
	require.Equal(t, "ses", sendingDomain(t, added).Provider)
	require.WithinDuration(t, time.Now(), sendingDomain(t, added).CheckedAt, time.Minute)
}

// sharedSESDomains is an API whose tenants all register their domains
// with one SES account — the platform's — and so prove each to Herald
// first, with a TXT record on the fake DNS.
func sharedSESDomains(t *testing.T) (*bundle, *sestest.Server, *dnstest.Server) {
	t.Helper()
	p, srv := sesProvider(t)
	dns := dnstest.New(t)
	shared := domains.Shared{Registrar: p, Resolver: dns.Resolver()}
	b := setup(t, api.Config{Domains: func(context.Context, string) (string, domains.Registrar, error) { return ses.Name, shared, nil }})
	return b, srv, dns
}

// On an SES account the tenants share, a domain is verified for a tenant
// only by the proof published for that tenant. Registering a domain
// another tenant has verified answers exactly as registering one nobody
// has — pending, one TXT record of the caller's own to publish, nothing of
// SES's — asks SES nothing, and stays so however often it is checked.
func TestASharedSESAccountVerifiesADomainOnlyByTheTenantsOwnProof(t *testing.T) {
	t.Parallel()
	b, srv, dns := sharedSESDomains(t)
	domain := func(a answer, status int) api.SendingDomain {
		t.Helper()
		require.Equal(t, status, a.status, a.body)
		return sendingDomain(t, a)
	}

	// acme proves acme.example to Herald, then SES finds its DKIM records.
	added := domain(b.sendJSON(t, http.MethodPost, "/v1/domains", acmeSend, `{"domain":"acme.example"}`), http.StatusCreated)
	require.Equal(t, "pending", added.Status)
	require.Len(t, added.Records, 1, added.Records)
	proof := added.Records[0]
	require.Equal(t, "TXT", proof.Type)
	require.Equal(t, "_herald.acme.example", proof.Name)
	require.Regexp(t, `^herald-verification=[a-z2-7]{26}$`, proof.Value)
	require.Zero(t, srv.Calls(), "SES is not asked before Herald finds the proof")
	dns.PublishTXT(proof.Name, "v=spf1 -all") // other records beside it
	dns.PublishTXT(proof.Name, proof.Value)
	checked := domain(b.do(t, http.MethodGet, "/v1/domains/acme.example", acmeRead, nil), http.StatusOK)
	require.Equal(t, "pending", checked.Status)
	require.Equal(t, "SES has not found the DKIM records yet (PENDING)", checked.Detail)
	tokens := srv.DKIMTokens("acme.example")
	require.Len(t, tokens, 3, "registered with SES once proven")
	require.Equal(t, append([]api.DNSRecord{proof}, api.DNSRecord{Type: "CNAME", Name: tokens[0] + "._domainkey.acme.example",
		Value: tokens[0] + ".dkim.amazonses.com"}), checked.Records[:2])
	srv.VerifyDomain("acme.example")
	require.Equal(t, "verified", domain(b.do(t, http.MethodGet, "/v1/domains/acme.example", acmeRead, nil), http.StatusOK).Status)

	// globex registers acme.example, and a domain nobody has registered.
	calls := srv.Calls()
	theirs := b.sendJSON(t, http.MethodPost, "/v1/domains", globexSend, `{"domain":"acme.example"}`)
	fresh := b.sendJSON(t, http.MethodPost, "/v1/domains", globexSend, `{"domain":"fresh.example"}`)
	require.Equal(t, shape(domain(fresh, http.StatusCreated), "fresh.example"), shape(domain(theirs, http.StatusCreated), "acme.example"),
		"the same answer for acme's verified domain as for a new one")
	for _, a := range []answer{theirs, b.do(t, http.MethodGet, "/v1/domains/acme.example", globexRead, nil)} {
		d := domain(a, a.status)
		require.Equal(t, "pending", d.Status, "globex has not proven acme.example")
		require.NotEqual(t, proof.Value, d.Records[0].Value, "a token of globex's own")
		for _, tok := range tokens {
			require.NotContains(t, a.body, tok, "nothing of SES's identity")
		}
	}
	require.Equal(t, shape(domain(b.do(t, http.MethodGet, "/v1/domains/fresh.example", globexRead, nil), http.StatusOK), "fresh.example"),
		shape(domain(b.do(t, http.MethodGet, "/v1/domains/acme.example", globexRead, nil), http.StatusOK), "acme.example"),
		"checked, the same again")
	require.Equal(t, calls, srv.Calls(), "SES was not asked for globex")
	require.Equal(t, "verified", domain(b.do(t, http.MethodGet, "/v1/domains/acme.example", acmeRead, nil), http.StatusOK).Status,
		"acme's stays verified")
}

// shape is d with what differs between any two fresh registrations — the
// domain's name, the token, the times — made the same.
func shape(d api.SendingDomain, name string) api.SendingDomain {
	d.Domain = strings.ReplaceAll(d.Domain, name, "example.test")
	d.Detail = strings.ReplaceAll(d.Detail, name, "example.test")
	d.CreatedAt, d.CheckedAt = time.Time{}, time.Time{}
	records := make([]api.DNSRecord, len(d.Records))
	for i, r := range d.Records {
		r.Name = strings.ReplaceAll(r.Name, name, "example.test")
		if prefix, _, ok := strings.Cut(r.Value, "="); ok && r.Type == "TXT" {
			r.Value = prefix + "=token"
		}
		records[i] = r
	}
	d.Records = records
	return d
}
