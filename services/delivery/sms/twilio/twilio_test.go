package twilio_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/services/delivery/sms/smstest"
	"github.com/heraldhq/herald/services/delivery/sms/twilio"
	"github.com/heraldhq/herald/services/delivery/sms/twilio/twiliotest"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/provider"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, heraldtest.LeakOptions...)
}

const (
	accountSID = "AC0123456789abcdef0123456789abcdef"
	authToken  = "f00dfeedf00dfeedf00dfeedf00dfeed"
	serviceSID = "MG0123456789abcdef0123456789abcdef"
	from       = "+15017122661"
	// invalidNumber is Twilio's magic test number for an invalid To.
	invalidNumber = "+15005550001"
	callbackURL   = "https://herald.example.com/v1/inbound/twilio"
)

func newProvider(t *testing.T, cfg twilio.Config) *twilio.Provider {
	t.Helper()
	cfg.AccountSID = cmp.Or(cfg.AccountSID, accountSID)
	cfg.AuthToken = cmp.Or(cfg.AuthToken, authToken)
	if cfg.MessagingServiceSID == "" {
		cfg.From = cmp.Or(cfg.From, from)
	}
	p, err := twilio.New(cfg)
	require.NoError(t, err)
	return p
}

func harness(t *testing.T, cfg twilio.Config) smstest.Harness {
	fake := twiliotest.New(t, accountSID, authToken)
	cfg.Endpoint = fake.URL()
	return smstest.Harness{
		Provider: newProvider(t, cfg),
		Received: func(*testing.T) []smstest.Received {
			var out []smstest.Received
			for _, m := range fake.Received() {
				out = append(out, m.Normalized())
			}
			return out
		},
		Channels:      []event.Channel{event.ChannelSMS, event.ChannelWhatsApp},
		InvalidNumber: invalidNumber,
		Refusal:       "Twilio error 21211: The 'To' number " + invalidNumber + " is not a valid phone number.",
		FailNext:      func(*testing.T) { fake.FailNext(1, twiliotest.ServerError) },
	}
}

func TestConformance(t *testing.T) {
	smstest.Run(t, func(t *testing.T) smstest.Harness { return harness(t, twilio.Config{}) })
}

func TestConformanceWithMessagingService(t *testing.T) {
	smstest.Run(t, func(t *testing.T) smstest.Harness {
		return harness(t, twilio.Config{MessagingServiceSID: serviceSID})
	})
}

