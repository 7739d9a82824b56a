package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/inbox"
	"github.com/heraldhq/herald/shared/notification"
)

const acmePage = "https://app.acme.example"

type inboxBundle struct {
	*bundle
	store  *inbox.Store
	tokens *inbox.Tokens
}

// inboxSetup serves the API with the inbox on, acme (its page allowed) and
// globex registered.
func inboxSetup(t *testing.T, cfg api.Config) inboxBundle {
	t.Helper()
	tokens, err := inbox.NewTokens(bytes.Repeat([]byte("s"), 32))
	require.NoError(t, err)
	cfg.InboxTokens = tokens
	b := setup(t, cfg)
	store, err := inbox.Open(t.Context(), b.nats.JS)
	require.NoError(t, err)
	for _, body := range []string{`{"id":"acme","plan":"startup","inbox_origins":["` + acmePage + `","http://localhost:3000"]}`,
		`{"id":"globex","plan":"startup"}`} {
		a := b.sendJSON(t, http.MethodPost, "/v1/tenants", adminKey, body)
		require.Equal(t, http.StatusCreated, a.status, a.body)
	}
	return inboxBundle{bundle: b, store: store, tokens: tokens}
}

// mint is a subscriber token minted over the API with key.
func (b inboxBundle) mint(t *testing.T, key, sub string) string {
	t.Helper()
	a := b.sendJSON(t, http.MethodPost, "/v1/inbox/tokens", key, `{"subscriber":"`+sub+`"}`)
	require.Equal(t, http.StatusOK, a.status, a.body)
	var tok api.InboxToken
	require.NoError(t, json.Unmarshal([]byte(a.body), &tok))
	return tok.Token
}

func (b inboxBundle) add(t *testing.T, tenant, sub string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		_, fresh, err := b.store.Add(t.Context(), tenant, sub, inboxItem(i), inbox.Limits{})
		require.NoError(t, err)
		require.True(t, fresh)
	}
}

func inboxItem(i int) inbox.Item {
	return inbox.Item{ID: fmt.Sprintf("n%03d", i), Notification: fmt.Sprintf("not-%d", i), Title: fmt.Sprintf("PO-%d shipped", i),
		Body: "on its way", ActionURL: "https://app.acme.example/po/" + fmt.Sprint(i),
		CreatedAt: time.Now().Add(-time.Hour).Truncate(time.Hour).Add(time.Duration(i) * time.Second)}
}

