package e2e

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push/apns/apnstest"
	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/services/delivery/push/webpush/webpushtest"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/event"
)

// iPadToken is an APNs device token the fake APNs says is gone.
const iPadToken = "6f1c2b0e9d8a7f6e5d4c3b2a19080706f1c2b0e9d8a7f6e5d4c3b2a190807066"

// trustHTTPTestCertificate makes the system's trusted CAs, as Go reads
// them (SSL_CERT_FILE), httptest's certificate: the fake APNs is an
// HTTP/2 TLS server with it, and Herald trusts what the system trusts.
// Called from TestMain, before anything reads the system pool.
func trustHTTPTestCertificate() (cleanup func(), err error) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.StartTLS()
	der := srv.Certificate().Raw
	srv.Close()
	if _, err := x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "herald-e2e-ca")
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	os.Setenv("SSL_CERT_FILE", file)
	return func() { os.RemoveAll(dir) }, nil
}

// inboxWorld is a pipeline whose Web Push reaches a fake push service that
// decrypts as the browser would, and whose APNs is a fake over HTTP/2 TLS;
// the buyer hears of a shipped order in her inbox and on her devices.
type inboxWorld struct {
	*pipeline
	webpush *webpushtest.Server
	apns    *apnstest.Server
	key     string // acme's, send and read
	admin   string
}

func startInboxWorld(t *testing.T) *inboxWorld {
	t.Helper()
	pem, key := apnstest.NewKey(t)
	w := &inboxWorld{webpush: webpushtest.NewServer(t)}
	w.apns = apnstest.NewServer(t, apnstest.Account{KeyID: "ABC123DEFG", TeamID: "DEF123GHIJ", Key: &key.PublicKey, Topic: "com.acme.buyer"})
	w.pipeline = startPipeline(t, func(c *app.Config) {
		c.Push.APNs = &app.APNsConfig{KeyEnv: "APNS_KEY", KeyID: "ABC123DEFG", TeamID: "DEF123GHIJ", Topic: "com.acme.buyer", Host: w.apns.URL}
		getenv := c.Getenv
		c.Getenv = func(k string) string {
			if k == "APNS_KEY" {
				return pem
			}
			if getenv == nil {
				return os.Getenv(k)
			}
			return getenv(k)
		}
		c.Router.Routes = []router.Route{{Event: "order.shipped", Document: "delivery_note", Roles: []string{"buyer"},
			Channels: []event.Channel{event.ChannelInbox, event.ChannelPush}}}
	})
	keys := openKeys(t, w.pipeline)
	w.key, _ = w.createKey(t, keys, apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send, apikey.Read}})
	w.admin, _ = w.createKey(t, keys, apikey.Spec{Admin: true, Name: "inbox e2e"})
	return w
}

// api calls the API with key and requires the status given.
func (w *inboxWorld) api(t *testing.T, key, method, path string, status int, body string) []byte {
	t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	a := w.call(t, method, path, key, b, http.Header{"Content-Type": {"application/json"}})
	require.Equal(t, status, a.status, "%s %s: %s", method, path, a.body)
	return a.body
}

// token mints a subscriber token for sub.
func (w *inboxWorld) token(t *testing.T, sub string) string {
	t.Helper()
	var out struct{ Token string }
	require.NoError(t, json.Unmarshal(w.api(t, w.key, http.MethodPost, "/v1/inbox/tokens", http.StatusOK, `{"subscriber": "`+sub+`", "ttl": "10m"}`), &out))
	return out.Token
}

// sseEvent is one event a stream received.
type sseEvent struct {
	ID, Name string
	Data     map[string]any
}

// stream opens GET /v1/inbox/stream with token, as the component does,
// and hands over each event it reads.
func (w *inboxWorld) stream(t *testing.T, token string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.dev.App.APIAddr()+"/v1/inbox/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := make(chan sseEvent, 64)
	var done sync.WaitGroup
	t.Cleanup(func() { cancel(); done.Wait() })
	done.Go(func() {
		defer resp.Body.Close()
		lines := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for lines.Scan() {
			line := lines.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Data)
			case line == "" && ev.Name != "":
				select {
				case events <- ev:
				case <-ctx.Done():
					return
				}
				ev = sseEvent{}
			}
		}
	})
	return events
}

