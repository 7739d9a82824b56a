package webhook_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery/webhook"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/provider"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

const body = `{"type":"notification.delivered","timestamp":"2026-11-30T09:00:00Z","data":{"id":"ntf_0123abcd"}}`

// delivery is what a receiver got.
type delivery struct {
	header http.Header
	body   []byte
}

// receiver is an endpoint on loopback that records what it gets and
// answers with answer.
type receiver struct {
	*httptest.Server
	got  chan delivery
	hits atomic.Int32
}

func newReceiver(t *testing.T, answer http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{got: make(chan delivery, 16)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		b, _ := io.ReadAll(req.Body)
		r.got <- delivery{header: req.Header.Clone(), body: b}
		answer(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

// status answers with code, headers (key, value pairs) and text.
func status(code int, text string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, text)
	}
}

// loopbackSender may reach the loopback receivers the tests run.
func loopbackSender(t *testing.T) *webhook.Sender {
	t.Helper()
	c := webhook.NewClient(webhook.ClientOptions{AllowPrivateNetworks: true})
	t.Cleanup(c.CloseIdleConnections)
	return &webhook.Sender{Client: c}
}

func message(url string, secrets ...[]byte) webhook.Message {
	return webhook.Message{
		ID: "ntf_0123abcd", Type: "notification.delivered", URL: url,
		Secrets: secrets, Body: []byte(body),
	}
}

func TestSendDeliversASignedWebhook(t *testing.T) {
	t.Parallel()
	whsec, key := secret(t)
	r := newReceiver(t, status(http.StatusNoContent, ""))
	s := loopbackSender(t)
	s.UserAgent = "herald-test/1"

	at := time.Now().Add(-time.Minute).Truncate(time.Second)
	msg := message(r.URL+"/hooks", key)
	msg.Timestamp = at
	receipt, err := s.Send(heraldtest.Context(t), msg)
	require.NoError(t, err)
	// The endpoint gives no id: the receipt holds the webhook-id.
	require.Equal(t, provider.Receipt{MessageID: "ntf_0123abcd"}, receipt)

	got := <-r.got
	require.Equal(t, body, string(got.body), "the body is sent byte for byte")
	require.Equal(t, "application/json", got.header.Get("Content-Type"))
	require.Equal(t, "herald-test/1", got.header.Get("User-Agent"))
	require.Equal(t, "ntf_0123abcd", got.header.Get("webhook-id"))
	require.Equal(t, strconv.FormatInt(at.Unix(), 10), got.header.Get("webhook-timestamp"))
	wh, err := standardwebhooks.NewWebhook(whsec)
	require.NoError(t, err)
	require.NoError(t, wh.Verify(got.body, got.header), "the official library verifies it")
}

func TestSendTimestampDefaultsToNow(t *testing.T) {
	t.Parallel()
	whsec, key := secret(t)
	r := newReceiver(t, status(http.StatusOK, "ok"))
	_, err := loopbackSender(t).Send(heraldtest.Context(t), message(r.URL, key))
	require.NoError(t, err)
	got := <-r.got
	wh, err := standardwebhooks.NewWebhook(whsec)
	require.NoError(t, err)
	// Verify, unlike VerifyIgnoringTimestamp, refuses a timestamp more
	// than five minutes off: a zero time would be.
	require.NoError(t, wh.Verify(got.body, got.header))
}

func TestSendDuringRotationVerifiesWithEitherSecret(t *testing.T) {
	t.Parallel()
	oldS, oldK := secret(t)
	newS, newK := secret(t)
	otherS, _ := secret(t)
	r := newReceiver(t, status(http.StatusOK, ""))
	_, err := loopbackSender(t).Send(heraldtest.Context(t), message(r.URL, newK, oldK))
	require.NoError(t, err)
	got := <-r.got
	for _, whsec := range []string{oldS, newS} {
		wh, err := standardwebhooks.NewWebhook(whsec)
		require.NoError(t, err)
		require.NoError(t, wh.Verify(got.body, got.header))
	}
	wh, err := standardwebhooks.NewWebhook(otherS)
	require.NoError(t, err)
	require.ErrorIs(t, wh.Verify(got.body, got.header), standardwebhooks.ErrNoMatchingSignature)
}

func TestSendClassifiesTheAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		answer     http.HandlerFunc
		permanent  bool
		gone       bool
		retryAfter time.Duration
		words      string
	}{
		{name: "500", answer: status(500, "database down"), words: "HTTP 500: database down"},
		{name: "502 without a body", answer: status(502, ""), words: "HTTP 502: Bad Gateway"},
		{name: "503 with Retry-After", answer: status(503, "", "Retry-After", "7"), retryAfter: 7 * time.Second, words: "HTTP 503"},
		{name: "429 with Retry-After", answer: status(429, "slow down", "Retry-After", "3"), retryAfter: 3 * time.Second, words: "HTTP 429: slow down"},
		{name: "410", answer: status(410, "endpoint deleted"), permanent: true, gone: true, words: "endpoint deleted"},
		{name: "404", answer: status(404, "no such hook"), permanent: true, words: "HTTP 404: no such hook"},
		{name: "401", answer: status(401, "bad signature"), permanent: true, words: "authentication rejected: HTTP 401"},
		{name: "301", answer: status(301, "", "Location", "https://new.example.com/hooks"), permanent: true, words: "redirected (HTTP 301 to new.example.com)"},
		{name: "307 without a Location", answer: status(307, ""), permanent: true, words: "redirected (HTTP 307)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, key := secret(t)
			r := newReceiver(t, tt.answer)
			receipt, err := loopbackSender(t).Send(heraldtest.Context(t), message(r.URL, key))
			require.Error(t, err)
			require.Empty(t, receipt.MessageID)
			require.Equal(t, tt.permanent, provider.IsPermanent(err))
			require.Equal(t, tt.gone, errors.Is(err, webhook.ErrGone))
			require.Equal(t, tt.retryAfter, provider.RetryAfter(err))
			require.False(t, provider.IsAmbiguous(err), "the endpoint answered: it did not take the webhook")
			require.ErrorContains(t, err, tt.words)
			require.ErrorContains(t, err, "webhook notification.delivered to "+r.Listener.Addr().String())
		})
	}
}

func TestSendFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	_, key := secret(t)
	elsewhere := newReceiver(t, status(http.StatusOK, ""))
	r := newReceiver(t, status(http.StatusFound, "", "Location", elsewhere.URL+"/internal"))
	for _, s := range []*webhook.Sender{
		loopbackSender(t),
		// A client of one's own that follows redirects follows none here.
		{Client: &http.Client{Transport: webhook.NewClient(webhook.ClientOptions{AllowPrivateNetworks: true}).Transport}},
	} {
		_, err := s.Send(heraldtest.Context(t), message(r.URL, key))
		require.True(t, provider.IsPermanent(err), "a redirecting endpoint is misconfigured until its URL is updated")
		require.ErrorContains(t, err, "redirected (HTTP 302 to "+elsewhere.Listener.Addr().String()+")")
		s.Client.CloseIdleConnections()
	}
	require.Zero(t, elsewhere.hits.Load(), "the redirect was not followed")
	require.EqualValues(t, 2, r.hits.Load())
}

func TestSendCapsWhatItReadsOfAnAnswer(t *testing.T) {
	t.Parallel()
	_, key := secret(t)
	r := newReceiver(t, status(500, "0123456789 and then the rest that is never read"))
	s := loopbackSender(t)
	s.MaxResponseBytes = 10
	_, err := s.Send(heraldtest.Context(t), message(r.URL, key))
	require.ErrorContains(t, err, "HTTP 500: 0123456789")
	require.NotContains(t, err.Error(), "never read")

	huge := newReceiver(t, status(500, strings.Repeat("x", 8<<20)))
	_, err = loopbackSender(t).Send(heraldtest.Context(t), message(huge.URL, key))
	require.ErrorContains(t, err, "HTTP 500: xxxx")
	require.Less(t, len(err.Error()), 400, "an error quotes a short excerpt")
}

func TestSendReusesTheConnectionAfterALongAnswer(t *testing.T) {
	t.Parallel()
	_, key := secret(t)
	var conns atomic.Int32
	r := &receiver{got: make(chan delivery, 16)}
	r.Server = httptest.NewUnstartedServer(status(500, strings.Repeat("x", 100<<10))) // more than MaxResponseBytes
	r.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	r.Start()
	t.Cleanup(r.Close)
	s := loopbackSender(t)
	for range 3 {
		_, err := s.Send(heraldtest.Context(t), message(r.URL, key))
		require.ErrorContains(t, err, "HTTP 500")
	}
	require.EqualValues(t, 1, conns.Load(), "the rest of each answer was drained, so one connection carried all three")
}