func itemIDs(t *testing.T, body string) []string {
	t.Helper()
	var p api.InboxPage
	require.NoError(t, json.Unmarshal([]byte(body), &p))
	ids := []string{}
	for _, it := range p.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

func TestInboxTokenOpensOneSubscribersInbox(t *testing.T) {
	t.Parallel()
	b := inboxSetup(t, api.Config{})
	b.add(t, "acme", "ana", 0, 3)
	b.add(t, "acme", "bob", 10, 11)
	ana, bob := b.mint(t, acmeSend, "ana"), b.mint(t, acmeSend, "bob")

	page := b.do(t, http.MethodGet, "/v1/inbox/items?limit=2", ana, nil)
	require.Equal(t, http.StatusOK, page.status, page.body)
	require.Equal(t, []string{"n002", "n001"}, itemIDs(t, page.body))
	require.Contains(t, page.body, `"action_url":"https://app.acme.example/po/2"`)
	next := b.do(t, http.MethodGet, "/v1/inbox/items?limit=2&cursor="+jsonString(t, page.body, "next_cursor"), ana, nil)
	require.Equal(t, []string{"n000"}, itemIDs(t, next.body))
	require.NotContains(t, next.body, "next_cursor")

	counts := b.do(t, http.MethodGet, "/v1/inbox/counts", ana, nil)
	require.JSONEq(t, `{"unseen":3,"unread":3,"total":3}`, counts.body)
	read := b.do(t, http.MethodPost, "/v1/inbox/items/n001/read", ana, nil)
	require.Equal(t, http.StatusOK, read.status, read.body)
	require.Contains(t, read.body, `"read_at"`)
	seen := b.do(t, http.MethodPost, "/v1/inbox/items/n002/seen", ana, nil)
	require.Equal(t, http.StatusOK, seen.status, seen.body)
	archived := b.do(t, http.MethodPost, "/v1/inbox/items/n000/archive", ana, nil)
	require.Equal(t, http.StatusOK, archived.status, archived.body)
	require.JSONEq(t, `{"unseen":0,"unread":1,"total":2}`, b.do(t, http.MethodGet, "/v1/inbox/counts", ana, nil).body)
	require.Equal(t, []string{"n000"}, itemIDs(t, b.do(t, http.MethodGet, "/v1/inbox/items?state=archived", ana, nil).body))
	require.Equal(t, []string{"n002"}, itemIDs(t, b.do(t, http.MethodGet, "/v1/inbox/items?state=unread", ana, nil).body))
	all := b.do(t, http.MethodPost, "/v1/inbox/read-all", ana, nil)
	require.JSONEq(t, `{"read":1}`, all.body)
	require.JSONEq(t, `{"unseen":0,"unread":0,"total":2}`, b.do(t, http.MethodGet, "/v1/inbox/counts", ana, nil).body)

	// Bob sees his one item, and none of Ana's ids exist for him.
	require.Equal(t, []string{"n010"}, itemIDs(t, b.do(t, http.MethodGet, "/v1/inbox/items", bob, nil).body))
	notFound := b.do(t, http.MethodPost, "/v1/inbox/items/n001/read", bob, nil)
	madeUp := b.do(t, http.MethodPost, "/v1/inbox/items/n999/read", bob, nil)
	require.Equal(t, http.StatusNotFound, notFound.status, notFound.body)
	require.Equal(t, notFound.body, madeUp.body)
	globex := b.mint(t, globexSend, "ana")
	require.Equal(t, []string{}, itemIDs(t, b.do(t, http.MethodGet, "/v1/inbox/items", globex, nil).body))
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodPost, "/v1/inbox/items/n002/archive", globex, nil).status)
	require.JSONEq(t, `{"unseen":0,"unread":0,"total":2}`, b.do(t, http.MethodGet, "/v1/inbox/counts", ana, nil).body)
}

func jsonString(t *testing.T, body, name string) string {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal([]byte(jsonField(t, body, name)), &s))
	return s
}

func TestInboxRefusesBadInputNamingIt(t *testing.T) {
	t.Parallel()
	b := inboxSetup(t, api.Config{})
	ana := b.mint(t, acmeSend, "ana")
	for query, where := range map[string]string{"state=new": "query.state", "limit=0": "query.limit", "limit=101": "query.limit",
		"cursor=%21%21": "query.cursor", "cursor=bm90LWEtY3Vyc29y": "query.cursor"} {
		a := b.do(t, http.MethodGet, "/v1/inbox/items?"+query, ana, nil)
		require.Equal(t, http.StatusUnprocessableEntity, a.status, query)
		require.Contains(t, a.body, `"location":"`+where+`"`, query)
	}
	bad := b.do(t, http.MethodPost, "/v1/inbox/items/n001/delete", ana, nil)
	require.Equal(t, http.StatusUnprocessableEntity, bad.status, bad.body)

	for body, where := range map[string]string{`{"subscriber":""}`: "body.subscriber", `{"subscriber":"a\u0007b"}`: "body.subscriber",
		`{"subscriber":"ana","ttl":"25h"}`: "body.ttl", `{"subscriber":"ana","ttl":"30s"}`: "body.ttl", `{"subscriber":"ana","ttl":"soon"}`: "body.ttl"} {
		a := b.sendJSON(t, http.MethodPost, "/v1/inbox/tokens", acmeSend, body)
		require.Equal(t, http.StatusUnprocessableEntity, a.status, body)
		require.Contains(t, a.body, `"location":"`+where+`"`, body)
	}
	a := b.sendJSON(t, http.MethodPost, "/v1/inbox/tokens", acmeSend, `{"subscriber":"ana","ttl":"2h"}`)
	require.Equal(t, http.StatusOK, a.status, a.body)
	expires, err := time.Parse(time.RFC3339, jsonString(t, a.body, "expires_at"))
	require.NoError(t, err)
	require.WithinRange(t, expires, time.Now().Add(119*time.Minute), time.Now().Add(121*time.Minute))
	require.Equal(t, http.StatusForbidden, b.sendJSON(t, http.MethodPost, "/v1/inbox/tokens", acmeRead, `{"subscriber":"ana"}`).status)
}

