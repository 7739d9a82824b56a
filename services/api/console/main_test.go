package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/api/console"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/tenant"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// testBundle is a console and what it stands on: a real NATS server with
// Herald's streams; two API keys, an admin's and acme's, followed by a
// real Authenticator as the API follows them; the stores the tests
// arrange what pages show in (the tenant registry, the ledger, a real
// SQLite notification index, a document link signer); and the API
// service, whose Retry a console may be given. setup serves a console on
// the index at url; serve, another with a configuration of the test's.
type testBundle struct {
	nats     *heraldtest.NATS
	url      string
	keys     *apikey.Keys
	auth     *apikey.Authenticator
	registry *tenant.Registry
	ledger   *ledger.Ledger
	index    *history.Store
	signer   *documents.Signer
	svc      *api.Service
	clock    *clock // every console's
	admin    string // an admin key, in plain text
	adminID  string
	tenant   string // acme's key, in plain text
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx := heraldtest.Context(t)
	b := &testBundle{nats: heraldtest.StartNATSWithStreams(t), clock: &clock{}}
	b.openKeys(t)
	var err error
	b.registry, err = tenant.Open(ctx, b.nats.JS, tenant.BuiltinPlans())
	require.NoError(t, err)
	b.ledger, err = ledger.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	b.index, err = history.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.index.Close()) })
	b.signer, err = documents.NewSigner([]byte(strings.Repeat("k", 32)), "https://herald.example", time.Hour)
	require.NoError(t, err)
	b.svc, err = api.New(b.nats.JS, api.Config{Authenticator: api.StoredKeys{Keys: b.auth}, History: b.index})
	require.NoError(t, err)
	require.NoError(t, b.svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, b.svc.Stop(context.Background())) })
	b.url = b.serve(t, console.Config{History: b.index})
	return b
}

// openKeys makes the admin's and acme's keys and starts the Authenticator
// that follows them.
func (b *testBundle) openKeys(t *testing.T) {
	t.Helper()
	ctx := heraldtest.Context(t)
	var err error
	b.keys, err = apikey.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	var admin apikey.Key
	b.admin, admin, err = b.keys.Create(ctx, apikey.Spec{Admin: true, Name: "operator"})
	require.NoError(t, err)
	b.adminID = admin.ID
	b.tenant, _, err = b.keys.Create(ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	b.auth, err = apikey.NewAuthenticator(b.keys, apikey.AuthConfig{})
	require.NoError(t, err)
	require.NoError(t, b.auth.Start(ctx))
	t.Cleanup(b.auth.Stop)
}

// serve starts a console with cfg, its keys and clock the bundle's, and
// returns its base URL.
func (b *testBundle) serve(t *testing.T, cfg console.Config) string {
	t.Helper()
	cfg.Keys, cfg.Now = api.StoredKeys{Keys: b.auth}, b.clock.Now
	c, err := console.New(b.nats.JS, cfg)
	require.NoError(t, err)
	require.NoError(t, c.Start(heraldtest.Context(t)))
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// clock is the consoles' time: the real one, moved by what a test adds.
type clock struct {
	mu    sync.Mutex
	ahead time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.ahead)
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ahead += d
}

// register adds a tenant to the registry.
func (b *testBundle) register(t *testing.T, tn tenant.Tenant) {
	t.Helper()
	_, err := b.registry.Create(heraldtest.Context(t), tn)
	require.NoError(t, err)
}

// deadLetter writes a DLQ entry as the router does for an event it cannot
// read.
func (b *testBundle) deadLetter(t *testing.T, payload, reason string) {
	t.Helper()
	h := nats.Header{}
	h.Set(nats.MsgIdHdr, "evt-hostile")
	h.Set("X-Note", `"><script>window.__pwned=1</script>`)
	require.NoError(t, deadletter.Copy(heraldtest.Context(t), b.nats.JS, "ORDERS", "router", &jetstream.RawStreamMsg{
		Subject: "orders.created", Sequence: 7, Header: h, Data: []byte(payload), Time: time.Now(),
	}, 1, reason))
}

// audit is every entry the consoles wrote to the AUDIT stream, and the
// stream's bytes whole, headers too, to look for secrets in.
func (b *testBundle) audit(t *testing.T) ([]console.AuditEntry, string) {
	t.Helper()
	var entries []console.AuditEntry
	var raw strings.Builder
	for _, m := range heraldtest.StreamMessages(t, b.nats.JS, "AUDIT") {
		raw.Write(m.Data)
		for _, values := range m.Header {
			raw.WriteString(strings.Join(values, " "))
		}
		var e console.AuditEntry
		require.NoError(t, json.Unmarshal(m.Data, &e))
		entries = append(entries, e)
	}
	return entries, raw.String()
}

func findAudit(entries []console.AuditEntry, action, target string) (console.AuditEntry, bool) {
	for _, e := range entries {
		if e.Action == action && e.Target == target {
			return e, true
		}
	}
	return console.AuditEntry{}, false
}

// actions are what the entries did, for a failure's message: never their
// targets, which a broken console could have put a secret in.
func actions(entries []console.AuditEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Action
	}
	return out
}

// browser is an operator's browser on a console: it keeps its cookies and
// follows redirects, unless it is stepwise.
type browser struct {
	base   string
	client *http.Client
}

// browse opens a browser on the console at base.
func browse(t *testing.T, base string) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := heraldtest.HTTPClient(t)
	client.Jar = jar
	return &browser{base: base, client: client}
}

// stepwise opens a browser that stops at each redirect, to look at it.
func stepwise(t *testing.T, base string) *browser {
	t.Helper()
	br := browse(t, base)
	br.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return br
}

// page is an answer, its body read.
type page struct {
	status int
	header http.Header
	path   string // the request URI answered, after any redirect followed
	body   string
}

func (p page) cookies() []*http.Cookie { return (&http.Response{Header: p.header}).Cookies() }

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the session's token, as the page's forms carry it.
func (p page) csrf(t *testing.T) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	require.NotNil(t, m, "the page has a form with the CSRF token")
	return m[1]
}

func (br *browser) get(t *testing.T, path string) page {
	t.Helper()
	req, err := http.NewRequestWithContext(heraldtest.Context(t), http.MethodGet, br.base+path, nil)
	require.NoError(t, err)
	return br.do(t, req)
}

// post sends a form, with headers as name, value pairs.
func (br *browser) post(t *testing.T, path string, form url.Values, headers ...string) page {
	t.Helper()
	req, err := http.NewRequestWithContext(heraldtest.Context(t), http.MethodPost, br.base+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return br.do(t, req)
}

func (br *browser) do(t *testing.T, req *http.Request) page {
	t.Helper()
	resp, err := br.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return page{status: resp.StatusCode, header: resp.Header, path: resp.Request.URL.RequestURI(), body: string(body)}
}

// signIn signs in through the sign-in form, checks that it lands on the
// page it asked to go back to, and returns the session's CSRF token, as
// every signed-in page carries it (the sign-out form).
func (br *browser) signIn(t *testing.T, key string) string {
	t.Helper()
	const next = "/console/tenants"
	p := br.post(t, "/console/signin", url.Values{"key": {key}, "next": {next}})
	if br.client.CheckRedirect != nil {
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		require.Equal(t, next, p.header.Get("Location"))
		p = br.get(t, next)
	}
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Equal(t, next, p.path)
	return p.csrf(t)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
