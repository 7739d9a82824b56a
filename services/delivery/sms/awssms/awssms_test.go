package awssms_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/services/delivery/sms/awssms"
	"github.com/heraldhq/herald/services/delivery/sms/awssms/awssmstest"
	"github.com/heraldhq/herald/services/delivery/sms/smstest"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/provider"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, heraldtest.LeakOptions...)
}

// Made to be recognizable in any text they leak into.
const (
	accessKeyID  = "AKIDEXAMPLE"
	secretKey    = "SECRET-must-not-leak-9f2c4e1a7b"
	sessionToken = "TOKEN-must-not-leak-3d8b6a0c5e"
)

// newProvider points a provider at endpoint with static credentials, after
// edit changes its config. Its HTTP client's idle connections are closed
// when the test ends, so no connection goroutine outlives it.
func newProvider(t *testing.T, endpoint string, edit ...func(*awssms.Config)) *awssms.Provider {
	t.Helper()
	cfg := awssms.Config{
		Region:          "eu-west-1",
		Endpoint:        endpoint,
		AccessKeyID:     accessKeyID,
		SecretAccessKey: secretKey,
		SessionToken:    sessionToken,
		HTTPClient:      heraldtest.HTTPClient(t),
	}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := awssms.New(context.Background(), cfg)
	require.NoError(t, err)
	return p
}

func sample() sms.Message {
	return sms.Message{
		ID:        "ntf_0123456789abcdef01234567",
		DedupeKey: "acme:PO-2026-0042:1:purchase_order:sms:+34600111222",
		Tenant:    "acme",
		Channel:   event.ChannelSMS,
		To:        "+34600111222",
		Body:      "Su pedido PO-2026-0042 está en camino: 48 ud de kéfir.",
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  awssms.Config
		want string
	}{
		{"no region", awssms.Config{Endpoint: "http://127.0.0.1:1"}, "region is required"},
		{"secret without key id", awssms.Config{Region: "eu-west-1", SecretAccessKey: secretKey}, "both an access key id and a secret access key"},
		{"key id without secret", awssms.Config{Region: "eu-west-1", AccessKeyID: accessKeyID, SessionToken: sessionToken}, "both an access key id"},
		{"unknown message type", awssms.Config{Region: "eu-west-1", MessageType: "MARKETING"}, `message type "MARKETING"`},
	}
	for _, tt := range tests {
		_, err := awssms.New(context.Background(), tt.cfg)
		require.ErrorContains(t, err, tt.want, tt.name)
		heraldtest.RequireNoSecret(t, err.Error(), tt.name, secretKey, sessionToken)
	}
}

// faultCases is every fault the fake injects, with the classification the
// chain relies on and the words of the service's that must survive into
// the error.
var faultCases = []struct {
	fault      awssmstest.Fault
	permanent  bool
	ambiguous  bool
	retryAfter time.Duration
	words      []string
}{
	// The service's own faults: a later try, or another provider, may do.
	{fault: awssmstest.ServerError, words: []string{"HTTP 500", "InternalServerException", "fake-request-1"}},
	{fault: awssmstest.ServerError.BodyOnly(), words: []string{"HTTP 500", "InternalServerException"}},
	{fault: awssmstest.ServiceUnavailable, words: []string{"HTTP 503", "ServiceUnavailable"}},
	{fault: awssmstest.Throttle(3 * time.Second), retryAfter: 3 * time.Second, words: []string{"HTTP 400", "ThrottlingException", "Rate exceeded"}},
	{fault: awssmstest.Throttle(0), words: []string{"ThrottlingException"}},
	{fault: awssmstest.SpendLimitReached, words: []string{"ServiceQuotaExceededException", "monthly spend limit", "MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT"}},
	{fault: awssmstest.NoMessageID, ambiguous: true, words: []string{"MessageId"}},
	// Refusals of the message or of the account's set-up: no retry helps.
	{fault: awssmstest.APIError(http.StatusBadRequest, "ValidationException", "Destination country is blocked.").
		WithReason("DESTINATION_COUNTRY_BLOCKED").WithField("DestinationPhoneNumber", "blocked"),
		permanent: true, words: []string{"HTTP 400", "ValidationException", "reason DESTINATION_COUNTRY_BLOCKED", "field DestinationPhoneNumber: blocked"}},
	{fault: awssmstest.APIError(http.StatusBadRequest, "ConflictException", "The destination phone number is opted out.").
		WithReason("DESTINATION_PHONE_NUMBER_OPTED_OUT").BodyOnly(),
		permanent: true, words: []string{"ConflictException", "reason DESTINATION_PHONE_NUMBER_OPTED_OUT"}},
	{fault: awssmstest.APIError(http.StatusBadRequest, "ConflictException", "Destination phone number not verified.").
		WithReason("DESTINATION_PHONE_NUMBER_NOT_VERIFIED"),
		permanent: true, words: []string{"DESTINATION_PHONE_NUMBER_NOT_VERIFIED"}},
	{fault: awssmstest.AccessDenied, permanent: true, words: []string{"AccessDeniedException", "sms-voice:SendTextMessage"}},
	{fault: awssmstest.AccessDenied.WithReason("ACCOUNT_DISABLED"), permanent: true, words: []string{"AccessDeniedException", "reason ACCOUNT_DISABLED"}},
	{fault: awssmstest.OriginationNotFound, permanent: true, words: []string{"ResourceNotFoundException", "resource phone-number phone-0123456789abcdef"}},
	{fault: awssmstest.APIError(http.StatusBadRequest, "ResourceNotFoundException", "Configuration set not found.").
		WithResource("configuration-set", "herald-events"),
		permanent: true, words: []string{"ResourceNotFoundException", "configuration-set herald-events"}},
	{fault: awssmstest.Unauthorized, permanent: true, words: []string{"HTTP 400", "UnrecognizedClientException", "security token"}},
}

