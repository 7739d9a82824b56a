package sendgrid_test

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/provider"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const apiKey = "SG.test-key.0123456789"

func newProvider(t *testing.T, endpoint, key string) *sendgrid.Provider {
	t.Helper()
	p, err := sendgrid.New(sendgrid.Config{APIKey: key, Endpoint: endpoint})
	require.NoError(t, err)
	return p
}

func TestConformance(t *testing.T) {
	emailtest.Run(t, func(t *testing.T) emailtest.Harness {
		fake := sendgridtest.New(t, apiKey)
		return emailtest.Harness{
			Provider: newProvider(t, fake.URL(), apiKey),
			Received: func(*testing.T) []emailtest.Parsed {
				var out []emailtest.Parsed
				for _, r := range fake.Received() {
					out = append(out, r.Parsed())
				}
				return out
			},
		}
	})
}

func TestFaultClassification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fault      sendgridtest.Fault
		deadline   time.Duration
		permanent  bool
		ambiguous  bool
		retryAfter time.Duration
		words      string
		recorded   bool
	}{
		{fault: sendgridtest.ServerError, words: "An internal server error occurred."},
		{fault: sendgridtest.Throttle(7 * time.Second), retryAfter: 7 * time.Second, words: "too many requests"},
		{fault: sendgridtest.Timeout(time.Hour), deadline: 100 * time.Millisecond, ambiguous: true, words: "deadline exceeded"},
		// SendGrid accepted it, so it may go out: a retry could duplicate it.
		{fault: sendgridtest.NoMessageID, ambiguous: true, words: "X-Message-Id", recorded: true},
		{fault: sendgridtest.InvalidAddress, permanent: true, words: "Does not contain a valid address. (personalizations.0.to.0.email)"},
		{fault: sendgridtest.Unauthorized, permanent: true, words: "authorization grant is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.fault.String(), func(t *testing.T) {
			t.Parallel()
			fake := sendgridtest.New(t, apiKey)
			fake.Faults(func(int) sendgridtest.Fault { return tt.fault })
			p := newProvider(t, fake.URL(), apiKey)

			ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(tt.deadline, 10*time.Second))
			defer cancel()
			_, err := p.Send(ctx, emailtest.Sample())

			require.Error(t, err)
			require.Equal(t, tt.permanent, provider.IsPermanent(err), "IsPermanent(%v)", err)
			require.Equal(t, tt.ambiguous, provider.IsAmbiguous(err), "IsAmbiguous(%v)", err)
			require.Equal(t, tt.retryAfter, provider.RetryAfter(err), "RetryAfter(%v)", err)
			require.Contains(t, err.Error(), tt.words)
			require.Equal(t, 1, fake.Calls(), "exactly one request per Send")
			require.Equal(t, tt.recorded, len(fake.Received()) == 1)
		})
	}
}

func TestRejectionsWithoutInjectedFaults(t *testing.T) {
	t.Parallel()
	t.Run("WrongKey", func(t *testing.T) {
		t.Parallel()
		fake := sendgridtest.New(t, apiKey)
		_, err := newProvider(t, fake.URL(), "SG.someone-elses-key").Send(context.Background(), emailtest.Sample())
		require.True(t, provider.IsPermanent(err), "%v", err)
		require.Contains(t, err.Error(), "The provided authorization grant is invalid, expired, or revoked")
		require.Empty(t, fake.Received())
	})
	t.Run("UnparsableSender", func(t *testing.T) {
		t.Parallel()
		fake := sendgridtest.New(t, apiKey)
		msg := emailtest.Sample()
		msg.From = "Orders at acme"
		_, err := newProvider(t, fake.URL(), apiKey).Send(context.Background(), msg)
		require.True(t, provider.IsPermanent(err), "%v", err)
		require.Zero(t, fake.Calls())
	})
	t.Run("ConnectionRefusedIsNotAmbiguous", func(t *testing.T) {
		t.Parallel()
		port, err := heraldtest.RefusingPort(t, net.IPv4(127, 0, 0, 1))
		require.NoError(t, err)
		_, err = newProvider(t, fmt.Sprintf("http://127.0.0.1:%d", port), apiKey).Send(context.Background(), emailtest.Sample())
		require.Error(t, err)
		require.False(t, provider.IsPermanent(err), "%v", err)
		require.False(t, provider.IsAmbiguous(err), "%v", err)
	})
}