func TestClassification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		failure    twiliotest.Failure
		permanent  bool
		ambiguous  bool
		retryAfter time.Duration
		code       int
		words      string
		recorded   bool
	}{
		{name: "InvalidTo", failure: twiliotest.InvalidNumber, permanent: true, code: twilio.CodeInvalidTo,
			words: "HTTP 400: Twilio error 21211: The 'To' number +34600111222 is not a valid phone number. (https://www.twilio.com/docs/errors/21211)"},
		{name: "NotMobile", failure: twiliotest.NotMobile, permanent: true, code: twilio.CodeNotMobile,
			words: "Twilio error 21614: To number: +34600111222, is not a mobile number"},
		{name: "Unsubscribed", failure: twiliotest.Unsubscribed, permanent: true, code: twilio.CodeUnsubscribed,
			words: "Twilio error 21610: Attempt to send to unsubscribed recipient"},
		{name: "OutsideSessionWindow", failure: twiliotest.OutsideSessionWindow, permanent: true, code: twilio.CodeOutsideSessionWindow,
			words: "Twilio error 63016: Failed to send freeform message because you are outside the allowed window."},
		{name: "RegionPermission", failure: twiliotest.RegionPermission, permanent: true, code: twilio.CodeRegionPermission,
			words: "Twilio error 21408: Permission to send an SMS has not been enabled for the region"},
		{name: "Authentication", failure: twiliotest.Unauthenticated, permanent: true, code: twilio.CodeAuthentication,
			words: "HTTP 401: Twilio error 20003: Authenticate"},
		{name: "TooManyRequests", failure: twiliotest.TooManyRequests(7 * time.Second), retryAfter: 7 * time.Second,
			code: twilio.CodeTooManyRequests, words: "HTTP 429: Twilio error 20429: Too Many Requests"},
		{name: "TooManyRequestsWithoutRetryAfter", failure: twiliotest.TooManyRequests(0),
			code: twilio.CodeTooManyRequests, words: "Too Many Requests"},
		// The code says more than the status: a 20429 is throttling
		// whatever status carries it, a 21211 a refusal.
		{name: "ThrottlingCodeOn503", failure: twiliotest.Failure{Status: 503, Code: 20429, Message: "Too Many Requests", RetryAfter: 3 * time.Second},
			retryAfter: 3 * time.Second, code: twilio.CodeTooManyRequests, words: "HTTP 503: Twilio error 20429"},
		{name: "RefusalCodeOn500", failure: twiliotest.Failure{Status: 500, Code: 21211, Message: "The 'To' number {To} is not a valid phone number."},
			permanent: true, code: twilio.CodeInvalidTo, words: "HTTP 500: Twilio error 21211"},
		{name: "Other4xx", failure: twiliotest.Failure{Status: 400, Code: 21606, Message: "The From phone number is not a valid, SMS-capable inbound phone number or short code for your account."},
			permanent: true, code: 21606, words: "Twilio error 21606: The From phone number is not a valid"},
		{name: "RequestTimeout", failure: twiliotest.Failure{Status: 408, Code: 20408, Message: "Request Timeout"},
			code: 20408, words: "HTTP 408: Twilio error 20408: Request Timeout"},
		{name: "ServerError", failure: twiliotest.ServerError, code: 20500,
			words: "HTTP 500: Twilio error 20500: An internal server error has occurred"},
		{name: "ProxyErrorPage", failure: twiliotest.BadGateway, words: "HTTP 502: <html><head><title>502 Bad Gateway"},
		// Twilio accepted it, so it may go out: a retry could duplicate it.
		{name: "AcceptedWithoutSID", failure: twiliotest.AcceptedWithoutSID, ambiguous: true,
			words: "HTTP 201 without a message sid", recorded: true},
		{name: "AcceptedUnreadably", failure: twiliotest.Failure{Status: 201, RawBody: "{not json"}, ambiguous: true,
			words: "HTTP 201, reading the answer", recorded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := twiliotest.New(t, accountSID, authToken)
			fake.FailNext(1, tt.failure)
			p := newProvider(t, twilio.Config{Endpoint: fake.URL()})

			_, err := p.Send(context.Background(), smstest.Sample(event.ChannelSMS))

			require.Error(t, err)
			require.Equal(t, tt.permanent, provider.IsPermanent(err), "IsPermanent(%v)", err)
			require.Equal(t, tt.ambiguous, provider.IsAmbiguous(err), "IsAmbiguous(%v)", err)
			require.Equal(t, tt.retryAfter, provider.RetryAfter(err), "RetryAfter(%v)", err)
			require.Equal(t, tt.code, twilio.ErrorCode(err), "%v", err)
			require.Equal(t, tt.code == twilio.CodeOutsideSessionWindow, twilio.IsOutsideSessionWindow(err))
			require.Contains(t, err.Error(), tt.words)
			require.Equal(t, 1, fake.Calls(), "exactly one request per Send")
			require.Equal(t, tt.recorded, len(fake.Received()) == 1)
		})
	}
}

