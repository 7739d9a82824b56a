package ses_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/ses"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/provider"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Made to be recognizable in any text they leak into.
const (
	secretKey    = "SECRET-must-not-leak-9f2c4e1a7b"
	sessionToken = "TOKEN-must-not-leak-3d8b6a0c5e"
)

// newProvider points a provider at srv with static credentials. Its HTTP
// client's idle connections are closed when the test ends, so no
// connection goroutine outlives it.
func newProvider(t *testing.T, endpoint string) *ses.Provider {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	p, err := ses.New(context.Background(), ses.Config{
		Region:      "eu-west-1",
		Endpoint:    endpoint,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", secretKey, sessionToken),
		HTTPClient:  &http.Client{Transport: tr},
	})
	require.NoError(t, err)
	return p
}

func TestConformance(t *testing.T) {
	emailtest.Run(t, func(t *testing.T) emailtest.Harness {
		srv := sestest.New(t)
		return emailtest.Harness{
			Provider: newProvider(t, srv.URL()),
			Received: func(t *testing.T) []emailtest.Parsed {
				var out []emailtest.Parsed
				for _, r := range srv.Received() {
					out = append(out, emailtest.Parse(t, r.Raw))
				}
				return out
			},
		}
	})
}

func TestNewRequiresRegion(t *testing.T) {
	t.Parallel()
	_, err := ses.New(context.Background(), ses.Config{Endpoint: "http://127.0.0.1:1"})
	require.ErrorContains(t, err, "region is required")
}

// faultCases is every fault the fake injects, with the classification the
// chain relies on and the words of SES's that must survive into the error.
var faultCases = []struct {
	fault      sestest.Fault
	permanent  bool
	ambiguous  bool
	retryAfter time.Duration
	words      []string
}{
	{fault: sestest.ServerError, words: []string{"HTTP 500", "InternalFailure", "fake-request-1"}},
	{fault: sestest.APIError(http.StatusServiceUnavailable, "ServiceUnavailable", "try later"), words: []string{"HTTP 503", "try later"}},
	{fault: sestest.Throttle(3 * time.Second), retryAfter: 3 * time.Second, words: []string{"HTTP 429", "TooManyRequestsException", "Maximum sending rate exceeded"}},
	{fault: sestest.Throttle(0), words: []string{"TooManyRequestsException"}},
	{fault: sestest.APIError(http.StatusBadRequest, "LimitExceededException", "Daily message quota exceeded."), words: []string{"LimitExceededException", "Daily message quota exceeded"}},
	{fault: sestest.NoMessageID, ambiguous: true, words: []string{"MessageId"}},
	{fault: sestest.InvalidAddress, permanent: true, words: []string{"HTTP 400", "BadRequestException: Illegal address"}},
	{fault: sestest.APIError(http.StatusBadRequest, "MessageRejected", "Email address is not verified."), permanent: true, words: []string{"MessageRejected", "not verified"}},
	{fault: sestest.APIError(http.StatusNotFound, "NotFoundException", "Configuration set does not exist."), permanent: true, words: []string{"HTTP 404", "NotFoundException"}},
	{fault: sestest.Unauthorized, permanent: true, words: []string{"authentication rejected", "HTTP 401", "UnrecognizedClientException"}},
	{fault: sestest.APIError(http.StatusForbidden, "AccessDeniedException", "not authorized to perform ses:SendEmail"), permanent: true, words: []string{"authentication rejected", "HTTP 403", "AccessDeniedException"}},
	// Account-level states are not about the message: another provider can
	// still deliver it, so they must not end the pass over the chain.
	{fault: sestest.AccountSuspended, words: []string{"HTTP 400", "AccountSuspendedException", "suspended"}},
	{fault: sestest.APIError(http.StatusBadRequest, "SendingPausedException", "Sending is paused for this account."), words: []string{"SendingPausedException"}},
	{fault: sestest.APIError(http.StatusBadRequest, "MailFromDomainNotVerifiedException", "MAIL FROM domain not verified."), words: []string{"MailFromDomainNotVerifiedException"}},
}

func TestFaultsAreClassifiedAfterOneRequest(t *testing.T) {
	t.Parallel()
	for _, tt := range faultCases {
		t.Run(tt.fault.String(), func(t *testing.T) {
			t.Parallel()
			srv := sestest.New(t)
			srv.Faults(func(int) sestest.Fault { return tt.fault })
			_, err := newProvider(t, srv.URL()).Send(context.Background(), emailtest.Sample())
			require.Error(t, err)
			require.Equal(t, 1, srv.Calls(), "the SDK must not retry on its own")
			require.Equal(t, tt.permanent, provider.IsPermanent(err), "permanent: %v", err)
			require.Equal(t, tt.ambiguous, provider.IsAmbiguous(err), "ambiguous: %v", err)
			require.Equal(t, tt.retryAfter, provider.RetryAfter(err), "retry after: %v", err)
			for _, w := range tt.words {
				require.ErrorContains(t, err, w)
			}
			// An ambiguous answer is a message SES may have taken.
			require.Equal(t, tt.ambiguous, len(srv.Received()) == 1, "recorded: %v", srv.Received())
		})
	}
}

func TestNoFaultIsOneRequest(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	r, err := newProvider(t, srv.URL()).Send(context.Background(), emailtest.Sample())
	require.NoError(t, err)
	require.Equal(t, 1, srv.Calls())
	got := srv.Received()
	require.Len(t, got, 1)
	require.Equal(t, got[0].MessageID, r.MessageID)
}

