package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/api/console"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/circuits"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// site is a console on a NATS server of the test's own, with an admin key
// and a tenant's.
type site struct {
	t           *testing.T
	js          jetstream.JetStream
	url         string
	admin       string // plaintext keys
	adminID     string
	tenant      string
	now         time.Time
	secure      bool
	consoleTime func() time.Time
}

func start(t *testing.T, secure bool) *site {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	keys, err := apikey.Open(ctx, n.JS)
	require.NoError(t, err)
	admin, adminKey, err := keys.Create(ctx, apikey.Spec{Admin: true, Name: "operator"})
	require.NoError(t, err)
	tenantKey, _, err := keys.Create(ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	auth, err := apikey.NewAuthenticator(keys, apikey.AuthConfig{})
	require.NoError(t, err)
	require.NoError(t, auth.Start(ctx))
	t.Cleanup(auth.Stop)

	s := &site{t: t, js: n.JS, admin: admin, adminID: adminKey.ID, tenant: tenantKey, now: time.Now(), secure: secure}
	c, err := console.New(n.JS, console.Config{Keys: api.StoredKeys{Keys: auth}, Secure: secure,
		Now: func() time.Time { return s.now }})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// browser is a client with cookies that does not follow redirects.
func (s *site) browser() *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(s.t, err)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (s *site) get(c *http.Client, path string) (*http.Response, string) {
	s.t.Helper()
	resp, err := c.Get(s.url + path)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp, string(body)
}

func (s *site) post(c *http.Client, path string, form url.Values, header ...string) (*http.Response, string) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(form.Encode()))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp, string(body)
}

// signIn signs c in with key and returns the page's CSRF token.
func (s *site) signIn(c *http.Client, key string) string {
	s.t.Helper()
	resp, _ := s.post(c, "/console/signin", url.Values{"key": {key}, "next": {"/console/dlq"}})
	require.Equal(s.t, http.StatusSeeOther, resp.StatusCode)
	_, page := s.get(c, "/console/dlq")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(s.t, m, "the page carries the session's CSRF token")
	return m[1]
}

func (s *site) audit() []console.AuditEntry {
	var out []console.AuditEntry
	for _, m := range heraldtest.StreamMessages(s.t, s.js, "AUDIT") {
		var e console.AuditEntry
		require.NoError(s.t, json.Unmarshal(m.Data, &e))
		out = append(out, e)
	}
	return out
}