func TestFaultsAreClassifiedAfterOneRequest(t *testing.T) {
	t.Parallel()
	for _, tt := range faultCases {
		t.Run(tt.fault.String(), func(t *testing.T) {
			t.Parallel()
			srv := awssmstest.New(t)
			srv.FailNext(1, tt.fault)
			_, err := newProvider(t, srv.URL()).Send(context.Background(), sample())
			require.Error(t, err)
			require.Equal(t, 1, srv.Calls(), "the SDK must not retry on its own")
			require.Equal(t, tt.permanent, provider.IsPermanent(err), "permanent: %v", err)
			require.Equal(t, tt.ambiguous, provider.IsAmbiguous(err), "ambiguous: %v", err)
			require.Equal(t, tt.retryAfter, provider.RetryAfter(err), "retry after: %v", err)
			for _, w := range tt.words {
				require.ErrorContains(t, err, w)
			}
			// An ambiguous answer is a message AWS may have taken.
			require.Equal(t, tt.ambiguous, len(srv.Received()) == 1, "recorded: %v", srv.Received())
		})
	}
}

// The numbers the service itself refuses, after a round trip.
func TestRefusedNumbersArePermanent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		to    string
		words []string
	}{
		{awssmstest.InvalidNumber, []string{"ValidationException", "reason INVALID_PARAMETER", "field DestinationPhoneNumber"}},
		{awssmstest.OptedOutNumber, []string{"ConflictException", "reason DESTINATION_PHONE_NUMBER_OPTED_OUT"}},
	}
	for _, tt := range tests {
		srv := awssmstest.New(t)
		msg := sample()
		msg.To = tt.to
		_, err := newProvider(t, srv.URL()).Send(context.Background(), msg)
		require.True(t, provider.IsPermanent(err), "%s: %v", tt.to, err)
		for _, w := range tt.words {
			require.ErrorContains(t, err, w)
		}
		require.Equal(t, 1, srv.Calls())
		require.Empty(t, srv.Received())
	}
}

// What the API's own pattern refuses costs no request.
func TestMalformedNumbersAreRefusedWithoutACall(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	p := newProvider(t, srv.URL())
	for _, to := range []string{"", "0600111222", "+34 600 111 222", "whatsapp:+34600111222", "+3460011122233344455566"} {
		msg := sample()
		msg.To = to
		_, err := p.Send(context.Background(), msg)
		require.True(t, provider.IsPermanent(err), "%q: %v", to, err)
		require.ErrorContains(t, err, "E.164")
	}
	require.Zero(t, srv.Calls())
}

func TestOtherChannelsAreRefusedWithoutACall(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	p := newProvider(t, srv.URL())
	tests := []struct {
		channel event.Channel
		want    string
	}{
		{event.ChannelWhatsApp, "amazon sms does not send whatsapp"},
		{event.ChannelEmail, "amazon sms does not send email"},
		{"", "amazon sms does not send a message without a channel"},
	}
	for _, tt := range tests {
		msg := sample()
		msg.Channel = tt.channel
		msg.Template = &sms.Template{ContentSID: "HX0123", Variables: map[string]string{"1": "SKU-42"}}
		_, err := p.Send(context.Background(), msg)
		require.True(t, provider.IsPermanent(err), "%q: %v", tt.channel, err)
		require.ErrorContains(t, err, tt.want)
	}
	require.Zero(t, srv.Calls())
}