// The refusals Twilio gives without injected faults: its magic numbers,
// credentials, and the WhatsApp session window.
func TestRefusals(t *testing.T) {
	t.Parallel()
	t.Run("WrongToken", func(t *testing.T) {
		t.Parallel()
		fake := twiliotest.New(t, accountSID, authToken)
		p := newProvider(t, twilio.Config{AuthToken: "someoneelsestoken", Endpoint: fake.URL()})
		_, err := p.Send(context.Background(), smstest.Sample(event.ChannelSMS))
		require.True(t, provider.IsPermanent(err), "%v", err)
		require.Equal(t, twilio.CodeAuthentication, twilio.ErrorCode(err))
		require.Empty(t, fake.Received())
	})
	t.Run("MagicNumbers", func(t *testing.T) {
		t.Parallel()
		fake := twiliotest.New(t, accountSID, authToken)
		p := newProvider(t, twilio.Config{Endpoint: fake.URL()})
		for number, code := range map[string]int{
			"+15005550001": twilio.CodeInvalidTo,
			"+15005550003": twilio.CodeRegionPermission,
			"+15005550004": twilio.CodeUnsubscribed,
			"+15005550009": twilio.CodeNotMobile,
		} {
			msg := smstest.Sample(event.ChannelSMS)
			msg.To = number
			_, err := p.Send(context.Background(), msg)
			require.True(t, provider.IsPermanent(err), "%s: %v", number, err)
			require.Equal(t, code, twilio.ErrorCode(err), "%s: %v", number, err)
			require.Contains(t, err.Error(), fmt.Sprintf("Twilio error %d", code))
		}
		require.Empty(t, fake.Received())
	})
	t.Run("SessionWindowClosed", func(t *testing.T) {
		t.Parallel()
		fake := twiliotest.New(t, accountSID, authToken)
		msg := smstest.Sample(event.ChannelWhatsApp)
		fake.CloseSession(msg.To)
		p := newProvider(t, twilio.Config{Endpoint: fake.URL()})

		_, err := p.Send(context.Background(), msg)
		require.True(t, provider.IsPermanent(err), "%v", err)
		require.True(t, twilio.IsOutsideSessionWindow(err), "%v", err)

		// What channel fallback and templates are for: the template
		// opens the conversation, and SMS never had a window.
		_, err = p.Send(context.Background(), smstest.Template())
		require.NoError(t, err)
		_, err = p.Send(context.Background(), smstest.Sample(event.ChannelSMS))
		require.NoError(t, err)
		got := fake.Received()
		require.Len(t, got, 2)
		require.Equal(t, "whatsapp:"+msg.To, got[0].To)
		require.Equal(t, msg.To, got[1].To)
	})
	t.Run("RefusedBeforeSending", func(t *testing.T) {
		t.Parallel()
		fake := twiliotest.New(t, accountSID, authToken)
		p := newProvider(t, twilio.Config{Endpoint: fake.URL()})
		noBody := smstest.Sample(event.ChannelSMS)
		noBody.Body = ""
		prefixed := smstest.Sample(event.ChannelWhatsApp)
		prefixed.To = "whatsapp:" + prefixed.To
		noContent := smstest.Template()
		noContent.Template.ContentSID = ""
		for words, msg := range map[string]sms.Message{
			`channel "email"`:                smstest.Sample(event.ChannelEmail),
			"empty message body":             noBody,
			"carries a channel prefix":       prefixed,
			"template without a content SID": noContent,
		} {
			_, err := p.Send(context.Background(), msg)
			require.True(t, provider.IsPermanent(err), "%v", err)
			require.ErrorContains(t, err, words)
		}
		require.Zero(t, fake.Calls())
	})
}

func TestWhatsAppAddressesAndTemplates(t *testing.T) {
	t.Parallel()
	template := smstest.Template()
	tests := []struct {
		name     string
		cfg      twilio.Config
		msg      sms.Message
		want     twiliotest.Message
		segments int
	}{
		{
			name: "SMS", msg: smstest.Sample(event.ChannelSMS),
			want: twiliotest.Message{Channel: event.ChannelSMS, To: "+34600111222", From: from, Body: smstest.Sample("").Body},
		},
		{
			name: "WhatsAppFreeForm", msg: smstest.Sample(event.ChannelWhatsApp),
			want: twiliotest.Message{Channel: event.ChannelWhatsApp, To: "whatsapp:+34600111222", From: "whatsapp:" + from, Body: smstest.Sample("").Body},
		},
		{
			// The template goes without its Body, as Twilio requires.
			name: "WhatsAppTemplate", msg: template,
			want: twiliotest.Message{Channel: event.ChannelWhatsApp, To: "whatsapp:+34600111222", From: "whatsapp:" + from,
				ContentSID: template.Template.ContentSID, ContentVariables: template.Template.Variables},
		},
		{
			name: "WhatsAppThroughMessagingService", cfg: twilio.Config{MessagingServiceSID: serviceSID}, msg: template,
			want: twiliotest.Message{Channel: event.ChannelWhatsApp, To: "whatsapp:+34600111222", MessagingServiceSID: serviceSID,
				ContentSID: template.Template.ContentSID, ContentVariables: template.Template.Variables},
		},
		{
			name: "SMSWithStatusCallback", cfg: twilio.Config{StatusCallback: callbackURL}, msg: smstest.Sample(event.ChannelSMS),
			want: twiliotest.Message{Channel: event.ChannelSMS, To: "+34600111222", From: from, Body: smstest.Sample("").Body,
				StatusCallback: callbackURL},
		},
		{
			// The provider's callback, not the service's: Herald's
			// inbound path is the one that knows the account.
			name: "WhatsAppTemplateWithStatusCallbackThroughMessagingService",
			cfg:  twilio.Config{MessagingServiceSID: serviceSID, StatusCallback: callbackURL + "/acme/tw1"}, msg: template,
			want: twiliotest.Message{Channel: event.ChannelWhatsApp, To: "whatsapp:+34600111222", MessagingServiceSID: serviceSID,
				ContentSID: template.Template.ContentSID, ContentVariables: template.Template.Variables,
				StatusCallback: callbackURL + "/acme/tw1"},
		},
		{
			// A template belongs to WhatsApp; an SMS sends its text.
			name: "SMSIgnoresTemplate", msg: func() sms.Message { m := template; m.Channel = event.ChannelSMS; return m }(),
			want: twiliotest.Message{Channel: event.ChannelSMS, To: "+34600111222", From: from, Body: template.Body},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := twiliotest.New(t, accountSID, authToken)
			tt.cfg.Endpoint = fake.URL()
			receipt, err := newProvider(t, tt.cfg).Send(context.Background(), tt.msg)
			require.NoError(t, err)
			got := fake.Received()
			require.Len(t, got, 1)
			require.Equal(t, receipt.MessageID, got[0].SID)
			got[0].SID, got[0].NumSegments = "", 0
			require.Equal(t, tt.want, got[0])
		})
	}
}

