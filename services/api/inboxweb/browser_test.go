package inboxweb_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api/inboxweb"
)

// screenshotEnv names the folder the browser test writes
// herald-inbox.png to (docs/images from the repository's root); unset,
// no screenshot is written.
const screenshotEnv = "HERALD_SCREENSHOT_DIR"

// The tenant's page is as strict as a page can be: no inline script or
// style, Trusted Types enforced. The component must run in it.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self'; require-trusted-types-for 'script'"

const pageHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Acme Orders</title>
<link rel="stylesheet" href="/page.css">
<script src="{{script}}"></script>
<script src="/page.js"></script>
</head><body><header><h1>Acme Orders</h1>
<herald-inbox token="good-token"></herald-inbox></header></body></html>`

// page.js records the component's events for the test.
const pageJS = `window.heraldEvents = [];
for (const name of ["herald-inbox:item", "herald-inbox:unauthorized"]) {
  document.addEventListener(name, (e) => window.heraldEvents.push(name + (e.detail ? " " + e.detail.id : "")));
}`

const pageCSS = `body { margin: 0; font-family: system-ui, sans-serif; background: #f3f4f6; min-height: 640px; }
header { display: flex; justify-content: space-between; align-items: center; padding: .5rem 1.5rem;
  background: #fff; border-bottom: 1px solid #e5e7eb; }
h1 { font-size: 1.1rem; }`

func servePage(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/":
		w.Header().Set("Content-Security-Policy", pageCSP)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(strings.Replace(pageHTML, "{{script}}", inboxweb.VersionedPath(), 1)))
	case "/page.js":
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write([]byte(pageJS))
	case "/page.css":
		w.Header().Set("Content-Type", "text/css")
		_, _ = w.Write([]byte(pageCSS))
	default:
		http.NotFound(w, r)
	}
}

// A subscriber's round with the inbox in a real browser: the badge counts
// the unread, the panel lists the feed, marking one read reaches the API
// and the badge, a live item arrives on top (as text, however hostile,
// with no link to a javascript: URL), a dropped stream resumes from the
// last event, Escape closes and gives the bell the focus, the labels follow
// the locale, and a refused token is the page's to renew.
func TestInboxInTheBrowser(t *testing.T) {
	t.Parallel()
	browserPath := chromium(t)
	now := time.Now()
	seen := now.Add(-48 * time.Hour)
	fake := newFakeInbox("good-token",
		&item{ID: "itm-2", Title: "PO-2026-0042 shipped", Body: "3 pallets left Rotterdam; delivery Thursday.",
			ActionURL: "https://orders.example.com/po/2026-0042", CreatedAt: now.Add(-5 * time.Minute)},
		&item{ID: "itm-1", Title: "PO-2026-0042 confirmed", Body: "Acme confirmed 12 lines, total EUR 18,420.00.",
			CreatedAt: now.Add(-3 * time.Hour)},
		&item{ID: "itm-0", Title: "Invoice INV-7781 ready", Body: "The invoice for PO-2026-0039 is ready.",
			DocumentURL: "https://herald.example.com/v1/documents/inv-7781.pdf",
			CreatedAt:   now.Add(-50 * time.Hour), SeenAt: &seen, ReadAt: &seen},
	)
	srv := httptest.NewServer(fake.routes(http.HandlerFunc(servePage)))
	t.Cleanup(srv.Close)
	b := openBrowser(t, browserPath)

	b.do(chromedp.Navigate(srv.URL + "/"))
	require.Equal(t, "", <-fake.connects, "the first stream starts from now")
	b.poll(`root.querySelector(".badge").textContent === "2" && !root.querySelector(".badge").hidden`, "the badge counts 2 unread")
	require.Equal(t, "Notifications, 2 unread", b.eval(`root.querySelector(".bell").getAttribute("aria-label")`))

	b.click(`.bell`)
	b.poll(`!root.querySelector("[role=dialog]").hidden && root.querySelectorAll("li").length === 3`, "the panel opens on the feed")
	require.Equal(t, "PO-2026-0042 shipped|PO-2026-0042 confirmed|Invoice INV-7781 ready",
		b.eval(`[...root.querySelectorAll("li .title")].map((e) => e.textContent).join("|")`), "newest first")
	require.Equal(t, "true", b.eval(`String(root.querySelector("[role=dialog]").contains(root.activeElement))`),
		"the focus moved into the panel")
	require.Equal(t, "Open|Document", b.eval(`[...root.querySelectorAll("li a")].map((a) => a.textContent).join("|")`))
	b.screenshot()

	// She presses "Mark as read" on one item while another tab reads the
	// other: the stream redraws the list between her press and her release,
	// and the click still reads hers.
	x, y := b.center(`li[data-id="itm-1"] button[data-action="read"]`)
	b.do(chromedp.MouseEvent(chromedp.MousePressed, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	fake.elsewhere("6", "itm-2", "read")
	b.poll(`root.querySelector('li[data-id="itm-2"]').className === "read"`, "the other tab's read is drawn")
	b.do(chromedp.MouseEvent(chromedp.MouseReleased, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	b.poll(`root.querySelector(".badge").hidden && root.querySelector('li[data-id="itm-1"]').className === "read"`,
		"her click read the item: none unread")
	require.Contains(t, fake.posted(), "read itm-1")
	require.Equal(t, "Notifications", b.eval(`root.querySelector(".bell").getAttribute("aria-label")`))

	const hostile = `<img src=x onerror=alert(1)>`
	fake.push("7", &item{ID: "itm-3", Title: hostile, Body: "<b>not bold</b>", ActionURL: "javascript:alert(1)", CreatedAt: now})
	b.poll(`root.querySelector(".badge").textContent === "1" && root.querySelector("li").dataset.id === "itm-3"`,
		"the live item is on top and counted")
	require.Equal(t, "Notifications, 1 unread", b.eval(`root.querySelector(".bell").getAttribute("aria-label")`))
	require.Equal(t, hostile, b.eval(`root.querySelector("li .title").textContent`), "shown as text")
	require.Equal(t, "0 0", b.eval(`root.querySelectorAll("img, b").length + " " + root.querySelector("li").querySelectorAll("a").length`),
		"no element made of the item, no link to a javascript: URL")
	require.Equal(t, "herald-inbox:item itm-3", b.eval(`window.heraldEvents.join(",")`))

	fake.drop()
	require.Equal(t, "7", <-fake.connects, "the stream resumes after the last event it saw")

	b.do(chromedp.KeyEvent(kb.Escape))
	b.poll(`root.querySelector("[role=dialog]").hidden`, "Escape closes the panel")
	require.Equal(t, "true", b.eval(`String(document.activeElement === root.host && root.activeElement === root.querySelector(".bell"))`),
		"the focus is back on the bell")

	fake.elsewhere("8", "itm-2", "archive")
	b.poll(`root.querySelector(".badge").textContent === "1" && !root.querySelector('li[data-id="itm-2"]')`,
		"an item archived elsewhere leaves the list and the count")
	fake.sync("9", &item{ID: "itm-4", Title: "PO-2026-0043 confirmed", CreatedAt: now})
	b.poll(`root.querySelector(".badge").textContent === "2" && root.querySelector("li").dataset.id === "itm-4"`,
		"after a sync the feed is read again")

	b.eval(`root.host.setAttribute("locale", "ru"), ""`)
	b.poll(`root.querySelector(".bell").getAttribute("aria-label") === "Уведомления, непрочитанных: 2"`, "the bell speaks Russian")
	b.do(chromedp.KeyEvent(kb.Enter)) // the bell has the focus: the keyboard opens it
	b.poll(`!root.querySelector("[role=dialog]").hidden`, "Enter on the bell opens the panel")
	require.Equal(t, "Уведомления|Отметить все как прочитанные|Отметить как прочитанное",
		b.eval(`[root.querySelector("h2"), root.querySelector("header button"), root.querySelector("[data-action=read]")].map((e) => e.textContent).join("|")`))

	fake.dropItem("10", "itm-3")
	b.poll(`!root.querySelector('li[data-id="itm-3"]') && root.querySelector('li[data-id="itm-4"]') !== null`,
		"an item the feed dropped leaves the list")

	b.eval(`root.host.setAttribute("token", "expired-token"), ""`)
	b.poll(`window.heraldEvents.includes("herald-inbox:unauthorized")`, "a refused token is the page's to renew")
	b.requireNoErrors()
}

// A long feed: empty at first, then read again after a sync, a page at a
// time; an item archived with its button leaves; "Mark all as read"
// clears the badge.
func TestInboxPagesArchivesAndReadsAll(t *testing.T) {
	t.Parallel()
	browserPath := chromium(t)
	fake := newFakeInbox("good-token")
	srv := httptest.NewServer(fake.routes(http.HandlerFunc(servePage)))
	t.Cleanup(srv.Close)
	b := openBrowser(t, browserPath)

	b.do(chromedp.Navigate(srv.URL + "/"))
	<-fake.connects
	b.click(`.bell`)
	b.poll(`root.querySelector(".empty").textContent === "No notifications yet." && !root.querySelector(".empty").hidden`,
		"an empty feed says so")

	now := time.Now()
	for i := range 21 {
		fake.add(&item{ID: fmt.Sprintf("old-%02d", i), Title: fmt.Sprintf("Order %02d shipped", i), CreatedAt: now.Add(-time.Hour)})
	}
	fake.sync("1", &item{ID: "new", Title: "Order 99 shipped", CreatedAt: now})
	b.poll(`root.querySelectorAll("li").length === 20 && !root.querySelector(".more").hidden && root.querySelector(".empty").hidden`,
		"the first page, and a way to the next")
	b.click(`.more`)
	b.poll(`root.querySelectorAll("li").length === 22 && root.querySelector(".more").hidden`, "the second page, the last")

	b.click(`li[data-id="new"] button[data-action="archive"]`)
	b.poll(`root.querySelectorAll("li").length === 21 && root.querySelector(".badge").textContent === "21"`, "the archived item leaves")
	require.Contains(t, fake.posted(), "archive new")

	b.click(`header button`)
	b.poll(`root.querySelector(".badge").hidden && root.querySelectorAll("li.unread").length === 0`, "all read, no badge")
	require.Contains(t, fake.posted(), "read-all")
	require.Equal(t, "Notifications", b.eval(`root.querySelector(".bell").getAttribute("aria-label")`))
	b.requireNoErrors()
}

// browser is a Chromium tab with the page's console recorded.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

const browserTimeout = 30 * time.Second

// chromium finds the browser, as the e2e tests do: without one, the test
// is skipped — except in CI, which installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("Chromium is not installed (CI installs the chromium package)")
	}
	t.Skip("Chromium is not installed: the component's browser test needs it")
	return ""
}

func openBrowser(t *testing.T, path string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1024, 700))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	quiet := func(string, ...any) {}
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(quiet), chromedp.WithLogf(quiet))
	b := &browser{t: t, ctx: ctx}
	var done sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		done.Wait()
	})
	require.NoError(t, chromedp.Do(ctx), "starting Chromium")
	messages := chromedp.Console(ctx)
	done.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.messages = append(b.messages, m)
			b.mu.Unlock()
		}
	})
	b.do(chromedp.EmulateViewport(1024, 700))
	return b
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, steps...))
}

// inShadow makes an expression that sees the component's shadow root as
// root.
func inShadow(expr string) string {
	return `(() => { const root = document.querySelector("herald-inbox").shadowRoot; return (` + expr + `); })()`
}

// eval is a string expression's value, with root the shadow root.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](inShadow(expr)))
	require.NoError(b.t, err, expr)
	return v
}

// poll waits until an expression is true, with root the shadow root.
func (b *browser) poll(expr, why string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](inShadow(expr), chromedp.WithPollingTimeout(20*time.Second)))
	require.NoError(b.t, err, why)
}

// click scrolls an element of the shadow root into view and clicks its
// middle with the mouse, as a user would, rather than calling its click().
func (b *browser) click(sel string) {
	b.t.Helper()
	b.do(chromedp.MouseClickXY(b.center(sel)))
}

// center scrolls an element of the shadow root into view and is the
// middle of it in the viewport.
func (b *browser) center(sel string) (x, y float64) {
	b.t.Helper()
	b.poll(`root.querySelector(`+strconv.Quote(sel)+`) !== null`, "waiting for "+sel)
	pos := b.eval(`(() => { const el = root.querySelector(` + strconv.Quote(sel) + `);
		el.scrollIntoView({ block: "center" });
		const r = el.getBoundingClientRect();
		return (r.left + r.width / 2) + " " + (r.top + r.height / 2); })()`)
	_, err := fmt.Sscan(pos, &x, &y)
	require.NoError(b.t, err)
	return x, y
}

// requireNoErrors checks the page wrote no error to its console: no
// exception, nothing its content security policy or Trusted Types refused.
// An answer's status (the 401 of a refused token) is the network's entry,
// not the page's error.
func (b *browser) requireNoErrors() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []string
	for _, m := range b.messages {
		if m.Source == "network" && strings.HasPrefix(m.Text, "Failed to load resource: the server responded with a status of") {
			continue
		}
		if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
			errs = append(errs, m.URL+": "+m.String())
		}
	}
	require.Empty(b.t, errs, "the page wrote errors")
}

// screenshot writes the open panel to $HERALD_SCREENSHOT_DIR/herald-inbox.png.
func (b *browser) screenshot() {
	b.t.Helper()
	dir := os.Getenv(screenshotEnv)
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(b.t, err)
	_, err = png.Decode(bytes.NewReader(shot))
	require.NoError(b.t, err, "Chromium's screenshot is a PNG")
	require.NoError(b.t, os.MkdirAll(dir, 0o755))
	require.NoError(b.t, os.WriteFile(filepath.Join(dir, "herald-inbox.png"), shot, 0o644))
}