func TestSendNetworkFailures(t *testing.T) {
	t.Parallel()
	_, key := secret(t)

	// Nothing listens: nothing arrived, so a retry cannot duplicate.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	_, err := loopbackSender(t).Send(heraldtest.Context(t), message(closed.URL, key))
	require.Error(t, err)
	require.False(t, provider.IsPermanent(err))
	require.False(t, provider.IsAmbiguous(err))

	// The endpoint took the request and gave no answer in time: it may
	// have processed it.
	arrived := make(chan struct{})
	slow := newReceiver(t, func(_ http.ResponseWriter, req *http.Request) {
		close(arrived)
		<-req.Context().Done()
	})
	ctx, cancel := context.WithCancel(heraldtest.Context(t))
	go func() { <-arrived; cancel() }()
	_, err = loopbackSender(t).Send(ctx, message(slow.URL, key))
	require.Error(t, err)
	require.False(t, provider.IsPermanent(err))
	require.True(t, provider.IsAmbiguous(err))

	// A context already done sends nothing, and says so.
	done, stop := context.WithCancel(context.Background())
	stop()
	_, err = loopbackSender(t).Send(done, message(slow.URL, key))
	require.ErrorContains(t, err, "not sent")
	require.False(t, provider.IsAmbiguous(err))
	require.EqualValues(t, 1, slow.hits.Load())
}

func TestSendRefusesAMessageItCannotSend(t *testing.T) {
	t.Parallel()
	_, key := secret(t)
	r := newReceiver(t, status(http.StatusOK, ""))
	tests := []struct {
		name  string
		edit  func(*webhook.Message)
		words string
	}{
		{"no id", func(m *webhook.Message) { m.ID = "" }, "no id"},
		{"a '.' in the id", func(m *webhook.Message) { m.ID = "ntf.1" }, "without spaces or '.'"},
		{"a newline in the id", func(m *webhook.Message) { m.ID = "ntf_1\r\nX-Evil: 1" }, "printable ASCII"},
		{"no secret", func(m *webhook.Message) { m.Secrets = nil }, "no signing secret"},
		{"an empty secret", func(m *webhook.Message) { m.Secrets = [][]byte{key, nil} }, "secrets is empty"},
		{"a body that is not JSON", func(m *webhook.Message) { m.Body = []byte("hello") }, "not JSON"},
		{"no URL", func(m *webhook.Message) { m.URL = "" }, "no URL"},
		{"a file URL", func(m *webhook.Message) { m.URL = "file:///etc/passwd" }, `must be http or https, not "file"`},
		{"an ftp URL", func(m *webhook.Message) { m.URL = "ftp://example.com/x" }, `not "ftp"`},
		{"no host", func(m *webhook.Message) { m.URL = "http:///hooks" }, "no host"},
		{"not a URL", func(m *webhook.Message) { m.URL = "http://[::1/x%zz" }, "not valid"},
	}
	for _, tt := range tests {
		msg := message(r.URL, key)
		tt.edit(&msg)
		_, err := loopbackSender(t).Send(heraldtest.Context(t), msg)
		require.True(t, provider.IsPermanent(err), tt.name)
		require.ErrorContains(t, err, tt.words, tt.name)
	}
	require.Zero(t, r.hits.Load(), "nothing was sent")
}

func TestNewClientRefusesOtherSchemes(t *testing.T) {
	t.Parallel()
	c := webhook.NewClient(webhook.ClientOptions{AllowPrivateNetworks: true})
	resp, err := c.Get("ftp://127.0.0.1/x")
	if resp != nil {
		resp.Body.Close()
	}
	require.True(t, provider.IsPermanent(err))
}

// listen6 serves on [::1], or skips when this host has no IPv6 loopback.
func listen6(t *testing.T) *receiver {
	t.Helper()
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	r := &receiver{got: make(chan delivery, 16)}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	r.Listener.Close()
	r.Listener = l
	r.Start()
	t.Cleanup(r.Close)
	return r
}