// next is the stream's next event of that name (others are skipped).
func next(t *testing.T, events <-chan sseEvent, name string) sseEvent {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Name == name {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event on the stream", name)
		}
	}
}

// The story: a buyer's web app opens her inbox with a token its
// backend minted; an order.shipped routed to inbox and push reaches the
// stream of each of her two tabs and her browser (the fake push service
// decrypts the same title); her iPad, which APNs says is gone, is
// removed; another subscriber's token sees nothing of hers. In Chromium,
// <herald-inbox> shows the unread badge, she marks the item read in the
// panel, the badge clears and both tabs hear it.
func TestInboxAndPushFromTokenToRead(t *testing.T) {
	t.Parallel()
	w := startInboxWorld(t)
	page := inboxPage(t)
	w.api(t, w.admin, http.MethodPatch, "/v1/tenants/acme", http.StatusOK, `{"inbox_origins": ["`+page.origin+`"]}`)
	w.api(t, w.key, http.MethodPut, "/v1/subscribers/u-lucia", http.StatusCreated, `{"name": "Lucía Romero", "email": "lucia@frutasdelsur.example", "locale": "es"}`)
	w.api(t, w.key, http.MethodPut, "/v1/subscribers/u-other", http.StatusCreated, `{"name": "Otro", "locale": "es"}`)

	var vapid struct {
		PublicKey string `json:"public_key"`
	}
	require.NoError(t, json.Unmarshal(w.api(t, "", http.MethodGet, "/v1/inbox/vapid-public-key", http.StatusOK, ""), &vapid))
	subscription, err := json.Marshal(map[string]any{"kind": "webpush", "subscription": w.webpush.Subscribe(t, vapid.PublicKey)})
	require.NoError(t, err)
	w.api(t, w.key, http.MethodPut, "/v1/subscribers/u-lucia/devices/laptop", http.StatusCreated, string(subscription))
	w.apns.Refuse(iPadToken, apnstest.Answer{Status: http.StatusGone, Reason: "Unregistered", Timestamp: time.Now()})
	w.api(t, w.key, http.MethodPut, "/v1/subscribers/u-lucia/devices/ipad", http.StatusCreated, `{"kind": "apns", "token": "`+iPadToken+`"}`)

	lucia, other := w.token(t, "u-lucia"), w.token(t, "u-other")
	tab1, tab2 := w.stream(t, lucia), w.stream(t, lucia)
	shipped := sample(t, "order.shipped.json", nil)
	w.publish(t, "orders.shipped", "acme:evt-shipped-1", shipped)

	// Both tabs hear of the item; it is the one the API lists.
	item := next(t, tab1, "item").Data["item"].(map[string]any)
	require.Equal(t, item["id"], next(t, tab2, "item").Data["item"].(map[string]any)["id"])
	require.Equal(t, "Pedido PO-2026-0043 enviado", item["title"], "in her language")
	require.JSONEq(t, `{"unseen": 1, "unread": 1, "total": 1}`, string(w.api(t, lucia, http.MethodGet, "/v1/inbox/counts", http.StatusOK, "")))

	// Her browser's push service got it, and the browser could read it.
	require.Eventually(t, func() bool { return len(w.webpush.Pushes()) == 1 }, 20*time.Second, 20*time.Millisecond)
	var pushed webpush.Payload
	require.NoError(t, json.Unmarshal(w.webpush.Pushes()[0].Plaintext, &pushed))
	require.Equal(t, item["title"], pushed.Title, "the push decrypts to the inbox item's title")
	// The iPad APNs said was gone is no longer hers.
	require.Eventually(t, func() bool {
		return !strings.Contains(string(w.api(t, w.key, http.MethodGet, "/v1/subscribers/u-lucia/devices", http.StatusOK, "")), `"ipad"`)
	}, 20*time.Second, 20*time.Millisecond, "the gone device is removed")

	// Another subscriber's token sees nothing of hers.
	require.JSONEq(t, `{"items": []}`, string(w.api(t, other, http.MethodGet, "/v1/inbox/items", http.StatusOK, "")))
	w.api(t, other, http.MethodPost, fmt.Sprintf("/v1/inbox/items/%s/read", item["id"]), http.StatusNotFound, "")

	// In the browser: the badge, the panel, read, the badge gone.
	b := openBrowser(t, chromium(t), page.origin)
	b.open("/?token=" + lucia + "&api=" + w.dev.App.APIAddr())
	b.poll(inShadow(`root.querySelector(".badge").textContent === "1" && !root.querySelector(".badge").hidden`), "the badge counts 1 unread")
	clickInShadow(b, `.bell`)
	b.poll(inShadow(`!root.querySelector("[role=dialog]").hidden && root.querySelector("li .title").textContent === "Pedido PO-2026-0043 enviado"`),
		"the panel shows the item")
	if os.Getenv(screenshotsEnv) != "" {
		writePNG(t, "images/herald-inbox.png", run(b, chromedp.FullScreenshot(100)))
	}
	clickInShadow(b, `li button[data-action="read"]`)
	b.poll(inShadow(`root.querySelector(".badge").hidden`), "the badge clears")

	// Both tabs heard the read; the counts say none unread.
	for _, tab := range []<-chan sseEvent{tab1, tab2} {
		require.Eventually(t, func() bool {
			ev := next(t, tab, "state")
			return ev.Data["counts"].(map[string]any)["unread"] == float64(0)
		}, 20*time.Second, time.Millisecond)
	}
	require.JSONEq(t, `{"unseen": 0, "unread": 0, "total": 1}`, string(w.api(t, lucia, http.MethodGet, "/v1/inbox/counts", http.StatusOK, "")))
	b.requireNoErrors()
}