func TestMessageReachesAWSAsConfigured(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	p := newProvider(t, srv.URL(), func(c *awssms.Config) {
		c.OriginationIdentity = "arn:aws:sms-voice:eu-west-1:123456789012:pool/pool-0123456789abcdef"
		c.ConfigurationSetName = "herald-events"
	})
	msg := sample()
	r, err := p.Send(context.Background(), msg)
	require.NoError(t, err)
	require.Empty(t, r.Provider, "the chain names the provider")

	got := srv.Received()
	require.Len(t, got, 1)
	require.Equal(t, r.MessageID, got[0].MessageID)
	require.Equal(t, awssmstest.Received{
		To:                   msg.To,
		Body:                 msg.Body,
		OriginationIdentity:  "arn:aws:sms-voice:eu-west-1:123456789012:pool/pool-0123456789abcdef",
		ConfigurationSetName: "herald-events",
		MessageType:          "TRANSACTIONAL",
		Context: map[string]string{
			awssms.ContextNotificationID: msg.ID,
			awssms.ContextDedupeKey:      msg.DedupeKey,
			awssms.ContextTenant:         "acme",
		},
		AccessKeyID: accessKeyID,
		MessageID:   r.MessageID,
	}, got[0])
}

func TestOptionalSettingsAreLeftOut(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	p := newProvider(t, srv.URL(), func(c *awssms.Config) { c.MessageType = "promotional" })
	_, err := p.Send(context.Background(), sample())
	require.NoError(t, err)
	got := srv.Received()[0]
	require.Equal(t, "PROMOTIONAL", got.MessageType)
	require.Empty(t, got.OriginationIdentity, "AWS picks one when none is given")
	require.Empty(t, got.ConfigurationSetName)
}

// The API refuses the whole message over a bad Context value (the fake
// checks the documented limits), so a long or odd key must not make every
// send of a tenant fail.
func TestContextValuesAreMadeAcceptable(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	p := newProvider(t, srv.URL())
	msg := sample()
	msg.DedupeKey = strings.Repeat("x", 799) + "ñ" + strings.Repeat("y", 100) // ñ straddles byte 800
	msg.Tenant = " Frutas del Sur \n"
	_, err := p.Send(context.Background(), msg)
	require.NoError(t, err)
	ctx := srv.Received()[0].Context
	require.Equal(t, strings.Repeat("x", 799), ctx[awssms.ContextDedupeKey], "cut at a character, within 800")
	require.Equal(t, "Frutas del Sur", ctx[awssms.ContextTenant])

	msg = sample()
	msg.Tenant, msg.ID = "", "  "
	_, err = p.Send(context.Background(), msg)
	require.NoError(t, err)
	require.Equal(t, map[string]string{awssms.ContextDedupeKey: msg.DedupeKey}, srv.Received()[1].Context,
		"a value with nothing to say is left out, not sent")

	msg.DedupeKey = string([]byte{0xff, 'k'})
	_, err = p.Send(context.Background(), msg)
	require.NoError(t, err)
	require.True(t, utf8.ValidString(srv.Received()[2].Context[awssms.ContextDedupeKey]))
}

// Every other test reaches the fake through Endpoint; this one shows the
// request goes to the endpoint given and to nowhere else.
func TestEndpointOverride(t *testing.T) {
	t.Parallel()
	used, unused := awssmstest.New(t), awssmstest.New(t)
	_, err := newProvider(t, used.URL()).Send(context.Background(), sample())
	require.NoError(t, err)
	require.Equal(t, 1, used.Calls())
	require.Zero(t, unused.Calls())
}

// Without static credentials the standard chain signs: here, the
// environment. Not parallel: it sets the environment.
func TestDefaultCredentialChain(t *testing.T) {
	none := t.TempDir() + "/none"
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENVIRONMENT")
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	srv := awssmstest.New(t)

	chain := newProvider(t, srv.URL(), func(c *awssms.Config) { c.AccessKeyID, c.SecretAccessKey, c.SessionToken = "", "", "" })
	_, err := chain.Send(context.Background(), sample())
	require.NoError(t, err)
	_, err = newProvider(t, srv.URL()).Send(context.Background(), sample())
	require.NoError(t, err)

	got := srv.Received()
	require.Equal(t, "AKIDFROMENVIRONMENT", got[0].AccessKeyID)
	require.Equal(t, accessKeyID, got[1].AccessKeyID, "static credentials win over the chain")
}

