package console_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api/console"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/circuits"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// Without a session every page sends the browser to sign in, and back to
// the page after; a tenant's key and a wrong key do not open a session.
func TestOnlyAnAdminKeySignsIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := stepwise(t, b.url)
	p := br.get(t, "/console/dlq?tenant=acme")
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/console/signin?next=%2Fconsole%2Fdlq%3Ftenant%3Dacme", p.header.Get("Location"))

	p = br.post(t, "/console/signin", url.Values{"key": {b.tenant}})
	require.Equal(t, http.StatusForbidden, p.status)
	require.Contains(t, p.body, "that key is a tenant&#39;s")
	require.Empty(t, p.cookies())
	p = br.post(t, "/console/signin", url.Values{"key": {"hk_nope_nope"}})
	require.Equal(t, http.StatusUnauthorized, p.status)
	require.Contains(t, p.body, "That key opens nothing")
	require.NotContains(t, p.body, "hk_nope_nope", "the key is not repeated")

	p = br.post(t, "/console/signin", url.Values{"key": {b.admin}, "next": {"https://evil.example/"}})
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/console/", p.header.Get("Location"), "never sent to another site")
	ck := p.cookies()[0]
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	require.Equal(t, "/console/", ck.Path)
	require.False(t, ck.Secure, "dev's plain http")
	require.NotContains(t, ck.Value, b.admin)
	require.Equal(t, http.StatusOK, br.get(t, "/console/dlq").status)

	entries, _ := b.audit(t)
	var done []string
	for _, e := range entries {
		done = append(done, e.Action+" "+e.Who+" "+e.Error)
		require.NotContains(t, e.Who+e.Target+e.Error, b.admin)
	}
	tenantID, _ := apikey.Parse(b.tenant)
	require.Equal(t, []string{"signin " + tenantID + " not an admin key", "signin  invalid key", "signin " + b.adminID + " "}, done)
}

// Signing in from another site is refused (login CSRF: a page elsewhere
// signing the operator's browser into a session of its choosing), and so
// is an opaque Origin ("null") unless the browser also says the request is
// the console's own (Sec-Fetch-Site: same-origin).
func TestSignInIsRefusedFromAnotherSite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, headers := range map[string][]string{
		"another site":             {"Origin", "https://evil.example"},
		"another port":             {"Origin", "http://127.0.0.1:1"},
		"null, no Sec-Fetch-Site":  {"Origin", "null"},
		"null, from another site":  {"Origin", "null", "Sec-Fetch-Site", "cross-site"},
		"null, from the same site": {"Origin", "null", "Sec-Fetch-Site", "same-site"},
	} {
		p := stepwise(t, b.url).post(t, "/console/signin", url.Values{"key": {b.admin}}, headers...)
		require.Equal(t, http.StatusForbidden, p.status, name)
		require.Contains(t, p.body, "This request came from another site.", name)
		require.Empty(t, p.cookies(), "%s: no session", name)
	}
	entries, _ := b.audit(t)
	require.Empty(t, entries, "the key was not even tried")

	for name, headers := range map[string][]string{
		"its own origin":       {"Origin", b.url},
		"null, its own origin": {"Origin", "null", "Sec-Fetch-Site", "same-origin"},
		"no Origin":            {},
	} {
		p := stepwise(t, b.url).post(t, "/console/signin", url.Values{"key": {b.admin}}, headers...)
		require.Equal(t, http.StatusSeeOther, p.status, name)
		require.Len(t, p.cookies(), 1, name)
	}
}

func TestTheSessionCookieIsSecureOutsideDev(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := stepwise(t, b.serve(t, console.Config{Secure: true})).post(t, "/console/signin", url.Values{"key": {b.admin}})
	require.True(t, p.cookies()[0].Secure)
}

