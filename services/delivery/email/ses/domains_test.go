package ses_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/ses"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/provider"
)

// A domain registered with SES answers its three Easy DKIM records, and
// is pending until SES finds them.
func TestRegisterDomainAnswersTheDKIMRecords(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	p := newProvider(t, srv.URL())

	st, err := p.RegisterDomain(context.Background(), "acme.example")
	require.NoError(t, err)
	tokens := srv.DKIMTokens("acme.example")
	require.Len(t, tokens, 3)
	var want []domains.Record
	for _, tok := range tokens {
		want = append(want, domains.Record{Type: "CNAME", Name: tok + "._domainkey.acme.example", Value: tok + ".dkim.amazonses.com"})
	}
	require.Equal(t, domains.State{Records: want, Status: domains.Pending,
		Detail: "SES has not found the DKIM records yet (PENDING)"}, st)
}

// Registering a domain SES has already (AlreadyExistsException) reads it
// instead: the same records, where it stands now.
func TestRegisterDomainTwiceReadsTheIdentity(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	p := newProvider(t, srv.URL())
	first, err := p.RegisterDomain(context.Background(), "acme.example")
	require.NoError(t, err)
	srv.VerifyDomain("acme.example")

	again, err := p.RegisterDomain(context.Background(), "acme.example")
	require.NoError(t, err)
	require.Equal(t, first.Records, again.Records)
	require.Equal(t, domains.Verified, again.Status)
	require.Equal(t, 3, srv.Calls(), "create, create refused, get")
}

// The status follows SES's word: pending, verified once SES finds the
// records, failed when it gives up — saying which failure.
func TestDomainStatusFollowsSES(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	p := newProvider(t, srv.URL())
	ctx := context.Background()
	for _, d := range []string{"acme.example", "globex.example", "initech.example"} {
		_, err := p.RegisterDomain(ctx, d)
		require.NoError(t, err)
	}

	st, err := p.DomainStatus(ctx, "acme.example", "")
	require.NoError(t, err)
	require.Equal(t, domains.Pending, st.Status)
	require.Len(t, st.Records, 3)
	srv.VerifyDomain("acme.example")
	st, err = p.DomainStatus(ctx, "acme.example", "")
	require.NoError(t, err)
	require.Equal(t, domains.Verified, st.Status)
	require.Empty(t, st.Detail)

	srv.FailDomain("globex.example")
	st, err = p.DomainStatus(ctx, "globex.example", "")
	require.NoError(t, err)
	require.Equal(t, domains.Failed, st.Status)
	require.Contains(t, st.Detail, "SES could not find the DKIM records (FAILED)")
	srv.FailDomain("initech.example", "TEMPORARY_FAILURE")
	st, err = p.DomainStatus(ctx, "initech.example", "")
	require.NoError(t, err)
	require.Equal(t, domains.Failed, st.Status)
	require.Contains(t, st.Detail, "TEMPORARY_FAILURE")

	st, err = p.DomainStatus(ctx, "deleted.example", "")
	require.NoError(t, err, "an identity SES no longer has is an answer, not an outage")
	require.Equal(t, domains.Failed, st.Status)
	require.Contains(t, st.Detail, "SES has no identity deleted.example (NotFoundException)")
}

// SES's refusal is an error in its words, classified as a send's would
// be, without the credentials.
func TestDomainRefusalsAreSESsWords(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	p := newProvider(t, srv.URL())
	_, err := p.RegisterDomain(context.Background(), "not-a-domain")
	require.ErrorContains(t, err, "HTTP 400: BadRequestException: Invalid domain name not-a-domain.")
	require.True(t, provider.IsPermanent(err))

	srv.Faults(func(int) sestest.Fault {
		return sestest.APIError(http.StatusForbidden, "AccessDeniedException", "not authorized to perform ses:CreateEmailIdentity")
	})
	_, err = p.RegisterDomain(context.Background(), "acme.example")
	require.ErrorContains(t, err, "AccessDeniedException")
	require.ErrorContains(t, err, "not authorized to perform ses:CreateEmailIdentity")
	require.NotContains(t, err.Error(), secretKey)
	require.NotContains(t, err.Error(), sessionToken)

	srv.Faults(func(int) sestest.Fault { return sestest.ServerError })
	_, err = p.DomainStatus(context.Background(), "acme.example", "")
	require.ErrorContains(t, err, "HTTP 500")
	require.False(t, provider.IsPermanent(err))
}

var _ domains.Registrar = (*ses.Provider)(nil)
