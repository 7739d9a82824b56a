package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// keys is the tests' Authenticator: API keys by their full text.
type keys map[string]api.Principal

func (k keys) Authenticate(_ context.Context, key string) (api.Principal, error) {
	p, ok := k[key]
	if !ok {
		return api.Principal{}, fmt.Errorf("key %s…: %w", key[:min(len(key), 6)], api.ErrInvalidKey)
	}
	return p, nil
}

// The keys every test may use.
const (
	acmeSend   = "hk_acme1_send"
	acmeRead   = "hk_acme2_read"
	globexSend = "hk_globex1_send"
	globexRead = "hk_globex2_read"
	adminKey   = "hk_admin1_all"
)

var testKeys = keys{
	acmeSend:   {KeyID: "acme1", Tenant: "acme", Scopes: []string{api.ScopeSend}},
	acmeRead:   {KeyID: "acme2", Tenant: "acme", Scopes: []string{api.ScopeRead}},
	globexSend: {KeyID: "globex1", Tenant: "globex", Scopes: []string{api.ScopeSend}},
	globexRead: {KeyID: "globex2", Tenant: "globex", Scopes: []string{api.ScopeRead}},
	adminKey:   {KeyID: "admin1", Admin: true},
}

type bundle struct {
	nats    *heraldtest.NATS
	svc     *api.Service
	url     string
	client  *http.Client
	metrics *sdkmetric.ManualReader
}

// setup serves the API over real HTTP on a real NATS server with Herald's
// streams; the client checks every answer against the OpenAPI document.
func setup(t *testing.T, cfg api.Config) *bundle {
	t.Helper()
	return serve(t, heraldtest.StartNATSWithStreams(t), cfg)
}

func serve(t *testing.T, n *heraldtest.NATS, cfg api.Config) *bundle {
	t.Helper()
	cfg.Authenticator = testKeys
	return serveWith(t, n, cfg)
}

// serveWith is serve with the config's own Authenticator.
func serveWith(t *testing.T, n *heraldtest.NATS, cfg api.Config) *bundle {
	t.Helper()
	b := &bundle{nats: n, metrics: sdkmetric.NewManualReader()}
	cfg.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(b.metrics))
	svc, err := api.New(n.JS, cfg)
	require.NoError(t, err)
	require.NoError(t, svc.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	b.svc, b.url = svc, srv.URL
	b.client = validatingClient(t, heraldtest.HTTPClient(t), srv.URL+"/v1/openapi.json")
	return b
}

// validatingClient fetches the OpenAPI document, then returns a client
// that fails the test on any answer the document does not describe.
func validatingClient(t *testing.T, plain *http.Client, docURL string) *http.Client {
	t.Helper()
	resp, err := plain.Get(docURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	spec, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return &http.Client{Transport: validating{t: t, next: plain.Transport, v: validatorOf(t, spec)}}
}

// validators holds a validator per OpenAPI document the tests were served
// (most serve the same one): building one compiles every schema the
// document holds, which cost a third of the package's CPU when each test
// built its own. A validator is safe for concurrent use.
var validators = struct {
	sync.Mutex
	of map[string]validator.Validator
}{of: map[string]validator.Validator{}}

// validatorOf checks that spec is a valid OpenAPI 3.1 document and returns
// its validator, built once per document.
func validatorOf(t *testing.T, spec []byte) validator.Validator {
	t.Helper()
	validators.Lock()
	defer validators.Unlock()
	if v, ok := validators.of[string(spec)]; ok {
		return v
	}
	doc, err := libopenapi.NewDocument(spec)
	require.NoError(t, err)
	require.Equal(t, "3.1.0", doc.GetVersion())
	v, errs := validator.NewValidator(doc)
	require.Empty(t, errs)
	valid, problems := v.ValidateDocument()
	require.True(t, valid, "%v", problems)
	validators.of[string(spec)] = v
	return v
}

type validating struct {
	t    *testing.T
	next http.RoundTripper
	v    validator.Validator
}

// RoundTrip runs in the test's goroutine (http.Client.Do is synchronous),
// so require may stop the test from here.
func (c validating) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(c.t, err)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	ok, problems := c.v.ValidateHttpResponse(req, resp)
	var reasons []string
	for _, p := range problems {
		reasons = append(reasons, p.Message+": "+p.Reason)
	}
	require.True(c.t, ok, "%s %s → %d %s\ndoes not match the OpenAPI document: %s", req.Method, req.URL.Path, resp.StatusCode, body,
		strings.Join(reasons, "; "))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// answer is a response with its body read.
type answer struct {
	status int
	header http.Header
	body   string
}

// do sends a request with key as its bearer token (none when empty) and
// headers as name, value pairs.
func (b *bundle) do(t *testing.T, method, path, key string, body []byte, headers ...string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(heraldtest.Context(t), method, b.url+path, bytes.NewReader(body))
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/cloudevents+json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(got)}
}

// sampleOrder is the README's sample order event.
func sampleOrder(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	return b
}

// edit replaces one occurrence of old in body, which must be there.
func edit(t *testing.T, body []byte, old, new string) []byte {
	t.Helper()
	require.Equal(t, 1, bytes.Count(body, []byte(old)), "%q must occur once", old)
	return bytes.Replace(body, []byte(old), []byte(new), 1)
}

// jsonField is one member of a JSON object, as JSON.
func jsonField(t *testing.T, body, name string) string {
	t.Helper()
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(body), &members))
	require.Contains(t, members, name)
	return string(members[name])
}