// inboxPage serves a tenant's web app: one page with the component, the
// token and Herald's address in its query, on a localhost origin.
type inboxPageServer struct{ origin string }

func inboxPage(t *testing.T) inboxPageServer {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		api := "http://" + r.URL.Query().Get("api")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="es"><head><meta charset="utf-8"><title>Frutas del Sur</title>
<script src="%s/v1/inbox/herald-inbox.js"></script></head>
<body style="font-family: sans-serif; margin: 0"><header style="display: flex; justify-content: space-between; align-items: center; padding: 12px 24px; background: #14532d; color: white">
<strong>Frutas del Sur · Pedidos</strong><herald-inbox token="%s" locale="es" style="--herald-inbox-accent: #15803d; --herald-inbox-bell: #ffffff"></herald-inbox></header>
<main style="padding: 24px; height: 480px">PO-2026-0043</main></body></html>`, html.EscapeString(api), html.EscapeString(r.URL.Query().Get("token")))
	}))
	t.Cleanup(srv.Close)
	return inboxPageServer{origin: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)}
}

// inShadow makes an expression that sees the component's shadow root as
// root.
func inShadow(expr string) string {
	return `(() => { const root = document.querySelector("herald-inbox").shadowRoot; return (` + expr + `); })()`
}

// clickInShadow clicks the middle of an element of the component with the
// mouse, as a user would.
func clickInShadow(b *browser, sel string) {
	b.t.Helper()
	b.poll(inShadow(`root.querySelector(`+strconv.Quote(sel)+`) !== null`), "waiting for "+sel)
	var x, y float64
	pos := b.evaluate(inShadow(`(() => { const el = root.querySelector(` + strconv.Quote(sel) + `);
		el.scrollIntoView({ block: "center" });
		const r = el.getBoundingClientRect();
		return (r.left + r.width / 2) + " " + (r.top + r.height / 2); })()`))
	_, err := fmt.Sscan(pos, &x, &y)
	require.NoError(b.t, err)
	b.do(chromedp.MouseClickXY(x, y))
}
