package client_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

type httpBundle struct {
	nats  *heraldtest.NATS
	url   string
	key   string // acme's send key
	spans *tracetest.SpanRecorder
}

// setupHTTP serves Herald's real API over HTTP on a real NATS with
// Herald's streams, authenticating with keys stored in the api_keys bucket
// as `herald keys create` stores them, and tracing its requests; options
// change the API's configuration.
func setupHTTP(t *testing.T, options ...func(*api.Config, *heraldtest.NATS)) *httpBundle {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	keys, err := apikey.Open(ctx, n.JS)
	require.NoError(t, err)
	plain, _, err := keys.Create(ctx, apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send}})
	require.NoError(t, err)
	auth, err := apikey.NewAuthenticator(keys, apikey.AuthConfig{})
	require.NoError(t, err)
	require.NoError(t, auth.Start(ctx))
	t.Cleanup(auth.Stop)

	b := &httpBundle{nats: n, key: plain, spans: tracetest.NewSpanRecorder()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b.spans))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	cfg := api.Config{Authenticator: api.StoredKeys{Keys: auth}, TracerProvider: tp}
	for _, o := range options {
		o(&cfg, n)
	}
	svc, err := api.New(n.JS, cfg)
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

func (b *httpBundle) publisher(t *testing.T, key string) *client.HTTP {
	t.Helper()
	p, err := client.NewHTTP(b.url, key, heraldtest.HTTPClient(t))
	require.NoError(t, err)
	return p
}

// Posted twice, an event is stored once — on its tenant's subject, under
// a Nats-Msg-Id of the tenant and event id — and the second post is told
// it was a duplicate.
func TestHTTPStoresAnEventOnceAndReportsTheCopy(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	pub := b.publisher(t, b.key)
	d := sampleOrder(t)
	ev := client.OrderCreated(acme, d.Order, d.Recipients...)

	first, err := pub.Publish(t.Context(), ev)
	require.NoError(t, err)
	require.Equal(t, client.Receipt{ID: ev.ID(), Subject: "orders.created.acme", Stream: "ORDERS", Sequence: 1}, first)
	again, err := pub.Publish(t.Context(), ev)
	require.NoError(t, err)
	require.Equal(t, client.Receipt{ID: ev.ID(), Subject: "orders.created.acme", Stream: "ORDERS", Sequence: 1, Duplicate: true}, again)

	stored := heraldtest.StreamMessages(t, b.nats.JS, "ORDERS")
	require.Len(t, stored, 1)
	want, err := ev.Build()
	require.NoError(t, err)
	require.Equal(t, want, stored[0].Data, "the API publishes the client's bytes as they are")
	require.Equal(t, event.MsgID("acme", ev.ID(), want), stored[0].Header.Get(jetstream.MsgIDHeader), "the message id the client gives it over NATS")
}

// An event id longer than an Idempotency-Key may be (256 bytes where the
// header takes 255) is still the key: the API defaults to it.
func TestHTTPDedupesTheLongestEventIDs(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	pub := b.publisher(t, b.key)
	d := sampleStock(t)
	env := acme
	env.ID = strings.Repeat("e", 256)
	ev := client.LowStock(env, d.Stock, d.Recipients...)

	_, err := pub.Publish(t.Context(), ev)
	require.NoError(t, err)
	again, err := pub.Publish(t.Context(), ev)
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Len(t, heraldtest.StreamMessages(t, b.nats.JS, "INVENTORY"), 1)
}

// The caller's trace continues in the API: its span for the request is a
// child of the caller's.
func TestHTTPCarriesTheCallersTrace(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	caller := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
	})
	d := sampleOrder(t)

	_, err := b.publisher(t, b.key).Publish(trace.ContextWithSpanContext(t.Context(), caller), client.OrderCreated(acme, d.Order, d.Recipients...))
	require.NoError(t, err)

	var request sdktrace.ReadOnlySpan
	for _, s := range b.spans.Ended() {
		if s.Name() == "POST /v1/events" {
			request = s
		}
	}
	require.NotNil(t, request, "the API traced the request")
	require.Equal(t, caller.TraceID(), request.SpanContext().TraceID())
	require.Equal(t, caller.SpanID(), request.Parent().SpanID())
}

