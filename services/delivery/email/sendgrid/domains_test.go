package sendgrid_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/sendgrid"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/provider"
)

var _ domains.Registrar = (*sendgrid.Provider)(nil)

// A domain authenticated with SendGrid answers its three CNAME records and
// SendGrid's id for it, and is pending until SendGrid validates it.
func TestRegisterDomainAnswersTheRecordsAndSendGridsID(t *testing.T) {
	t.Parallel()
	fake := sendgridtest.New(t, apiKey)
	p := newProvider(t, fake.URL(), apiKey)

	st, err := p.RegisterDomain(context.Background(), "acme.example")
	require.NoError(t, err)
	registered := fake.Domains()
	require.Len(t, registered, 1)
	require.True(t, registered[0].AutomaticSecurity, "three CNAMEs SendGrid rotates itself")
	require.Equal(t, strconv.FormatInt(registered[0].ID, 10), st.ProviderRef)
	require.Equal(t, domains.Pending, st.Status)
	require.Equal(t, []domains.Record{
		{Type: "CNAME", Name: "em1001.acme.example", Value: "u1446226.wl001.sendgrid.net"},
		{Type: "CNAME", Name: "s1._domainkey.acme.example", Value: "s1.domainkey.u1446226.wl001.sendgrid.net"},
		{Type: "CNAME", Name: "s2._domainkey.acme.example", Value: "s2.domainkey.u1446226.wl001.sendgrid.net"},
	}, st.Records)
}

// The status is SendGrid's own validation: pending with its reasons until
// the records are found, then verified.
func TestDomainStatusIsSendGridsValidation(t *testing.T) {
	t.Parallel()
	fake := sendgridtest.New(t, apiKey)
	p := newProvider(t, fake.URL(), apiKey)
	ctx := context.Background()
	reg, err := p.RegisterDomain(ctx, "acme.example")
	require.NoError(t, err)

	st, err := p.DomainStatus(ctx, "acme.example", reg.ProviderRef)
	require.NoError(t, err)
	require.Equal(t, domains.Pending, st.Status)
	require.Equal(t, `dkim1: Expected CNAME at "s1._domainkey.acme.example" to match "s1.domainkey.u1446226.wl001.sendgrid.net", but none was found.; `+
		`dkim2: Expected CNAME at "s2._domainkey.acme.example" to match "s2.domainkey.u1446226.wl001.sendgrid.net", but none was found.; `+
		`mail_cname: Expected CNAME at "em1001.acme.example" to match "u1446226.wl001.sendgrid.net", but none was found.`, st.Detail)

	fake.VerifyDomain("acme.example")
	st, err = p.DomainStatus(ctx, "acme.example", reg.ProviderRef)
	require.NoError(t, err)
	require.Equal(t, domains.State{Status: domains.Verified}, st)

	st, err = p.DomainStatus(ctx, "gone.example", "99")
	require.NoError(t, err, "a domain SendGrid no longer has is an answer, not an outage")
	require.Equal(t, domains.Failed, st.Status)
	require.Contains(t, st.Detail, "SendGrid has no authenticated domain gone.example (id 99)")
	_, err = p.DomainStatus(ctx, "acme.example", "")
	require.ErrorContains(t, err, "add the domain again")
}

// SendGrid's refusal is an error in its words, classified as a send's
// would be, without the key.
func TestDomainRefusalsAreSendGridsWords(t *testing.T) {
	t.Parallel()
	fake := sendgridtest.New(t, apiKey)
	p := newProvider(t, fake.URL(), apiKey)
	_, err := p.RegisterDomain(context.Background(), "not a domain")
	require.ErrorContains(t, err, "HTTP 400: invalid domain (domain)")
	require.True(t, provider.IsPermanent(err))

	fake.Faults(func(int) sendgridtest.Fault { return sendgridtest.Unauthorized })
	_, err = p.RegisterDomain(context.Background(), "acme.example")
	require.ErrorContains(t, err, "authorization grant is invalid")
	require.True(t, provider.IsPermanent(err))
	require.NotContains(t, err.Error(), apiKey)

	fake.Faults(func(int) sendgridtest.Fault { return sendgridtest.ServerError })
	_, err = p.DomainStatus(context.Background(), "acme.example", "1")
	require.ErrorContains(t, err, "An internal server error occurred.")
	require.False(t, provider.IsPermanent(err))
	require.Len(t, fake.Domains(), 0)
}