// A state change needs the session's CSRF token and the console's own
// origin; a session ends when it expires or its operator signs out.
func TestActionsNeedTheSessionsTokenAndOrigin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := stepwise(t, b.url)
	csrf := br.signIn(t, b.admin)

	p := br.post(t, "/console/dlq/purge", url.Values{"seq": {"1"}, "confirm": {"purge"}})
	require.Equal(t, http.StatusForbidden, p.status, "no token")
	p = br.post(t, "/console/dlq/purge", url.Values{"seq": {"1"}, "confirm": {"purge"}, "csrf": {csrf + "x"}})
	require.Equal(t, http.StatusForbidden, p.status, "another token")
	p = br.post(t, "/console/dlq/purge", url.Values{"seq": {"1"}, "confirm": {"purge"}, "csrf": {csrf}}, "Origin", "https://evil.example")
	require.Equal(t, http.StatusForbidden, p.status, "another site")
	p = br.post(t, "/console/dlq/purge", url.Values{"seq": {"1"}, "confirm": {"purge"}, "csrf": {csrf}, "back": {"/console/dlq"}}, "Origin", b.url)
	require.Equal(t, http.StatusSeeOther, p.status)

	// Another browser with this session's token but not its cookie.
	p = stepwise(t, b.url).post(t, "/console/dlq/purge", url.Values{"seq": {"1"}, "confirm": {"purge"}, "csrf": {csrf}})
	require.Equal(t, http.StatusUnauthorized, p.status)

	b.clock.Add(9 * time.Hour) // past the 8 h a session lasts
	require.Equal(t, http.StatusSeeOther, br.get(t, "/console/dlq").status, "expired: sign in again")
	b.clock.Add(-9 * time.Hour)
	p = br.post(t, "/console/signout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, p.status)
	b.clock.Add(time.Minute)
	require.Equal(t, http.StatusSeeOther, br.get(t, "/console/dlq").status, "signed out")
}

// What a publisher wrote — payload, headers, the reason quoting it — is
// shown as text, never run.
func TestHostileDeadLettersStayText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deadLetter(t, `{"id":"<script>alert(1)</script>","x":"<img src=x onerror=alert(2)>"}`, `invalid event: id: "<script>alert(1)</script>" is not an id`)
	br := stepwise(t, b.url)
	br.signIn(t, b.admin)
	list := br.get(t, "/console/dlq").body
	entry := br.get(t, "/console/dlq/1")
	for _, page := range []string{list, entry.body} {
		require.NotContains(t, page, "<script>alert")
		require.NotContains(t, page, "<img src=x")
		require.NotContains(t, page, "<script>window")
		require.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
	}
	require.Contains(t, entry.body, "&#34;&gt;&lt;script&gt;window.__pwned=1&lt;/script&gt;", "a header's value")
	require.Contains(t, entry.body, "&#34;x&#34;: &#34;&lt;img src=x onerror=alert(2)&gt;&#34;", "the payload, indented")
	require.Contains(t, entry.header.Get("Content-Security-Policy"), "script-src 'self'", "and the browser runs no inline script anyway")
}

// Redriving the ticked entries republishes them and records who did it;
// purging needs the word typed.
func TestRedriveAndPurgeFromTheDLQPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deadLetter(t, `{"specversion":"1.0","id":"evt-1"}`, "invalid event: source: is required")
	br := stepwise(t, b.url)
	csrf := br.signIn(t, b.admin)
	ctx := context.Background()

	p := br.post(t, "/console/dlq/redrive", url.Values{"csrf": {csrf}, "seq": {"1"}, "back": {"/console/dlq"}})
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/console/dlq?done="+url.QueryEscape("1 entry redriven."), p.header.Get("Location"))
	orders, err := b.nats.JS.Stream(ctx, "ORDERS")
	require.NoError(t, err)
	info, err := orders.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, info.State.Msgs, "back on orders.created")
	require.Contains(t, br.get(t, "/console/dlq").body, "1×", "marked redriven")

	p = br.post(t, "/console/dlq/purge", url.Values{"csrf": {csrf}, "seq": {"1"}, "back": {"/console/dlq"}})
	require.Contains(t, p.header.Get("Location"), url.QueryEscape("Nothing purged: type purge"))
	p = br.post(t, "/console/dlq/purge", url.Values{"csrf": {csrf}, "scope": {"filter"}, "confirm": {"purge"}, "back": {"/console/dlq"}})
	require.Contains(t, p.header.Get("Location"), url.QueryEscape("needs a filter"), "not everything by accident")
	p = br.post(t, "/console/dlq/purge", url.Values{"csrf": {csrf}, "scope": {"filter"}, "stream": {"ORDERS"}, "confirm": {"purge"}, "back": {"/console/dlq"}})
	require.Contains(t, p.header.Get("Location"), url.QueryEscape("1 entry purged."))
	require.Contains(t, br.get(t, "/console/dlq").body, "No dead letters")

	entries, _ := b.audit(t)
	var done []string
	for _, e := range entries {
		if e.Action != "signin" {
			require.Equal(t, b.adminID, e.Who)
			done = append(done, e.Action+" "+e.Target)
		}
	}
	require.Equal(t, []string{"dlq.redrive entries 1", "dlq.purge filter stream=ORDERS"}, done)
}