// A refusal is an *APIError in the API's words, not retryable, and never
// repeats the key.
func TestHTTPRefusalsSayWhyInTheAPIsWords(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	d := sampleOrder(t)
	globex := acme
	globex.Tenant = "globex"
	unknown := "hk_nobody_" + strings.Repeat("x", 20)
	for _, c := range []struct {
		name   string
		key    string
		ev     *client.Event
		status int
		says   string
	}{
		{"another tenant's event", b.key, client.OrderCreated(globex, d.Order, d.Recipients...),
			http.StatusForbidden, `herald api: 403 Forbidden: the event's tenant "globex" is not the API key's`},
		{"an unknown key", unknown, client.OrderCreated(acme, d.Order, d.Recipients...),
			http.StatusUnauthorized, "herald api: 401 Unauthorized: the API key is not valid (unknown, malformed or revoked)"},
	} {
		_, err := b.publisher(t, c.key).Publish(t.Context(), c.ev)
		var refused *client.APIError
		require.ErrorAs(t, err, &refused, c.name)
		require.Equal(t, c.status, refused.Status, c.name)
		require.EqualError(t, err, c.says, c.name)
		require.NotErrorIs(t, err, client.ErrRetryable, c.name)
		require.NotContains(t, err.Error(), c.key, c.name)
	}
	require.Empty(t, heraldtest.StreamMessages(t, b.nats.JS, "ORDERS"))
}

// With NATS unreachable (the API's connection waiting to reconnect) the
// API stores nothing and answers 503 with
// Retry-After: a retryable error that says how long to wait.
func TestHTTPUnavailableIsRetryable(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	b.nats.Server.Shutdown()
	require.Eventually(t, func() bool { return b.nats.Conn.Status() != nats.CONNECTED }, 10*time.Second, 10*time.Millisecond)
	d := sampleOrder(t)

	_, err := b.publisher(t, b.key).Publish(t.Context(), client.OrderCreated(acme, d.Order, d.Recipients...))
	require.ErrorIs(t, err, client.ErrRetryable)
	var retry *client.RetryableError
	require.ErrorAs(t, err, &retry)
	require.Equal(t, 5*time.Second, retry.RetryAfter)
	var unavailable *client.APIError
	require.ErrorAs(t, err, &unavailable)
	require.Equal(t, http.StatusServiceUnavailable, unavailable.Status)
	require.Contains(t, err.Error(), "NATS is unreachable")
	require.NotContains(t, err.Error(), b.key)
}

// An API that does not answer in time is retryable too; the key is not in
// the error.
func TestHTTPTimeoutIsRetryable(t *testing.T) {
	t.Parallel()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	held := make(chan net.Conn, 1)
	go func() {
		if c, err := silent.Accept(); err == nil {
			held <- c // accepted, never answered
		}
	}()
	t.Cleanup(func() {
		select {
		case c := <-held:
			_ = c.Close()
		default:
		}
	})
	const key = "hk_acme1_secret"
	pub, err := client.NewHTTP("http://"+silent.Addr().String(), key, heraldtest.HTTPClient(t))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	d := sampleOrder(t)

	_, err = pub.Publish(ctx, client.OrderCreated(acme, d.Order, d.Recipients...))
	require.ErrorIs(t, err, client.ErrRetryable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotContains(t, err.Error(), key)
}

// An invalid event is refused before any request is made.
func TestHTTPPostsNothingInvalid(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	d := sampleOrder(t)
	d.Recipients[0].Channels = []event.Channel{"pigeon"}
	_, err := b.publisher(t, b.key).Publish(t.Context(), client.OrderCreated(acme, d.Order, d.Recipients...))
	var invalid *event.ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, []string{`data.recipients[0].channels: "pigeon" is not a channel (want one of [email sms whatsapp webhook inbox push])`}, invalid.Problems)
	require.Empty(t, b.spans.Ended(), "no request was made")
}

func TestNewHTTPNeedsAnAPIAndAKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ url, key, says string }{
		{"herald.example.com", "hk_a_b", `client: base URL "herald.example.com": want http(s)://host[:port]`},
		{"ftp://herald.example.com", "hk_a_b", `client: base URL "ftp://herald.example.com": want http(s)://host[:port]`},
		{"https://herald.example.com", " ", "client: an API key is required"},
	} {
		_, err := client.NewHTTP(c.url, c.key, nil)
		require.EqualError(t, err, c.says)
	}
}