// wire is a stand-in for Twilio (or a proxy in front of it) that keeps the
// raw request.
type wire struct {
	mu   sync.Mutex
	reqs []*http.Request
	form []url.Values
}

func (w *wire) record(r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = r.ParseForm()
	w.reqs = append(w.reqs, r)
	w.form = append(w.form, r.PostForm)
}

func (w *wire) only(t *testing.T) (*http.Request, url.Values) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Len(t, w.reqs, 1)
	return w.reqs[0], w.form[0]
}

const created = `{"sid": "SM0123456789abcdef0123456789abcdef", "status": "queued"}`

func TestContentVariablesAreJSON(t *testing.T) {
	t.Parallel()
	var got wire
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.record(r)
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, created)
	}))
	t.Cleanup(srv.Close)

	msg := smstest.Template()
	msg.Template.Variables = map[string]string{"2": "Мадрид", "1": `<SKU-42> & "co"`}
	_, err := newProvider(t, twilio.Config{Endpoint: srv.URL}).Send(context.Background(), msg)
	require.NoError(t, err)
	_, form := got.only(t)
	// Exactly as written: HTML escapes would reach the recipient of a
	// text message as "\u003c".
	require.Equal(t, `{"1":"<SKU-42> & \"co\"","2":"Мадрид"}`, form.Get("ContentVariables"))
	require.Equal(t, msg.Template.ContentSID, form.Get("ContentSid"))
	require.NotContains(t, form, "Body")
}

// Twilio posts a message's status callbacks where the message asked: every
// message asks when a callback is configured, none does otherwise.
func TestStatusCallback(t *testing.T) {
	t.Parallel()
	sendAll := func(t *testing.T, cfg twilio.Config) []url.Values {
		t.Helper()
		var got wire
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.record(r)
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, created)
		}))
		t.Cleanup(srv.Close)
		cfg.Endpoint = srv.URL
		p := newProvider(t, cfg)
		for _, msg := range []sms.Message{smstest.Sample(event.ChannelSMS), smstest.Sample(event.ChannelWhatsApp), smstest.Template()} {
			_, err := p.Send(context.Background(), msg)
			require.NoError(t, err)
		}
		got.mu.Lock()
		defer got.mu.Unlock()
		require.Len(t, got.form, 3)
		return got.form
	}
	t.Run("Configured", func(t *testing.T) {
		t.Parallel()
		// As read from a file, with its newline.
		for _, form := range sendAll(t, twilio.Config{StatusCallback: callbackURL + "?region=eu\n"}) {
			require.Equal(t, []string{callbackURL + "?region=eu"}, form["StatusCallback"])
		}
	})
	t.Run("NotConfigured", func(t *testing.T) {
		t.Parallel()
		for _, form := range sendAll(t, twilio.Config{}) {
			require.NotContains(t, form, "StatusCallback")
		}
	})
}