// The flow page lists each stream and its consumers; its live stream sends
// snapshots with rates.
func TestTheFlowIsLive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := stepwise(t, b.url)
	br.signIn(t, b.admin)
	page := br.get(t, "/console/flow").body
	require.Contains(t, page, `data-id="ORDERS/router"`)
	require.NotContains(t, page, "KV_api_keys", "buckets are storage, not flow")

	req, err := http.NewRequest(http.MethodGet, b.url+"/console/flow/live", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := br.client.Do(req.WithContext(ctx))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	buf := make([]byte, 64<<10)
	n, err := io.ReadAtLeast(resp.Body, buf, 20)
	require.NoError(t, err)
	require.Regexp(t, `^event: flow\ndata: \{"at":`, string(buf[:n]))

	// Without a session, the stream is refused rather than redirected.
	req.Header.Set("Cookie", "")
	resp2, err := stepwise(t, b.url).client.Do(req.WithContext(ctx))
	require.NoError(t, err)
	resp2.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp2.StatusCode)
}

// The Streams page shows what `herald streams apply --dry-run` reports.
func TestTheStreamsPageShowsDrift(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := stepwise(t, b.url)
	br.signIn(t, b.admin)
	require.Contains(t, br.get(t, "/console/streams").body, "Everything matches its declaration.")

	ctx := heraldtest.Context(t)
	dlq, err := b.nats.JS.Stream(ctx, "DLQ")
	require.NoError(t, err)
	cfg := dlq.CachedInfo().Config
	cfg.MaxAge = time.Hour
	_, err = b.nats.JS.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	page := br.get(t, "/console/streams").body
	require.Contains(t, page, "1 declaration has drifted.")
	require.Contains(t, page, "<code>max_age: 1h0m0s → 720h0m0s</code>")
	require.Contains(t, page, "<code>streams/DLQ/stream.json</code>")
}

// An observer key signs in and sees every page, without the means to act;
// an action it posts anyway is refused and recorded.
func TestAnObserverLooksAndChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deadLetter(t, `{"specversion":"1.0","id":"evt-1"}`, "invalid event: source: is required")
	observer, key, err := b.keys.Create(heraldtest.Context(t), apikey.Spec{Observer: true, Name: "support"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the authenticator's watch brings the new key
		return stepwise(t, b.url).post(t, "/console/signin", url.Values{"key": {observer}}).status == http.StatusSeeOther
	}, 10*time.Second, 20*time.Millisecond)

	br := stepwise(t, b.url)
	csrf := br.signIn(t, observer)
	list := br.get(t, "/console/dlq").body
	require.Contains(t, list, "(observer: read-only)")
	require.Contains(t, list, "invalid event: source: is required")
	require.NotContains(t, list, `name="seq"`)
	require.NotContains(t, list, "Purge")
	require.NotContains(t, br.get(t, "/console/dlq/1").body, "Redrive to")

	p := br.post(t, "/console/dlq/redrive", url.Values{"csrf": {csrf}, "seq": {"1"}})
	require.Equal(t, http.StatusForbidden, p.status)
	require.Contains(t, p.body, "changes nothing")
	entries, _ := b.audit(t)
	last := entries[len(entries)-1]
	require.Equal(t, console.AuditEntry{Time: last.Time, Who: key.ID, Action: "refused", Target: "/console/dlq/redrive",
		Error: "an observer changes nothing"}, last)
	p = br.post(t, "/console/signout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, p.status, "signing out is allowed")
}

// A provider skipped by some delivery process shows on the flow page.
func TestTheFlowShowsOpenCircuits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := stepwise(t, b.url)
	br.signIn(t, b.admin)
	require.Contains(t, br.get(t, "/console/flow").body, "Every circuit is closed")

	board, err := circuits.Open(heraldtest.Context(t), b.nats.JS, "worker-7", nil)
	require.NoError(t, err)
	board.Note("email", "ses", "open")
	board.Close()
	require.Regexp(t, `<tr class="open"><td>email</td><td>ses</td><td>open</td><td>[^<]+ UTC</td><td>worker-7</td></tr>`,
		br.get(t, "/console/flow").body)
}
