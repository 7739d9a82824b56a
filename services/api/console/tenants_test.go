package console_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/api/console"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
)

// tenantsBundle is a console on a real NATS with Herald's streams, its
// operator signed in through the real sign-in form with a stored admin
// key, and the stores the tests arrange tenants in.
type tenantsBundle struct {
	nats     *heraldtest.NATS
	url      string
	client   *http.Client
	auth     *apikey.Authenticator
	registry *tenant.Registry
	adminID  string
}

func setupTenants(t *testing.T) *tenantsBundle {
	t.Helper()
	ctx := heraldtest.Context(t)
	n := heraldtest.StartNATSWithStreams(t)
	keys, err := apikey.Open(ctx, n.JS)
	require.NoError(t, err)
	admin, adminKey, err := keys.Create(ctx, apikey.Spec{Admin: true, Name: "operator"})
	require.NoError(t, err)
	auth, err := apikey.NewAuthenticator(keys, apikey.AuthConfig{})
	require.NoError(t, err)
	require.NoError(t, auth.Start(ctx))
	t.Cleanup(auth.Stop)

	c, err := console.New(n.JS, console.Config{Keys: api.StoredKeys{Keys: auth}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	registry, err := tenant.Open(ctx, n.JS, tenant.BuiltinPlans())
	require.NoError(t, err)

	b := &tenantsBundle{nats: n, url: srv.URL, client: heraldtest.HTTPClient(t), auth: auth, registry: registry, adminID: adminKey.ID}
	b.client.Jar, err = cookiejar.New(nil)
	require.NoError(t, err)
	resp := b.post(t, "/console/signin", url.Values{"key": {admin}, "next": {"/console/tenants"}})
	require.Equal(t, http.StatusOK, resp.status, resp.body)
	require.Equal(t, "/console/tenants", resp.path, "signed in, to the tenants")
	return b
}

// page is an answer, redirects followed, its body read.
type page struct {
	status int
	header http.Header
	path   string
	body   string
}

func (b *tenantsBundle) get(t *testing.T, path string) page {
	t.Helper()
	resp, err := b.client.Get(b.url + path)
	require.NoError(t, err)
	return read(t, resp)
}

func (b *tenantsBundle) post(t *testing.T, path string, form url.Values) page {
	t.Helper()
	resp, err := b.client.PostForm(b.url+path, form)
	require.NoError(t, err)
	return read(t, resp)
}

func read(t *testing.T, resp *http.Response) page {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return page{status: resp.StatusCode, header: resp.Header, path: resp.Request.URL.RequestURI(), body: string(body)}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the session's token, as the page's forms carry it.
func (p page) csrf(t *testing.T) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	require.NotNil(t, m, "the page has a form with the CSRF token")
	return m[1]
}

// register adds a tenant to the registry.
func (b *tenantsBundle) register(t *testing.T, tn tenant.Tenant) {
	t.Helper()
	_, err := b.registry.Create(heraldtest.Context(t), tn)
	require.NoError(t, err)
}

// audit is every entry the console wrote to the AUDIT stream, and the
// stream's bytes whole.
func (b *tenantsBundle) audit(t *testing.T) ([]console.AuditEntry, string) {
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

// The list names every tenant with its plan and this month's count per
// channel against the plan's quota, as herald tenants usage reads them.
func TestTheTenantsListShowsPlansAndThisMonthAgainstQuotas(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	ctx := heraldtest.Context(t)
	b.register(t, tenant.Tenant{ID: "acme", Name: "Acme Logistics", Plan: "free"})
	b.register(t, tenant.Tenant{ID: "globex", Plan: "enterprise", Status: tenant.Suspended})
	counter := quota.New(b.nats.JS)
	month := quota.Month(time.Now())
	for range 3 {
		_, err := counter.Count(ctx, quota.Key{Tenant: "acme", Channel: event.ChannelEmail, Month: month}, quota.Limit{PerMonth: 100, Limited: true})
		require.NoError(t, err)
	}
	_, err := counter.Add(ctx, quota.Key{Tenant: "acme", Channel: event.ChannelEmail, Month: month}.RefusedSubject(), 2, "")
	require.NoError(t, err)

	p := b.get(t, "/console/tenants")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `<a href="/console/tenants/acme">acme</a>`)
	require.Contains(t, p.body, "Acme Logistics")
	require.Regexp(t, `acme</a>.*?</th>\s*<td>free</td>`, oneLine(p.body), "acme's plan")
	require.Regexp(t, `</meter> 3 / 100<br><span class="problem">2 refused</span>`, p.body, "acme's email this month")
	require.Contains(t, p.body, `<a href="/console/tenants/globex">globex</a>`)
	require.Regexp(t, `globex</a></th>\s*<td>enterprise</td>\s*<td><span class="problem">suspended</span>`, p.body)
	require.Contains(t, p.body, `aria-current="page">Tenants</a>`)

	d := b.get(t, "/console/tenants/acme")
	require.Equal(t, http.StatusOK, d.status)
	require.Contains(t, d.body, "5 a minute, bursts of 5", "the free plan's rate")
	require.Regexp(t, `<th scope="row">email</th>\s*<td class="num"><meter[^>]*></meter> 3</td>\s*<td class="num">100</td>\s*<td class="num">97</td>\s*<td class="num"><span class="problem">2</span></td>`, d.body)
	require.Regexp(t, `<th scope="row">sms</th>\s*<td class="num">0</td>\s*<td class="num">none</td>`, d.body)
	require.Contains(t, d.body, "Herald does not store these", "rate-limit hits are said to be metrics only")

	require.Equal(t, http.StatusNotFound, b.get(t, "/console/tenants/initech").status)
}

// A key made in the console is shown once, on the answer to the form —
// not in a URL, not on the tenant's page after — and works at once; the
// audit log has its id, never its secret. Revoked, it opens nothing.
func TestAKeyIsShownOnceAuditedWithoutItsSecretAndRevoked(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	b.register(t, tenant.Tenant{ID: "acme", Plan: "startup"})
	tp := b.get(t, "/console/tenants/acme")
	require.Equal(t, http.StatusOK, tp.status)

	made := b.post(t, "/console/tenants/acme/keys", url.Values{"csrf": {tp.csrf(t)}, "name": {"billing backend"}, "scope": {"send"}})
	require.Equal(t, http.StatusOK, made.status, made.body)
	require.Equal(t, "/console/tenants/acme/keys", made.path, "the key is the answer itself, not a redirect")
	require.Equal(t, "no-store", made.header.Get("Cache-Control"))
	plain := regexp.MustCompile(`hk_[a-z2-7]+_[a-z2-7]+`).FindString(made.body)
	require.NotEmpty(t, plain, "the key is shown")
	id, err := apikey.Parse(plain)
	require.NoError(t, err)
	secret := strings.TrimPrefix(plain, "hk_"+id+"_")
	require.Contains(t, made.body, "only time it is shown")

	require.Eventually(t, func() bool {
		k, err := b.auth.Authenticate(heraldtest.Context(t), plain)
		return err == nil && k.ID == id && k.Tenant == "acme" && k.Allows(apikey.Send) && !k.Allows(apikey.Read)
	}, 5*time.Second, 20*time.Millisecond, "the new key authenticates, as acme's, send only")

	again := b.get(t, "/console/tenants/acme")
	heraldtest.RequireNoSecret(t, again.body, "the tenant's page", secret)
	require.Regexp(t, `<code>`+id+`</code></th>\s*<td>billing backend</td>\s*<td>send</td>`, again.body)

	entries, raw := b.audit(t)
	e, ok := findAudit(entries, "key.create", id)
	require.True(t, ok, "key.create is audited with the key's id (actions: %v)", actions(entries))
	require.Equal(t, b.adminID, e.Who)
	require.Empty(t, e.Error)
	heraldtest.RequireNoSecret(t, raw, "the AUDIT stream", secret)

	confirm := b.get(t, "/console/tenants/acme/keys/"+id+"/revoke")
	require.Equal(t, http.StatusOK, confirm.status)
	require.Contains(t, confirm.body, "Revoke key "+id)
	revoked := b.post(t, "/console/tenants/acme/keys/"+id+"/revoke", url.Values{"csrf": {confirm.csrf(t)}, "confirm": {"revoke"}})
	require.Equal(t, http.StatusOK, revoked.status, revoked.body)
	require.True(t, strings.HasPrefix(revoked.path, "/console/tenants/acme?"), revoked.path)
	require.Contains(t, revoked.body, "Key "+id+" revoked")
	require.Eventually(t, func() bool {
		_, err := b.auth.Authenticate(heraldtest.Context(t), plain)
		return errors.Is(err, apikey.ErrUnauthorized)
	}, 5*time.Second, 20*time.Millisecond, "the revoked key opens nothing")

	entries, raw = b.audit(t)
	e, ok = findAudit(entries, "key.revoke", id)
	require.True(t, ok, "key.revoke is audited (actions: %v)", actions(entries))
	require.Equal(t, b.adminID, e.Who)
	heraldtest.RequireNoSecret(t, raw, "the AUDIT stream", secret)
}

// Revoking needs the session's CSRF token and the confirmation; a key is
// revoked from its own tenant's page only.
func TestRevokingNeedsTheFormsTokenAndAConfirmation(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	ctx := heraldtest.Context(t)
	b.register(t, tenant.Tenant{ID: "acme", Plan: "startup"})
	b.register(t, tenant.Tenant{ID: "globex", Plan: "startup"})
	keys, err := apikey.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	plain, key, err := keys.Create(ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	csrf := b.get(t, "/console/tenants/acme").csrf(t)
	path := "/console/tenants/acme/keys/" + key.ID + "/revoke"

	for name, form := range map[string]url.Values{
		"no token":    {"confirm": {"revoke"}},
		"wrong token": {"confirm": {"revoke"}, "csrf": {strings.ToLower(csrf)}},
	} {
		p := b.post(t, path, form)
		require.Equal(t, http.StatusForbidden, p.status, name)
	}
	unconfirmed := b.post(t, path, url.Values{"csrf": {csrf}})
	require.Contains(t, unconfirmed.body, "Nothing revoked")
	elsewhere := b.post(t, "/console/tenants/globex/keys/"+key.ID+"/revoke", url.Values{"csrf": {csrf}, "confirm": {"revoke"}})
	require.Equal(t, http.StatusNotFound, elsewhere.status, "acme's key is not globex's to revoke")

	got, err := keys.Get(ctx, key.ID)
	require.NoError(t, err)
	require.True(t, got.Revoked.IsZero(), "still not revoked")
	_, err = b.auth.Authenticate(ctx, plain)
	require.NoError(t, err)
	entries, _ := b.audit(t)
	_, audited := findAudit(entries, "key.revoke", key.ID)
	require.False(t, audited, "nothing revoked, nothing audited")
}

// What tenants chose — names, key names, endpoint URLs and descriptions,
// provider settings — is shown as text, never as markup; a provider's
// secret only masked.
func TestWhatTenantsChoseStaysText(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	ctx := heraldtest.Context(t)
	const hostile = `<script>alert("x")</script>`
	b.register(t, tenant.Tenant{ID: "acme", Name: hostile, Plan: "startup"})

	raw := make([]byte, vault.KeySize)
	_, _ = rand.Read(raw)
	mk, err := vault.ParseKey(raw)
	require.NoError(t, err)
	keyring, err := vault.NewKeyring(mk)
	require.NoError(t, err)
	endpoints, err := webhooks.Open(ctx, b.nats.JS, keyring)
	require.NoError(t, err)
	e, _, err := endpoints.Create(ctx, "acme", webhooks.New{URL: `https://"><svg>.example/hook?token=` + hostile,
		Description: hostile})
	require.NoError(t, err)
	_, _, err = endpoints.Disable(ctx, "acme", e.ID, "the endpoint answered 410 Gone: "+hostile)
	require.NoError(t, err)
	providers, err := vault.Open(ctx, b.nats.JS, keyring)
	require.NoError(t, err)
	const sendgridKey = "SG.tenant-secret-0123456789-WXYZ"
	require.NoError(t, providers.Put(ctx, "acme", vault.Credential{Name: "acme-sg", Type: "sendgrid",
		APIKey: vault.NewSecret(sendgridKey), Endpoint: "https://sendgrid.example/" + hostile}))

	csrf := b.get(t, "/console/tenants/acme").csrf(t)
	made := b.post(t, "/console/tenants/acme/keys", url.Values{"csrf": {csrf}, "name": {hostile}, "scope": {"send", "read"}})
	require.Equal(t, http.StatusOK, made.status, made.body)

	for _, path := range []string{"/console/tenants", "/console/tenants/acme"} {
		p := b.get(t, path)
		require.Equal(t, http.StatusOK, p.status)
		require.NotContains(t, p.body, "<script>", path)
		require.NotContains(t, p.body, "<svg", path)
		require.Contains(t, p.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", path)
	}
	p := b.get(t, "/console/tenants/acme")
	require.Contains(t, p.body, "https://&#34;&gt;&lt;svg&gt;.example/…", "the endpoint, by its host")
	require.NotContains(t, p.body, "token=", "its path and query are not shown: they may hold a token")
	require.Regexp(t, `disabled [^<]+</span>: <span class="reason">the endpoint answered 410 Gone: &lt;script&gt;`, p.body)
	require.Contains(t, p.body, "<code>****WXYZ</code>", "the provider's secret, masked")
	heraldtest.RequireNoSecret(t, p.body, "the tenant's page", sendgridKey[:len(sendgridKey)-4])
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

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// A session ends with the key it was opened with: once the key is revoked,
// as soon as the API refuses the key itself (the Authenticator's watch),
// its session opens no page and mints no key — it does not last out its
// 8 hours. What it minted before names it in the audit log.
func TestARevokedKeysSessionEndsWithIt(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	ctx := heraldtest.Context(t)
	b.register(t, tenant.Tenant{ID: "acme", Plan: "startup"})
	tp := b.get(t, "/console/tenants/acme")
	require.Equal(t, http.StatusOK, tp.status)
	csrf := tp.csrf(t)
	mint := url.Values{"csrf": {csrf}, "name": {"billing backend"}, "scope": {"send"}}
	made := b.post(t, "/console/tenants/acme/keys", mint)
	require.Equal(t, http.StatusOK, made.status, made.body)
	minted, err := apikey.Parse(regexp.MustCompile(`hk_[a-z2-7]+_[a-z2-7]+`).FindString(made.body))
	require.NoError(t, err)
	entries, _ := b.audit(t)
	e, ok := findAudit(entries, "key.create", minted)
	require.True(t, ok, "key.create is audited (actions: %v)", actions(entries))
	require.Equal(t, b.adminID, e.Who, "a key minted through a session names the session's key")

	keys, err := apikey.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	require.NoError(t, keys.Revoke(ctx, b.adminID))
	require.Eventually(t, func() bool { // within the seconds the API takes to refuse the key itself
		return b.get(t, "/console/tenants/acme").path != "/console/tenants/acme"
	}, 5*time.Second, 20*time.Millisecond, "the revoked key's session still opens the tenant's page")
	for _, path := range []string{"/console/tenants/acme", "/console/tenants", "/console/dlq"} {
		p := b.get(t, path)
		require.Equal(t, http.StatusOK, p.status, path)
		require.Equal(t, "/console/signin?next="+url.QueryEscape(path), p.path, "%s: to sign in again", path)
	}
	refused := b.post(t, "/console/tenants/acme/keys", mint)
	require.Equal(t, http.StatusUnauthorized, refused.status, refused.body)
	list, err := keys.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 1, "no key minted after the revocation")
	require.Equal(t, minted, list[0].ID)
}

// The flow's live stream, open when the session's key is revoked, ends
// with the session: it does not go on showing the flow for hours.
func TestARevokedKeysLiveStreamEnds(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	ctx, cancel := context.WithTimeout(heraldtest.Context(t), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/console/flow/live", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	first := make([]byte, 20)
	_, err = io.ReadFull(resp.Body, first)
	require.NoError(t, err)
	require.Equal(t, "event: flow\ndata: {", string(first[:19]))

	keys, err := apikey.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	require.NoError(t, keys.Revoke(ctx, b.adminID))
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err, "the stream ends (and does not run into the test's deadline)")
}

// Keys that cannot be checked (the Authenticator no longer follows them)
// leave a session neither open nor ended: 503, to come back to, not a
// sign-in the operator could not complete either.
func TestASessionWhoseKeyCannotBeCheckedIsA503(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	b.auth.Stop()
	p := b.get(t, "/console/tenants")
	require.Equal(t, http.StatusServiceUnavailable, p.status, p.body)
	require.Equal(t, "/console/tenants", p.path)
	require.Contains(t, p.body, "Sessions cannot be checked right now.")
}