func TestTheDefaultClientRefusesPrivateNetworks(t *testing.T) {
	t.Parallel()
	_, key := secret(t)
	v4 := newReceiver(t, status(http.StatusNoContent, ""))
	v6 := listen6(t)
	_, port4, err := net.SplitHostPort(v4.Listener.Addr().String())
	require.NoError(t, err)

	tests := []struct {
		name, url string
		local     *receiver // the receiver it would reach, if any
	}{
		{"loopback", v4.URL + "/hooks", v4},
		{"IPv6 loopback", v6.URL + "/hooks", v6},
		{"a name that resolves to loopback", "http://localhost:" + port4 + "/hooks", v4},
		{"IPv4-mapped loopback", "http://[::ffff:127.0.0.1]:" + port4 + "/hooks", v4},
		{"the unspecified address", "http://0.0.0.0:" + port4 + "/hooks", v4},
		{"RFC 1918", "http://10.1.2.3/hooks", nil},
		{"the cloud metadata service", "http://169.254.169.254/latest/meta-data/", nil},
		{"IPv4-mapped metadata service", "http://[::ffff:169.254.169.254]/latest/meta-data/", nil},
		{"IPv6 unique local", "http://[fd00::1]/hooks", nil},
		{"CGNAT", "https://100.64.0.1/hooks", nil},
	}
	for _, tt := range tests {
		// No Client: the default one, which must be safe.
		_, err := (&webhook.Sender{}).Send(heraldtest.Context(t), message(tt.url, key))
		require.ErrorIs(t, err, webhook.ErrPrivateNetwork, tt.name)
		require.True(t, provider.IsPermanent(err), tt.name)
		require.ErrorContains(t, err, "refused to connect to a private network address", tt.name)
	}
	require.Zero(t, v4.hits.Load(), "nothing reached the loopback receiver")
	require.Zero(t, v6.hits.Load(), "nothing reached the IPv6 loopback receiver")

	// Allowed, the same addresses are reached.
	for _, tt := range tests[:4] {
		before := tt.local.hits.Load()
		_, err := loopbackSender(t).Send(heraldtest.Context(t), message(tt.url, key))
		require.NoError(t, err, tt.name)
		require.Equal(t, before+1, tt.local.hits.Load(), tt.name)
	}
}

func TestErrorsNeverQuoteTheURLsSecrets(t *testing.T) {
	t.Parallel()
	_, key := secret(t)
	const path, query = "/hooks/tok_SECRETPATH123", "key=sek_SECRETQUERY456"
	echo := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			w.WriteHeader(code)
			// What many error pages do: echo the request.
			_, _ = io.WriteString(w, "Cannot POST "+req.URL.String()+" ("+url.QueryEscape(req.URL.Query().Get("key"))+")")
		}
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	arrived := make(chan struct{})
	slow := newReceiver(t, func(_ http.ResponseWriter, req *http.Request) { close(arrived); <-req.Context().Done() })
	ctx, cancel := context.WithCancel(heraldtest.Context(t))
	go func() { <-arrived; cancel() }()

	tests := []struct {
		name   string
		base   string
		ctx    context.Context
		sender *webhook.Sender
	}{
		{"500 echoing the URL", newReceiver(t, echo(500)).URL, nil, nil},
		{"404 echoing the URL", newReceiver(t, echo(404)).URL, nil, nil},
		{"410 echoing the URL", newReceiver(t, echo(410)).URL, nil, nil},
		{"redirect to itself", newReceiver(t, func(w http.ResponseWriter, req *http.Request) {
			http.Redirect(w, req, "https://elsewhere.example.com"+req.URL.RequestURI(), http.StatusFound)
		}).URL, nil, nil},
		{"connection refused", closed.URL, nil, nil},
		{"cancelled while waiting for the answer", slow.URL, ctx, nil},
		{"refused as private", "http://user:pass_SECRETPASS@127.0.0.1:1", nil, &webhook.Sender{}},
	}
	for _, tt := range tests {
		s := tt.sender
		if s == nil {
			s = loopbackSender(t)
		}
		c := tt.ctx
		if c == nil {
			c = heraldtest.Context(t)
		}
		u, err := url.Parse(tt.base)
		require.NoError(t, err)
		_, err = s.Send(c, message(tt.base+path+"?"+query, key))
		require.Error(t, err, tt.name)
		require.NotContains(t, err.Error(), "SECRET", tt.name)
		require.ErrorContains(t, err, "to "+u.Host, tt.name+": the host is named")
	}
}
