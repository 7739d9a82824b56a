package console_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
)

// The list names every tenant with its plan and this month's count per
// channel against the plan's quota, as herald tenants usage reads them.
func TestTheTenantsListShowsPlansAndThisMonthAgainstQuotas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := browse(t, b.url)
	br.signIn(t, b.admin)
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

	p := br.get(t, "/console/tenants")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `<a href="/console/tenants/acme">acme</a>`)
	require.Contains(t, p.body, "Acme Logistics")
	require.Regexp(t, `acme</a>.*?</th>\s*<td>free</td>`, oneLine(p.body), "acme's plan")
	require.Regexp(t, `</meter> 3 / 100<br><span class="problem">2 refused</span>`, p.body, "acme's email this month")
	require.Contains(t, p.body, `<a href="/console/tenants/globex">globex</a>`)
	require.Regexp(t, `globex</a></th>\s*<td>enterprise</td>\s*<td><span class="problem">suspended</span>`, p.body)
	require.Contains(t, p.body, `aria-current="page">Tenants</a>`)

	d := br.get(t, "/console/tenants/acme")
	require.Equal(t, http.StatusOK, d.status)
	require.Contains(t, d.body, "5 a minute, bursts of 5", "the free plan's rate")
	require.Regexp(t, `<th scope="row">email</th>\s*<td class="num"><meter[^>]*></meter> 3</td>\s*<td class="num">100</td>\s*<td class="num">97</td>\s*<td class="num"><span class="problem">2</span></td>`, d.body)
	require.Regexp(t, `<th scope="row">sms</th>\s*<td class="num">0</td>\s*<td class="num">none</td>`, d.body)
	require.Contains(t, d.body, "Herald does not store these", "rate-limit hits are said to be metrics only")
	require.Contains(t, d.body, "<dt>Share beside other tenants</dt><dd>weight 1</dd>", "the free plan's weight")
	g := br.get(t, "/console/tenants/globex")
	require.Contains(t, g.body, "<dt>Share beside other tenants</dt><dd>weight 4</dd>", "the enterprise plan's weight")

	require.Equal(t, http.StatusNotFound, br.get(t, "/console/tenants/initech").status)
}