func TestEndpoint(t *testing.T) {
	t.Parallel()
	t.Run("ProxyWithPathPrefix", func(t *testing.T) {
		t.Parallel()
		var got wire
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.record(r)
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, created)
		}))
		t.Cleanup(srv.Close)

		receipt, err := newProvider(t, twilio.Config{Endpoint: srv.URL + "/egress/twilio/"}).
			Send(context.Background(), smstest.Sample(event.ChannelSMS))
		require.NoError(t, err)
		require.Equal(t, "SM0123456789abcdef0123456789abcdef", receipt.MessageID)
		req, form := got.only(t)
		require.Equal(t, "/egress/twilio/2010-04-01/Accounts/"+accountSID+"/Messages.json", req.URL.Path)
		require.Equal(t, http.MethodPost, req.Method)
		user, pass, ok := req.BasicAuth()
		require.True(t, ok)
		require.Equal(t, accountSID, user)
		require.Equal(t, authToken, pass)
		require.Equal(t, url.Values{"To": {"+34600111222"}, "From": {from}, "Body": {smstest.Sample("").Body}}, form)
	})
	t.Run("DefaultIsTwilioThroughTheGivenClient", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var seen *url.URL
		hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			seen = r.URL
			mu.Unlock()
			return &http.Response{StatusCode: http.StatusCreated, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(created)), Request: r}, nil
		})}
		_, err := newProvider(t, twilio.Config{HTTPClient: hc}).Send(context.Background(), smstest.Sample(event.ChannelSMS))
		require.NoError(t, err)
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, "https://api.twilio.com/2010-04-01/Accounts/"+accountSID+"/Messages.json", seen.String())
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTimeoutIsAmbiguous(t *testing.T) {
	t.Parallel()
	t.Run("ContextEndsWhileTwilioHoldsTheAnswer", func(t *testing.T) {
		t.Parallel()
		fake := twiliotest.New(t, accountSID, authToken)
		fake.Delay(time.Hour)
		p := newProvider(t, twilio.Config{Endpoint: fake.URL()})

		// Twilio holds its answer for an hour: only the context can end
		// the send, and it ends after the request left.
		ctx, cancel := context.WithCancelCause(context.Background())
		wait := sendInBackground(t, ctx, p, smstest.Sample(event.ChannelSMS))
		require.Eventually(t, func() bool { return fake.Calls() == 1 }, 10*time.Second, time.Millisecond)
		cancel(context.DeadlineExceeded)
		err := wait()
		require.Error(t, err)
		require.True(t, provider.IsAmbiguous(err), "%v", err)
		require.False(t, provider.IsPermanent(err))
		require.Empty(t, fake.Received())
	})
	t.Run("ClientTimeout", func(t *testing.T) {
		t.Parallel()
		fake := twiliotest.New(t, accountSID, authToken)
		fake.Delay(time.Hour)
		p := newProvider(t, twilio.Config{Endpoint: fake.URL(), HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
		err := sendInBackground(t, context.Background(), p, smstest.Sample(event.ChannelSMS))()
		require.Error(t, err)
		require.True(t, provider.IsAmbiguous(err), "the client's timeout must bound the send: %v", err)
		require.Equal(t, 1, fake.Calls())
	})
	t.Run("ContextEndedBeforeSendingIsNot", func(t *testing.T) {
		t.Parallel()
		fake := twiliotest.New(t, accountSID, authToken)
		ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
		defer cancel()
		_, err := newProvider(t, twilio.Config{Endpoint: fake.URL()}).Send(ctx, smstest.Sample(event.ChannelSMS))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.False(t, provider.IsAmbiguous(err), "nothing left, so nothing can have arrived: %v", err)
		require.Zero(t, fake.Calls())
	})
	t.Run("ConnectionRefusedIsNot", func(t *testing.T) {
		t.Parallel()
		port, err := heraldtest.RefusingPort(t, net.IPv4(127, 0, 0, 1))
		require.NoError(t, err)
		p := newProvider(t, twilio.Config{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)})
		_, err = p.Send(context.Background(), smstest.Sample(event.ChannelSMS))
		require.Error(t, err)
		require.False(t, provider.IsPermanent(err), "%v", err)
		require.False(t, provider.IsAmbiguous(err), "%v", err)
	})
}

// sendInBackground starts p.Send and returns a wait for its error. wait
// fails the test if Send has not returned 10 s after it is called: a send
// must give up with its context or its client's timeout, not when the fake
// lets go (which, failing the test, it then does).
func sendInBackground(t *testing.T, ctx context.Context, p sms.Provider, msg sms.Message) (wait func() error) {
	t.Helper()
	sent := make(chan error, 1)
	go func() {
		_, err := p.Send(ctx, msg)
		sent <- err
	}()
	return func() error {
		t.Helper()
		select {
		case err := <-sent:
			return err
		case <-time.After(10 * time.Second):
			require.Fail(t, "Send did not return once its context ended")
			return nil
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	valid := twilio.Config{AccountSID: accountSID, AuthToken: authToken, From: from}
	with := func(change func(*twilio.Config)) twilio.Config {
		c := valid
		change(&c)
		return c
	}
	for want, cfg := range map[string]twilio.Config{
		"AccountSID is required":                      with(func(c *twilio.Config) { c.AccountSID = " " }),
		"AccountSID \"SK0123\" is not an account SID": with(func(c *twilio.Config) { c.AccountSID = "SK0123" }),
		"AuthToken is required":                       with(func(c *twilio.Config) { c.AuthToken = "\n" }),
		"AuthToken must be letters and digits":        with(func(c *twilio.Config) { c.AuthToken = "f00d-feed" }),
		"From or MessagingServiceSID is required":     with(func(c *twilio.Config) { c.From = "" }),
		"From \"whatsapp:+15017122661\" must be the bare number": with(func(c *twilio.Config) {
			c.From = "whatsapp:" + from
		}),
		"MessagingServiceSID \"MG1\" is not a messaging service SID": with(func(c *twilio.Config) { c.MessagingServiceSID = "MG1" }),
		"Endpoint \"api.twilio.com\" is not a base URL":              with(func(c *twilio.Config) { c.Endpoint = "api.twilio.com" }),
		"Endpoint \"ftp://api.twilio.com\"":                          with(func(c *twilio.Config) { c.Endpoint = "ftp://api.twilio.com" }),
		"Endpoint \"https://u:p@api.twilio.com\"":                    with(func(c *twilio.Config) { c.Endpoint = "https://u:p@api.twilio.com" }),
		"Endpoint \"https://api.twilio.com?x=1\"":                    with(func(c *twilio.Config) { c.Endpoint = "https://api.twilio.com?x=1" }),
		"status_callback \"/v1/inbound/twilio\" is not an absolute http(s) URL": with(func(c *twilio.Config) {
			c.StatusCallback = "/v1/inbound/twilio"
		}),
		"status_callback \"herald.example.com/v1/inbound/twilio\"": with(func(c *twilio.Config) {
			c.StatusCallback = "herald.example.com/v1/inbound/twilio"
		}),
		"status_callback \"ftp://herald.example.com/\"": with(func(c *twilio.Config) { c.StatusCallback = "ftp://herald.example.com/" }),
		"status_callback \"https://u:p@herald.example.com/\"": with(func(c *twilio.Config) {
			c.StatusCallback = "https://u:p@herald.example.com/"
		}),
	} {
		_, err := twilio.New(cfg)
		require.ErrorContains(t, err, want)
	}
	for _, cfg := range []twilio.Config{
		valid,
		with(func(c *twilio.Config) { c.From, c.MessagingServiceSID = "", serviceSID }),
		with(func(c *twilio.Config) { c.MessagingServiceSID = serviceSID }),
		with(func(c *twilio.Config) { c.From = "Acme" }), // an alphanumeric sender id
		with(func(c *twilio.Config) { c.AuthToken = authToken + "\n" }),
		with(func(c *twilio.Config) { c.Endpoint = "https://api.dublin.ie1.twilio.com" }),
		with(func(c *twilio.Config) { c.Endpoint = "http://127.0.0.1:3000/" }),
		with(func(c *twilio.Config) { c.StatusCallback = callbackURL }),
		with(func(c *twilio.Config) { c.StatusCallback = "http://10.0.0.7:8080/v1/inbound/twilio/acme/tw1?tag=a%20b" }),
	} {
		_, err := twilio.New(cfg)
		require.NoError(t, err, "%v", cfg)
	}
}

func TestTokenNeverLeaks(t *testing.T) {
	t.Parallel()
	const secret = "SECRETf00dfeedf00dfeedf00dfeed00"
	noLeak := func(t *testing.T, text string) {
		t.Helper()
		require.NotContains(t, text, secret)
		require.NotContains(t, text, "SECRET")
	}

	failures := map[string]twiliotest.Failure{
		"InvalidNumber": twiliotest.InvalidNumber, "Unauthenticated": twiliotest.Unauthenticated,
		"TooManyRequests": twiliotest.TooManyRequests(time.Second), "ServerError": twiliotest.ServerError,
		"BadGateway": twiliotest.BadGateway, "AcceptedWithoutSID": twiliotest.AcceptedWithoutSID,
	}
	for name, failure := range failures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fake := twiliotest.New(t, accountSID, secret)
			fake.FailNext(1, failure)
			_, err := newProvider(t, twilio.Config{AuthToken: secret, Endpoint: fake.URL()}).
				Send(context.Background(), smstest.Sample(event.ChannelSMS))
			require.Error(t, err)
			noLeak(t, err.Error())
			noLeak(t, fmt.Sprintf("%+v", err))
		})
	}
	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		fake := twiliotest.New(t, accountSID, secret)
		fake.Delay(time.Hour)
		p := newProvider(t, twilio.Config{AuthToken: secret, Endpoint: fake.URL(), HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
		err := sendInBackground(t, context.Background(), p, smstest.Sample(event.ChannelSMS))()
		require.Error(t, err)
		noLeak(t, err.Error())
	})
	t.Run("WrongTokenEverywhere", func(t *testing.T) {
		t.Parallel()
		fake := twiliotest.New(t, accountSID, authToken)
		_, err := newProvider(t, twilio.Config{AuthToken: secret, Endpoint: fake.URL()}).
			Send(context.Background(), smstest.Sample(event.ChannelSMS))
		require.Error(t, err)
		noLeak(t, err.Error())
	})
	// A proxy, or a confused server, that quotes the credentials back.
	for name, answer := range map[string]func(w http.ResponseWriter, token string){
		"EchoedInTwilioError": func(w http.ResponseWriter, token string) {
			w.WriteHeader(http.StatusForbidden)
			_, _ = fmt.Fprintf(w, `{"code": 20403, "message": "token %s may not send", "status": 403}`, token)
		},
		"EchoedInErrorPage": func(w http.ResponseWriter, token string) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = fmt.Fprintf(w, "<html>upstream refused %s</html>", token)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, token, _ := r.BasicAuth()
				answer(w, token)
			}))
			t.Cleanup(srv.Close)
			_, err := newProvider(t, twilio.Config{AuthToken: secret, Endpoint: srv.URL}).
				Send(context.Background(), smstest.Sample(event.ChannelSMS))
			require.Error(t, err)
			require.ErrorContains(t, err, "[redacted]", "the rest of the provider's words stay")
			noLeak(t, err.Error())
		})
	}
	t.Run("SetupAndLogs", func(t *testing.T) {
		t.Parallel()
		for _, cfg := range []twilio.Config{
			{AccountSID: accountSID, AuthToken: secret, From: from, Endpoint: "not a url " + secret},
			{AccountSID: accountSID, AuthToken: secret, From: "whatsapp:" + secret},
			{AccountSID: secret, AuthToken: secret, From: from},
			{AccountSID: accountSID, AuthToken: secret, MessagingServiceSID: secret},
			{AccountSID: accountSID, AuthToken: secret + "-x", From: from},
			{AccountSID: accountSID, AuthToken: secret, From: from, StatusCallback: "/inbound/" + secret},
		} {
			_, err := twilio.New(cfg)
			require.Error(t, err)
			noLeak(t, err.Error())
		}

		cfg := twilio.Config{AccountSID: accountSID, AuthToken: secret, From: from, Endpoint: "http://127.0.0.1:3000"}
		p, err := twilio.New(cfg)
		require.NoError(t, err)
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
			noLeak(t, fmt.Sprintf(verb, cfg))
			noLeak(t, fmt.Sprintf(verb, p))
			noLeak(t, fmt.Sprintf(verb, struct{ Provider sms.Provider }{p}))
		}
		var logs bytes.Buffer
		for _, h := range []slog.Handler{slog.NewJSONHandler(&logs, nil), slog.NewTextHandler(&logs, nil)} {
			slog.New(h).Info("provider configured", "config", cfg, "provider", p)
		}
		require.Contains(t, logs.String(), accountSID)
		noLeak(t, logs.String())
	})
}