// Without a session every page sends the browser to sign in, and back to
// the page after; a tenant's key and a wrong key do not open a session.
func TestOnlyAnAdminKeySignsIn(t *testing.T) {
	t.Parallel()
	s := start(t, false)
	b := s.browser()
	resp, _ := s.get(b, "/console/dlq?tenant=acme")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/console/signin?next=%2Fconsole%2Fdlq%3Ftenant%3Dacme", resp.Header.Get("Location"))

	resp, page := s.post(b, "/console/signin", url.Values{"key": {s.tenant}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, page, "that key is a tenant&#39;s")
	require.Empty(t, resp.Cookies())
	resp, page = s.post(b, "/console/signin", url.Values{"key": {"hk_nope_nope"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, page, "That key opens nothing")
	require.NotContains(t, page, "hk_nope_nope", "the key is not repeated")

	resp, _ = s.post(b, "/console/signin", url.Values{"key": {s.admin}, "next": {"https://evil.example/"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/console/", resp.Header.Get("Location"), "never sent to another site")
	ck := resp.Cookies()[0]
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	require.Equal(t, "/console/", ck.Path)
	require.False(t, ck.Secure, "dev's plain http")
	require.NotContains(t, ck.Value, s.admin)
	resp, _ = s.get(b, "/console/dlq")
	require.Equal(t, http.StatusOK, resp.StatusCode)

	var actions []string
	for _, e := range s.audit() {
		actions = append(actions, e.Action+" "+e.Who+" "+e.Error)
		require.NotContains(t, e.Who+e.Target+e.Error, s.admin)
	}
	tenantID, _ := apikey.Parse(s.tenant)
	require.Equal(t, []string{"signin " + tenantID + " not an admin key", "signin  invalid key", "signin " + s.adminID + " "}, actions)
}

// Signing in from another site is refused (login CSRF: a page elsewhere
// signing the operator's browser into a session of its choosing), and so
// is an opaque Origin ("null") unless the browser also says the request is
// the console's own (Sec-Fetch-Site: same-origin).
func TestSignInIsRefusedFromAnotherSite(t *testing.T) {
	t.Parallel()
	s := start(t, false)
	for name, headers := range map[string][]string{
		"another site":             {"Origin", "https://evil.example"},
		"another port":             {"Origin", "http://127.0.0.1:1"},
		"null, no Sec-Fetch-Site":  {"Origin", "null"},
		"null, from another site":  {"Origin", "null", "Sec-Fetch-Site", "cross-site"},
		"null, from the same site": {"Origin", "null", "Sec-Fetch-Site", "same-site"},
	} {
		resp, page := s.post(s.browser(), "/console/signin", url.Values{"key": {s.admin}}, headers...)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, name)
		require.Contains(t, page, "This request came from another site.", name)
		require.Empty(t, resp.Cookies(), "%s: no session", name)
	}
	require.Empty(t, s.audit(), "the key was not even tried")

	for name, headers := range map[string][]string{
		"its own origin":       {"Origin", s.url},
		"null, its own origin": {"Origin", "null", "Sec-Fetch-Site", "same-origin"},
		"no Origin":            {},
	} {
		resp, _ := s.post(s.browser(), "/console/signin", url.Values{"key": {s.admin}}, headers...)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, name)
		require.Len(t, resp.Cookies(), 1, name)
	}
}

func TestTheSessionCookieIsSecureOutsideDev(t *testing.T) {
	t.Parallel()
	s := start(t, true)
	resp, _ := s.post(s.browser(), "/console/signin", url.Values{"key": {s.admin}})
	require.True(t, resp.Cookies()[0].Secure)
}

// A state change needs the session's CSRF token and the console's own
// origin; a session ends when it expires or its operator signs out.
func TestActionsNeedTheSessionsTokenAndOrigin(t *testing.T) {
	t.Parallel()
	s := start(t, false)
	b := s.browser()
	csrf := s.signIn(b, s.admin)

	resp, _ := s.post(b, "/console/dlq/purge", url.Values{"seq": {"1"}, "confirm": {"purge"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no token")
	resp, _ = s.post(b, "/console/dlq/purge", url.Values{"seq": {"1"}, "confirm": {"purge"}, "csrf": {csrf + "x"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "another token")
	resp, _ = s.post(b, "/console/dlq/purge", url.Values{"seq": {"1"}, "confirm": {"purge"}, "csrf": {csrf}}, "Origin", "https://evil.example")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "another site")
	resp, _ = s.post(b, "/console/dlq/purge", url.Values{"seq": {"1"}, "confirm": {"purge"}, "csrf": {csrf}, "back": {"/console/dlq"}}, "Origin", s.url)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	// Another browser with this session's token but not its cookie.
	other := s.browser()
	resp, _ = s.post(other, "/console/dlq/purge", url.Values{"seq": {"1"}, "confirm": {"purge"}, "csrf": {csrf}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	s.now = s.now.Add(9 * time.Hour) // past the 8 h a session lasts
	resp, _ = s.get(b, "/console/dlq")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "expired: sign in again")
	s.now = s.now.Add(-9 * time.Hour)
	resp, _ = s.post(b, "/console/signout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	s.now = s.now.Add(time.Minute)
	resp, _ = s.get(b, "/console/dlq")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "signed out")
}

// deadLetter writes a DLQ entry as the router does for an event it cannot
// read.
func (s *site) deadLetter(payload, reason string) {
	s.t.Helper()
	h := nats.Header{}
	h.Set(nats.MsgIdHdr, "evt-hostile")
	h.Set("X-Note", `"><script>window.__pwned=1</script>`)
	require.NoError(s.t, deadletter.Copy(heraldtest.Context(s.t), s.js, "ORDERS", "router", &jetstream.RawStreamMsg{
		Subject: "orders.created", Sequence: 7, Header: h, Data: []byte(payload), Time: time.Now(),
	}, 1, reason))
}

// What a publisher wrote — payload, headers, the reason quoting it — is
// shown as text, never run.
func TestHostileDeadLettersStayText(t *testing.T) {
	t.Parallel()
	s := start(t, false)
	s.deadLetter(`{"id":"<script>alert(1)</script>","x":"<img src=x onerror=alert(2)>"}`, `invalid event: id: "<script>alert(1)</script>" is not an id`)
	b := s.browser()
	s.signIn(b, s.admin)
	_, list := s.get(b, "/console/dlq")
	_, entry := s.get(b, "/console/dlq/1")
	for _, page := range []string{list, entry} {
		require.NotContains(t, page, "<script>alert")
		require.NotContains(t, page, "<img src=x")
		require.NotContains(t, page, "<script>window")
		require.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
	}
	require.Contains(t, entry, "&#34;&gt;&lt;script&gt;window.__pwned=1&lt;/script&gt;", "a header's value")
	require.Contains(t, entry, "&#34;x&#34;: &#34;&lt;img src=x onerror=alert(2)&gt;&#34;", "the payload, indented")
	resp, _ := s.get(b, "/console/dlq/1")
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'", "and the browser runs no inline script anyway")
}

// Redriving the ticked entries republishes them and records who did it;
// purging needs the word typed.
func TestRedriveAndPurgeFromTheDLQPage(t *testing.T) {
	t.Parallel()
	s := start(t, false)
	s.deadLetter(`{"specversion":"1.0","id":"evt-1"}`, "invalid event: source: is required")
	b := s.browser()
	csrf := s.signIn(b, s.admin)
	ctx := context.Background()

	resp, _ := s.post(b, "/console/dlq/redrive", url.Values{"csrf": {csrf}, "seq": {"1"}, "back": {"/console/dlq"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/console/dlq?done="+url.QueryEscape("1 entry redriven."), resp.Header.Get("Location"))
	orders, err := s.js.Stream(ctx, "ORDERS")
	require.NoError(t, err)
	info, err := orders.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, info.State.Msgs, "back on orders.created")
	_, page := s.get(b, "/console/dlq")
	require.Contains(t, page, "1×", "marked redriven")

	resp, _ = s.post(b, "/console/dlq/purge", url.Values{"csrf": {csrf}, "seq": {"1"}, "back": {"/console/dlq"}})
	require.Contains(t, resp.Header.Get("Location"), url.QueryEscape("Nothing purged: type purge"))
	resp, _ = s.post(b, "/console/dlq/purge", url.Values{"csrf": {csrf}, "scope": {"filter"}, "confirm": {"purge"}, "back": {"/console/dlq"}})
	require.Contains(t, resp.Header.Get("Location"), url.QueryEscape("needs a filter"), "not everything by accident")
	resp, _ = s.post(b, "/console/dlq/purge", url.Values{"csrf": {csrf}, "scope": {"filter"}, "stream": {"ORDERS"}, "confirm": {"purge"}, "back": {"/console/dlq"}})
	require.Contains(t, resp.Header.Get("Location"), url.QueryEscape("1 entry purged."))
	_, page = s.get(b, "/console/dlq")
	require.Contains(t, page, "No dead letters")

	var actions []string
	for _, e := range s.audit() {
		if e.Action != "signin" {
			require.Equal(t, s.adminID, e.Who)
			actions = append(actions, e.Action+" "+e.Target)
		}
	}
	require.Equal(t, []string{"dlq.redrive entries 1", "dlq.purge filter stream=ORDERS"}, actions)
}

// The flow page lists each stream and its consumers; its live stream sends
// snapshots with rates.
func TestTheFlowIsLive(t *testing.T) {
	t.Parallel()
	s := start(t, false)
	b := s.browser()
	s.signIn(b, s.admin)
	_, page := s.get(b, "/console/flow")
	require.Contains(t, page, `data-id="ORDERS/router"`)
	require.NotContains(t, page, "KV_api_keys", "buckets are storage, not flow")

	req, err := http.NewRequest(http.MethodGet, s.url+"/console/flow/live", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := b.Do(req.WithContext(ctx))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	buf := make([]byte, 64<<10)
	n, err := io.ReadAtLeast(resp.Body, buf, 20)
	require.NoError(t, err)
	require.Regexp(t, `^event: flow\ndata: \{"at":`, string(buf[:n]))

	// Without a session, the stream is refused rather than redirected.
	req.Header.Set("Cookie", "")
	resp2, err := s.browser().Do(req.WithContext(ctx))
	require.NoError(t, err)
	resp2.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp2.StatusCode)
}

// The Streams page shows what `herald streams apply --dry-run` reports.
func TestTheStreamsPageShowsDrift(t *testing.T) {
	t.Parallel()
	s := start(t, false)
	b := s.browser()
	s.signIn(b, s.admin)
	_, page := s.get(b, "/console/streams")
	require.Contains(t, page, "Everything matches its declaration.")

	ctx := heraldtest.Context(t)
	dlq, err := s.js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	cfg := dlq.CachedInfo().Config
	cfg.MaxAge = time.Hour
	_, err = s.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	_, page = s.get(b, "/console/streams")
	require.Contains(t, page, "1 declaration has drifted.")
	require.Contains(t, page, "<code>max_age: 1h0m0s → 720h0m0s</code>")
	require.Contains(t, page, "<code>streams/DLQ/stream.json</code>")
}

// An observer key signs in and sees every page, without the means to act;
// an action it posts anyway is refused and recorded.
func TestAnObserverLooksAndChangesNothing(t *testing.T) {
	t.Parallel()
	s := start(t, false)
	s.deadLetter(`{"specversion":"1.0","id":"evt-1"}`, "invalid event: source: is required")
	keys, err := apikey.Open(heraldtest.Context(t), s.js)
	require.NoError(t, err)
	observer, key, err := keys.Create(heraldtest.Context(t), apikey.Spec{Observer: true, Name: "support"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the authenticator's watch brings the new key
		resp, _ := s.post(s.browser(), "/console/signin", url.Values{"key": {observer}})
		return resp.StatusCode == http.StatusSeeOther
	}, 10*time.Second, 20*time.Millisecond)

	b := s.browser()
	csrf := s.signIn(b, observer)
	_, list := s.get(b, "/console/dlq")
	require.Contains(t, list, "(observer: read-only)")
	require.Contains(t, list, "invalid event: source: is required")
	require.NotContains(t, list, `name="seq"`)
	require.NotContains(t, list, "Purge")
	_, entry := s.get(b, "/console/dlq/1")
	require.NotContains(t, entry, "Redrive to")

	resp, page := s.post(b, "/console/dlq/redrive", url.Values{"csrf": {csrf}, "seq": {"1"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, page, "changes nothing")
	last := s.audit()[len(s.audit())-1]
	require.Equal(t, console.AuditEntry{Time: last.Time, Who: key.ID, Action: "refused", Target: "/console/dlq/redrive",
		Error: "an observer changes nothing"}, last)
	resp, _ = s.post(b, "/console/signout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "signing out is allowed")
}

// A provider skipped by some delivery process shows on the flow page.
func TestTheFlowShowsOpenCircuits(t *testing.T) {
	t.Parallel()
	s := start(t, false)
	b := s.browser()
	s.signIn(b, s.admin)
	_, page := s.get(b, "/console/flow")
	require.Contains(t, page, "Every circuit is closed")

	board, err := circuits.Open(heraldtest.Context(t), s.js, "worker-7", nil)
	require.NoError(t, err)
	board.Note("email", "ses", "open")
	board.Close()
	_, page = s.get(b, "/console/flow")
	require.Regexp(t, `<tr class="open"><td>email</td><td>ses</td><td>open</td><td>[^<]+ UTC</td><td>worker-7</td></tr>`, page)
}