func TestFailFirstThenAccepts(t *testing.T) {
	t.Parallel()
	fake := sendgridtest.New(t, apiKey)
	fake.Faults(emailtest.FailFirst(1, sendgridtest.ServerError))
	p := newProvider(t, fake.URL(), apiKey)

	_, err := p.Send(context.Background(), emailtest.Sample())
	require.Error(t, err)
	receipt, err := p.Send(context.Background(), emailtest.Sample())
	require.NoError(t, err)
	received := fake.Received()
	require.Len(t, received, 1)
	require.Equal(t, received[0].MessageID, receipt.MessageID)
	require.Equal(t, 2, fake.Calls())
}

// SendGrid's Mail Send API reports the end of a rate-limit window in
// X-RateLimit-Reset and may send no Retry-After at all.
func TestRateLimitResetWithoutRetryAfter(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(30*time.Second).Unix(), 10))
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"errors":[{"field":null,"message":"too many requests"}]}`))
	}))
	t.Cleanup(srv.Close)

	_, err := newProvider(t, srv.URL, apiKey).Send(context.Background(), emailtest.Sample())
	require.Error(t, err)
	require.False(t, provider.IsPermanent(err))
	require.Contains(t, err.Error(), "too many requests")
	wait := provider.RetryAfter(err)
	require.Greater(t, wait, 28*time.Second, "%v", err)
	require.LessOrEqual(t, wait, 30*time.Second, "%v", err)
	require.Equal(t, int32(1), calls.Load(), "the library's rate-limit retries must not run")
}

func TestTimeoutIsPromptAndAmbiguous(t *testing.T) {
	t.Parallel()
	fake := sendgridtest.New(t, apiKey)
	fake.Faults(func(int) sendgridtest.Fault { return sendgridtest.Timeout(time.Hour) })
	p := newProvider(t, fake.URL(), apiKey)

	// SendGrid holds its answer for an hour: only the deadline can end the
	// send, and it passes after the request left.
	ctx, expire := emailtest.Deadline(context.Background())
	wait := emailtest.SendInBackground(t, ctx, p, emailtest.Sample())
	require.Eventually(t, func() bool { return fake.Calls() == 1 }, 10*time.Second, time.Millisecond)
	expire()
	err := wait()
	require.Error(t, err)
	require.True(t, provider.IsAmbiguous(err), "%v", err)
	require.False(t, provider.IsPermanent(err))
	require.Equal(t, 1, fake.Calls())
	require.Empty(t, fake.Received())
}

func TestCorrelationAndContent(t *testing.T) {
	t.Parallel()
	fake := sendgridtest.New(t, apiKey)
	msg := emailtest.Sample()
	receipt, err := newProvider(t, fake.URL(), apiKey).Send(context.Background(), msg)
	require.NoError(t, err)

	received := fake.Received()
	require.Len(t, received, 1)
	got := received[0]
	require.Equal(t, receipt.MessageID, got.MessageID)
	require.Equal(t, map[string]string{
		"herald_dedupe_key":      msg.DedupeKey,
		"herald_notification_id": msg.ID,
		"herald_tenant":          msg.Tenant,
	}, got.CustomArgs)
	require.Equal(t, map[string]string{
		"Message-ID":               "<ntf_0123456789abcdef01234567@acme.example>",
		"X-Herald-Notification-Id": msg.ID,
	}, got.Headers)
	require.Equal(t, "orders@acme.example", got.From)
	require.Equal(t, "Orders", got.FromName)
	require.Equal(t, "olga@zarya.example", got.To)
	require.Equal(t, "Ольга Петрова", got.ToName)
	require.Equal(t, msg.Subject, got.Subject)
	require.Equal(t, msg.Text, got.Text)
	require.Equal(t, map[string][]byte{"PO-2026-0042.pdf": msg.Attachments[0].Data}, got.Attachments)
	require.Equal(t, map[string]string{"PO-2026-0042.pdf": "application/pdf"}, got.AttachmentTypes)
	require.Equal(t, map[string]string{"PO-2026-0042.pdf": "attachment"}, got.AttachmentDispositions)
}

func TestNew(t *testing.T) {
	t.Parallel()
	_, err := sendgrid.New(sendgrid.Config{})
	require.ErrorContains(t, err, "API key is required")
	_, err = sendgrid.New(sendgrid.Config{APIKey: "  \n"})
	require.ErrorContains(t, err, "API key is required")

	for _, endpoint := range []string{"api.sendgrid.com", "ftp://api.sendgrid.com", "http://", "https://api.sendgrid.com?x=1", "https://user:pw@api.sendgrid.com", "::"} {
		_, err := sendgrid.New(sendgrid.Config{APIKey: apiKey, Endpoint: endpoint})
		require.Error(t, err, endpoint)
	}
	for _, endpoint := range []string{"", "https://api.sendgrid.com", "http://127.0.0.1:3000/", "https://proxy.example/sendgrid"} {
		_, err := sendgrid.New(sendgrid.Config{APIKey: apiKey, Endpoint: endpoint})
		require.NoError(t, err, endpoint)
	}
}

func TestSecretNeverLeaks(t *testing.T) {
	t.Parallel()
	const secret = "SG.SECRET-must-not-leak"
	noLeak := func(t *testing.T, text string) {
		t.Helper()
		require.NotContains(t, text, secret)
		require.NotContains(t, text, "SECRET")
	}

	faults := []sendgridtest.Fault{
		sendgridtest.ServerError, sendgridtest.Throttle(time.Second), sendgridtest.Timeout(time.Hour),
		sendgridtest.NoMessageID, sendgridtest.InvalidAddress, sendgridtest.Unauthorized,
	}
	for _, fault := range faults {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel()
			fake := sendgridtest.New(t, secret)
			fake.Faults(func(int) sendgridtest.Fault { return fault })
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := newProvider(t, fake.URL(), secret).Send(ctx, emailtest.Sample())
			require.Error(t, err)
			noLeak(t, err.Error())
			noLeak(t, fmt.Sprintf("%+v", err))
		})
	}

	t.Run("KeyEchoedInErrorBody", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusForbidden)
			_, _ = fmt.Fprintf(w, `{"errors":[{"message":"key %s lacks mail.send"}]}`,
				strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		}))
		t.Cleanup(srv.Close)
		_, err := newProvider(t, srv.URL, secret).Send(context.Background(), emailtest.Sample())
		require.ErrorContains(t, err, "lacks mail.send")
		noLeak(t, err.Error())
	})
	t.Run("WrongKeyEverywhere", func(t *testing.T) {
		t.Parallel()
		fake := sendgridtest.New(t, "SG.the-right-key")
		_, err := newProvider(t, fake.URL(), secret).Send(context.Background(), emailtest.Sample())
		require.Error(t, err)
		noLeak(t, err.Error())
	})
	t.Run("Setup", func(t *testing.T) {
		t.Parallel()
		_, err := sendgrid.New(sendgrid.Config{APIKey: secret, Endpoint: "not a url " + secret})
		require.Error(t, err)
		noLeak(t, err.Error())
		_, err = sendgrid.New(sendgrid.Config{APIKey: secret + " x"})
		require.Error(t, err)
		noLeak(t, err.Error())

		cfg := sendgrid.Config{APIKey: secret, Endpoint: "http://127.0.0.1:3000"}
		p, err := sendgrid.New(cfg)
		require.NoError(t, err)
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
			noLeak(t, fmt.Sprintf(verb, cfg))
			noLeak(t, fmt.Sprintf(verb, p))
			noLeak(t, fmt.Sprintf(verb, struct{ Provider email.Provider }{p}))
		}
	})
}