func TestRecoversAfterScriptedFaults(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	srv.Faults(emailtest.Sequence(sestest.Throttle(time.Second), sestest.ServerError))
	p := newProvider(t, srv.URL())
	_, err := p.Send(context.Background(), emailtest.Sample())
	require.Equal(t, time.Second, provider.RetryAfter(err))
	_, err = p.Send(context.Background(), emailtest.Sample())
	require.ErrorContains(t, err, "InternalFailure")
	r, err := p.Send(context.Background(), emailtest.Sample())
	require.NoError(t, err)
	require.NotEmpty(t, r.MessageID)
	require.Equal(t, 3, srv.Calls())
	require.Len(t, srv.Received(), 1)
}

func TestTimeoutIsAmbiguous(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	// SES holds its answer for an hour: only the deadline can end the send.
	srv.Faults(func(int) sestest.Fault { return sestest.Timeout(time.Hour) })
	ctx, expire := emailtest.Deadline(context.Background())
	wait := emailtest.SendInBackground(t, ctx, newProvider(t, srv.URL()), emailtest.Sample())
	require.Eventually(t, func() bool { return srv.Calls() == 1 }, 10*time.Second, time.Millisecond)
	expire() // after the request left: SES may have accepted it
	err := wait()
	require.Error(t, err)
	require.True(t, provider.IsAmbiguous(err), "a timed-out send may have been accepted: %v", err)
	require.False(t, provider.IsPermanent(err))
	require.Equal(t, 1, srv.Calls())
	require.Empty(t, srv.Received())
}

func TestUnreachableIsTransientNotAmbiguous(t *testing.T) {
	t.Parallel()
	port, err := heraldtest.RefusingPort(t, net.IPv4(127, 0, 0, 1))
	require.NoError(t, err)
	_, err = newProvider(t, fmt.Sprintf("http://127.0.0.1:%d", port)).Send(context.Background(), emailtest.Sample())
	require.Error(t, err)
	require.False(t, provider.IsPermanent(err))
	require.False(t, provider.IsAmbiguous(err), "a refused connection delivered nothing: %v", err)
	require.NotContains(t, err.Error(), secretKey)
}

func TestTagsAndMessageIDReachSES(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	// The default HTTP client, as production uses it.
	p, err := ses.New(context.Background(), ses.Config{
		Region:      "eu-west-1",
		Endpoint:    srv.URL(),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", secretKey, ""),
	})
	require.NoError(t, err)
	msg := emailtest.Sample()
	_, err = p.Send(context.Background(), msg)
	require.NoError(t, err)

	got := srv.Received()
	require.Len(t, got, 1)
	require.Equal(t, map[string]string{ses.TagNotificationID: msg.ID, ses.TagTenant: "acme"}, got[0].Tags)
	require.Equal(t, msg.From, got[0].From)
	require.Equal(t, []string{msg.To}, got[0].To)
	require.Contains(t, string(got[0].Raw), "Message-ID: <"+msg.MessageID()+">")
	require.Equal(t, "<"+msg.MessageID()+">", emailtest.Parse(t, got[0].Raw).MessageID)
}

func TestTagValuesAreMadeAcceptable(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	msg := emailtest.Sample()
	msg.Tenant = "Frutas del Sur/ñ.es@eu-1"
	msg.ID = strings.Repeat("x", 300)
	_, err := newProvider(t, srv.URL()).Send(context.Background(), msg)
	require.NoError(t, err)
	tags := srv.Received()[0].Tags
	require.Equal(t, "Frutas_del_Sur__.es@eu-1", tags[ses.TagTenant])
	require.Equal(t, strings.Repeat("x", 256), tags[ses.TagNotificationID])

	msg.Tenant = ""
	_, err = newProvider(t, srv.URL()).Send(context.Background(), msg)
	require.NoError(t, err)
	require.NotContains(t, srv.Received()[1].Tags, ses.TagTenant, "an empty value is left out, not sent")
}

func TestSecretsNeverInErrors(t *testing.T) {
	t.Parallel()
	faults := []sestest.Fault{sestest.Timeout(2 * time.Second)}
	for _, tt := range faultCases {
		faults = append(faults, tt.fault)
	}
	for _, f := range faults {
		t.Run(f.String(), func(t *testing.T) {
			t.Parallel()
			srv := sestest.New(t)
			srv.Faults(func(int) sestest.Fault { return f })
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := newProvider(t, srv.URL()).Send(ctx, emailtest.Sample())
			require.Error(t, err)
			for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				require.NotContains(t, text, secretKey)
				require.NotContains(t, text, sessionToken)
			}
		})
	}
}

// The fake is shared by goroutines in load tests; every send must be
// counted once and every acceptance recorded once.
func TestConcurrentSends(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	srv.Faults(emailtest.FailEvery(3, sestest.ServerError))
	p := newProvider(t, srv.URL())
	const sends = 60
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed int
		ids    = map[string]bool{}
	)
	for range sends {
		wg.Go(func() {
			r, err := p.Send(context.Background(), emailtest.Sample())
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			ids[r.MessageID] = true
		})
	}
	wg.Wait()
	require.Equal(t, sends, srv.Calls())
	require.Equal(t, sends/3, failed)
	require.Len(t, ids, sends-sends/3, "message ids must be unique")
	require.Len(t, srv.Received(), sends-sends/3)
}