func TestInboxRefusesEveryBadTokenAlike(t *testing.T) {
	t.Parallel()
	b := inboxSetup(t, api.Config{})
	b.add(t, "acme", "ana", 0, 1)
	other, err := inbox.NewTokens(bytes.Repeat([]byte("o"), 32))
	require.NoError(t, err)
	foreign, _, err := other.Mint("acme", "ana", time.Hour, time.Now())
	require.NoError(t, err)
	expired, _, err := b.tokens.Mint("acme", "ana", time.Minute, time.Now().Add(-2*time.Minute))
	require.NoError(t, err)
	good := b.mint(t, acmeSend, "ana")
	tampered := good[:len(good)-2] + "AA"
	if tampered == good {
		tampered = good[:len(good)-2] + "BB"
	}
	refused := map[string]string{"another deployment's": foreign, "expired": expired, "tampered": tampered,
		"an API key": acmeSend, "none": ""}
	var first *answer
	for why, token := range refused {
		a := b.do(t, http.MethodGet, "/v1/inbox/items", token, nil)
		require.Equal(t, http.StatusUnauthorized, a.status, why)
		require.Equal(t, "Bearer", a.header.Get("WWW-Authenticate"), why)
		if first == nil {
			first = &a
		}
		require.Equal(t, first.body, a.body, why)
	}
	// An item post with a refused token does nothing.
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodPost, "/v1/inbox/items/n000/read", expired, nil).status)
	require.JSONEq(t, `{"unseen":1,"unread":1,"total":1}`, b.do(t, http.MethodGet, "/v1/inbox/counts", good, nil).body)
	// A subscriber token opens no API-key route.
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodGet, "/v1/tenants/acme", good, nil).status)
}

func TestInboxCORSIsTheTenantsOrigins(t *testing.T) {
	t.Parallel()
	b := inboxSetup(t, api.Config{})
	b.add(t, "acme", "ana", 0, 1)
	ana := b.mint(t, acmeSend, "ana")

	allowed := b.do(t, http.MethodGet, "/v1/inbox/counts", ana, nil, "Origin", acmePage)
	require.Equal(t, http.StatusOK, allowed.status, allowed.body)
	require.Equal(t, acmePage, allowed.header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, allowed.header.Values("Vary"), "Origin")

	for _, origin := range []string{"https://evil.example", "https://app.acme.example:8443", "http://app.acme.example"} {
		a := b.do(t, http.MethodPost, "/v1/inbox/items/n000/read", ana, nil, "Origin", origin)
		require.Equal(t, http.StatusForbidden, a.status, origin)
		require.Empty(t, a.header.Get("Access-Control-Allow-Origin"), origin)
		all := b.do(t, http.MethodPost, "/v1/inbox/read-all", ana, nil, "Origin", origin)
		require.Equal(t, http.StatusForbidden, all.status, origin)
	}
	require.JSONEq(t, `{"unseen":1,"unread":1,"total":1}`, b.do(t, http.MethodGet, "/v1/inbox/counts", ana, nil).body)
	// Globex lists no origin: its pages reach nothing, servers still do.
	gl := b.mint(t, globexSend, "ana")
	require.Equal(t, http.StatusForbidden, b.do(t, http.MethodGet, "/v1/inbox/counts", gl, nil, "Origin", acmePage).status)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/inbox/counts", gl, nil).status)
	// A refused token is readable by the page, so it can renew it.
	refused := b.do(t, http.MethodGet, "/v1/inbox/counts", "hit1.x.y", nil, "Origin", "https://evil.example")
	require.Equal(t, http.StatusUnauthorized, refused.status)
	require.Equal(t, "https://evil.example", refused.header.Get("Access-Control-Allow-Origin"))

	// The origins are the tenant's to set; each is checked.
	set := b.sendJSON(t, http.MethodPatch, "/v1/tenants/globex", adminKey, `{"inbox_origins":["https://globex.example"]}`)
	require.Equal(t, http.StatusOK, set.status, set.body)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/inbox/counts", gl, nil, "Origin", "https://globex.example").status)
	bad := b.sendJSON(t, http.MethodPatch, "/v1/tenants/globex", adminKey,
		`{"inbox_origins":["https://globex.example","https://b.example","http://globex.example"]}`)
	require.Equal(t, http.StatusUnprocessableEntity, bad.status, bad.body)
	require.Contains(t, bad.body, "inbox_origins[2]")
}