// A key made in the console is shown once, on the answer to the form —
// not in a URL, not on the tenant's page after — and works at once; the
// audit log has its id, never its secret. Revoked, it opens nothing.
func TestAKeyIsShownOnceAuditedWithoutItsSecretAndRevoked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := browse(t, b.url)
	br.signIn(t, b.admin)
	b.register(t, tenant.Tenant{ID: "acme", Plan: "startup"})
	tp := br.get(t, "/console/tenants/acme")
	require.Equal(t, http.StatusOK, tp.status)

	made := br.post(t, "/console/tenants/acme/keys", url.Values{"csrf": {tp.csrf(t)}, "name": {"billing backend"}, "scope": {"send"}})
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

	again := br.get(t, "/console/tenants/acme")
	heraldtest.RequireNoSecret(t, again.body, "the tenant's page", secret)
	require.Regexp(t, `<code>`+id+`</code></th>\s*<td>billing backend</td>\s*<td>send</td>`, again.body)

	entries, raw := b.audit(t)
	e, ok := findAudit(entries, "key.create", id)
	require.True(t, ok, "key.create is audited with the key's id (actions: %v)", actions(entries))
	require.Equal(t, b.adminID, e.Who)
	require.Empty(t, e.Error)
	heraldtest.RequireNoSecret(t, raw, "the AUDIT stream", secret)

	confirm := br.get(t, "/console/tenants/acme/keys/"+id+"/revoke")
	require.Equal(t, http.StatusOK, confirm.status)
	require.Contains(t, confirm.body, "Revoke key "+id)
	revoked := br.post(t, "/console/tenants/acme/keys/"+id+"/revoke", url.Values{"csrf": {confirm.csrf(t)}, "confirm": {"revoke"}})
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
	b := setup(t)
	br := browse(t, b.url)
	br.signIn(t, b.admin)
	ctx := heraldtest.Context(t)
	b.register(t, tenant.Tenant{ID: "acme", Plan: "startup"})
	b.register(t, tenant.Tenant{ID: "globex", Plan: "startup"})
	plain, key, err := b.keys.Create(ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	csrf := br.get(t, "/console/tenants/acme").csrf(t)
	path := "/console/tenants/acme/keys/" + key.ID + "/revoke"

	for name, form := range map[string]url.Values{
		"no token":    {"confirm": {"revoke"}},
		"wrong token": {"confirm": {"revoke"}, "csrf": {strings.ToLower(csrf)}},
	} {
		p := br.post(t, path, form)
		require.Equal(t, http.StatusForbidden, p.status, name)
	}
	unconfirmed := br.post(t, path, url.Values{"csrf": {csrf}})
	require.Contains(t, unconfirmed.body, "Nothing revoked")
	elsewhere := br.post(t, "/console/tenants/globex/keys/"+key.ID+"/revoke", url.Values{"csrf": {csrf}, "confirm": {"revoke"}})
	require.Equal(t, http.StatusNotFound, elsewhere.status, "acme's key is not globex's to revoke")

	got, err := b.keys.Get(ctx, key.ID)
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
	b := setup(t)
	br := browse(t, b.url)
	br.signIn(t, b.admin)
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
	_, _, err = endpoints.Disable(ctx, "acme", e.ID, "the endpoint answered 410 Gone: "+hostile, "")
	require.NoError(t, err)
	providers, err := vault.Open(ctx, b.nats.JS, keyring)
	require.NoError(t, err)
	const sendgridKey = "SG.tenant-secret-0123456789-WXYZ"
	require.NoError(t, providers.Put(ctx, "acme", vault.Credential{Name: "acme-sg", Type: "sendgrid",
		APIKey: vault.NewSecret(sendgridKey), Endpoint: "https://sendgrid.example/" + hostile}))

	csrf := br.get(t, "/console/tenants/acme").csrf(t)
	made := br.post(t, "/console/tenants/acme/keys", url.Values{"csrf": {csrf}, "name": {hostile}, "scope": {"send", "read"}})
	require.Equal(t, http.StatusOK, made.status, made.body)

	for _, path := range []string{"/console/tenants", "/console/tenants/acme"} {
		p := br.get(t, path)
		require.Equal(t, http.StatusOK, p.status)
		require.NotContains(t, p.body, "<script>", path)
		require.NotContains(t, p.body, "<svg", path)
		require.Contains(t, p.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", path)
	}
	p := br.get(t, "/console/tenants/acme")
	require.Contains(t, p.body, "https://&#34;&gt;&lt;svg&gt;.example/…", "the endpoint, by its host")
	require.NotContains(t, p.body, "token=", "its path and query are not shown: they may hold a token")
	require.Regexp(t, `disabled [^<]+</span>: <span class="reason">the endpoint answered 410 Gone: &lt;script&gt;`, p.body)
	require.Contains(t, p.body, "<code>****WXYZ</code>", "the provider's secret, masked")
	heraldtest.RequireNoSecret(t, p.body, "the tenant's page", sendgridKey[:len(sendgridKey)-4])
}

// A session ends with the key it was opened with: once the key is revoked,
// as soon as the API refuses the key itself (the Authenticator's watch),
// its session opens no page and mints no key — it does not last out its
// 8 hours. What it minted before names it in the audit log.
func TestARevokedKeysSessionEndsWithIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := browse(t, b.url)
	br.signIn(t, b.admin)
	ctx := heraldtest.Context(t)
	b.register(t, tenant.Tenant{ID: "acme", Plan: "startup"})
	tp := br.get(t, "/console/tenants/acme")
	require.Equal(t, http.StatusOK, tp.status)
	csrf := tp.csrf(t)
	mint := url.Values{"csrf": {csrf}, "name": {"billing backend"}, "scope": {"send"}}
	made := br.post(t, "/console/tenants/acme/keys", mint)
	require.Equal(t, http.StatusOK, made.status, made.body)
	minted, err := apikey.Parse(regexp.MustCompile(`hk_[a-z2-7]+_[a-z2-7]+`).FindString(made.body))
	require.NoError(t, err)
	entries, _ := b.audit(t)
	e, ok := findAudit(entries, "key.create", minted)
	require.True(t, ok, "key.create is audited (actions: %v)", actions(entries))
	require.Equal(t, b.adminID, e.Who, "a key minted through a session names the session's key")

	before, err := b.keys.List(ctx, "acme")
	require.NoError(t, err)
	require.NoError(t, b.keys.Revoke(ctx, b.adminID))
	require.Eventually(t, func() bool { // within the seconds the API takes to refuse the key itself
		return br.get(t, "/console/tenants/acme").path != "/console/tenants/acme"
	}, 5*time.Second, 20*time.Millisecond, "the revoked key's session still opens the tenant's page")
	for _, path := range []string{"/console/tenants/acme", "/console/tenants", "/console/dlq"} {
		p := br.get(t, path)
		require.Equal(t, http.StatusOK, p.status, path)
		require.Equal(t, "/console/signin?next="+url.QueryEscape(path), p.path, "%s: to sign in again", path)
	}
	refused := br.post(t, "/console/tenants/acme/keys", mint)
	require.Equal(t, http.StatusUnauthorized, refused.status, refused.body)
	after, err := b.keys.List(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, before, after, "no key minted after the revocation")
}

// The flow's live stream, open when the session's key is revoked, ends
// with the session: it does not go on showing the flow for hours.
func TestARevokedKeysLiveStreamEnds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := browse(t, b.url)
	br.signIn(t, b.admin)
	ctx, cancel := context.WithTimeout(heraldtest.Context(t), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/console/flow/live", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := br.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	first := make([]byte, 20)
	_, err = io.ReadFull(resp.Body, first)
	require.NoError(t, err)
	require.Equal(t, "event: flow\ndata: {", string(first[:19]))

	require.NoError(t, b.keys.Revoke(ctx, b.adminID))
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err, "the stream ends (and does not run into the test's deadline)")
}

// Keys that cannot be checked (the Authenticator no longer follows them)
// leave a session neither open nor ended: 503, to come back to, not a
// sign-in the operator could not complete either.
func TestASessionWhoseKeyCannotBeCheckedIsA503(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := browse(t, b.url)
	br.signIn(t, b.admin)
	b.auth.Stop()
	p := br.get(t, "/console/tenants")
	require.Equal(t, http.StatusServiceUnavailable, p.status, p.body)
	require.Equal(t, "/console/tenants", p.path)
	require.Contains(t, p.body, "Sessions cannot be checked right now.")
}