func TestRecoversAfterQueuedFaults(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	srv.FailNext(1, awssmstest.Throttle(time.Second))
	srv.FailNext(1, awssmstest.ServerError)
	p := newProvider(t, srv.URL())
	_, err := p.Send(context.Background(), sample())
	require.Equal(t, time.Second, provider.RetryAfter(err))
	_, err = p.Send(context.Background(), sample())
	require.ErrorContains(t, err, "InternalServerException")
	r, err := p.Send(context.Background(), sample())
	require.NoError(t, err)
	require.NotEmpty(t, r.MessageID)
	require.Equal(t, 3, srv.Calls())
	require.Len(t, srv.Received(), 1)
}

func TestTimeoutIsAmbiguous(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	// AWS holds its answer for an hour: only the deadline can end the send.
	srv.FailNext(1, awssmstest.Delay(time.Hour))
	p := newProvider(t, srv.URL())
	ctx, expire := emailtest.Deadline(context.Background())
	sent := make(chan error, 1)
	go func() {
		_, err := p.Send(ctx, sample())
		sent <- err
	}()
	require.Eventually(t, func() bool { return srv.Calls() == 1 }, 10*time.Second, time.Millisecond)
	expire() // after the request left: AWS may have accepted it
	var err error
	select {
	case err = <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("Send did not return once its context ended")
	}
	require.Error(t, err)
	require.True(t, provider.IsAmbiguous(err), "a timed-out send may have been accepted: %v", err)
	require.False(t, provider.IsPermanent(err))
	require.Empty(t, srv.Received())
}

func TestCancelledContextSendsNothing(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newProvider(t, srv.URL()).Send(ctx, sample())
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, srv.Calls())
}

func TestUnreachableIsTransientNotAmbiguous(t *testing.T) {
	t.Parallel()
	port, err := heraldtest.RefusingPort(t, net.IPv4(127, 0, 0, 1))
	require.NoError(t, err)
	_, err = newProvider(t, fmt.Sprintf("http://127.0.0.1:%d", port)).Send(context.Background(), sample())
	require.Error(t, err)
	require.False(t, provider.IsPermanent(err))
	require.False(t, provider.IsAmbiguous(err), "a refused connection delivered nothing: %v", err)
	heraldtest.RequireNoSecret(t, err.Error(), "the error", secretKey, sessionToken)
}

func TestSecretsNeverInErrors(t *testing.T) {
	t.Parallel()
	faults := []awssmstest.Fault{awssmstest.Delay(2 * time.Second)}
	for _, tt := range faultCases {
		faults = append(faults, tt.fault)
	}
	for _, f := range faults {
		t.Run(f.String(), func(t *testing.T) {
			t.Parallel()
			srv := awssmstest.New(t)
			srv.FailNext(1, f)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := newProvider(t, srv.URL()).Send(ctx, sample())
			require.Error(t, err)
			for _, verb := range []string{"%v", "%+v", "%#v"} {
				heraldtest.RequireNoSecret(t, fmt.Sprintf(verb, err), "the error as "+verb, secretKey, sessionToken)
			}
		})
	}
}

// The fake is shared by goroutines in load tests; every send must be
// counted once and every acceptance recorded once.
func TestConcurrentSends(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	srv.Faults(func(call int) awssmstest.Fault {
		if call%3 == 0 {
			return awssmstest.ServerError
		}
		return awssmstest.None
	})
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
			r, err := p.Send(context.Background(), sample())
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

func TestConformance(t *testing.T) {
	smstest.Run(t, func(t *testing.T) smstest.Harness {
		fake := awssmstest.New(t)
		return smstest.Harness{
			Provider: newProvider(t, fake.URL()),
			Received: func(*testing.T) []smstest.Received {
				var out []smstest.Received
				for _, r := range fake.Received() {
					out = append(out, smstest.Received{Channel: event.ChannelSMS, To: r.To, Body: r.Body})
				}
				return out
			},
			Channels:      []event.Channel{event.ChannelSMS},
			InvalidNumber: awssmstest.InvalidNumber,
			Refusal:       "ValidationException",
			FailNext:      func(*testing.T) { fake.FailNext(1, awssmstest.ServerError) },
		}
	})
}