func TestInboxPreflight(t *testing.T) {
	t.Parallel()
	b := inboxSetup(t, api.Config{})
	for _, path := range []string{"/v1/inbox/items", "/v1/inbox/items/n1/read", "/v1/inbox/stream", "/v1/inbox/counts"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodOptions, b.url+path, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", acmePage)
		req.Header.Set("Access-Control-Request-Method", "GET")
		req.Header.Set("Access-Control-Request-Headers", "authorization, last-event-id")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusNoContent, resp.StatusCode, path)
		h := resp.Header
		require.Equal(t, acmePage, h.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "Authorization, Content-Type, Last-Event-ID", h.Get("Access-Control-Allow-Headers"))
		require.Equal(t, "GET, POST", h.Get("Access-Control-Allow-Methods"))
		require.Equal(t, "600", h.Get("Access-Control-Max-Age"))
		require.Equal(t, "Origin", h.Get("Vary"))
	}
}

func TestInboxVAPIDKeyAndScript(t *testing.T) {
	t.Parallel()
	b := inboxSetup(t, api.Config{VAPIDPublicKey: "BPublicKey"})
	a := b.do(t, http.MethodGet, "/v1/inbox/vapid-public-key", "", nil)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"public_key":"BPublicKey"}`, a.body)
	require.Equal(t, "*", a.header.Get("Access-Control-Allow-Origin"))
	none := inboxSetup(t, api.Config{})
	require.Equal(t, http.StatusNotFound, none.do(t, http.MethodGet, "/v1/inbox/vapid-public-key", "", nil).status)

	resp, err := http.Get(b.url + "/v1/inbox/herald-inbox.js")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/javascript; charset=utf-8", resp.Header.Get("Content-Type"))
}

func TestInboxItemsCarryAFreshDocumentLink(t *testing.T) {
	t.Parallel()
	signer, err := documents.NewSigner(bytes.Repeat([]byte("d"), 32), "https://herald.example", time.Hour)
	require.NoError(t, err)
	b := inboxSetup(t, api.Config{DocumentLinks: signer})
	it := inboxItem(1)
	it.Document = &notification.Document{Type: "invoice", Object: "acme/INV-1/invoice.pdf"}
	_, _, err = b.store.Add(t.Context(), "acme", "ana", it, inbox.Limits{})
	require.NoError(t, err)
	page := b.do(t, http.MethodGet, "/v1/inbox/items", b.mint(t, acmeSend, "ana"), nil)
	var p api.InboxPage
	require.NoError(t, json.Unmarshal([]byte(page.body), &p))
	require.Len(t, p.Items, 1)
	link := p.Items[0].DocumentURL
	require.True(t, strings.HasPrefix(link, "https://herald.example/v1/documents/acme/INV-1/invoice.pdf?expires="), link)
	require.NotContains(t, page.body, `"document":`)
}
