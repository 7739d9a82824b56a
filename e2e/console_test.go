package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api/console"
	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// screenshotsEnv, when set, makes the console's browser test write its
// screenshots to docs/console/; otherwise the committed ones stay as they
// are.
const screenshotsEnv = "HERALD_SCREENSHOTS"

// An operator's round through the console, in a real browser: signed out,
// a page sends to sign-in; a tenant's key is refused; an admin key opens
// the live flow; the DLQ shows the broken event, its payload, and redrives
// it; what the operator did is in the audit stream; signing out ends it.
func TestConsoleInTheBrowser(t *testing.T) {
	t.Parallel()
	browserPath := chromium(t)
	p := startPipeline(t)
	keys := openKeys(t, p)
	admin, adminKey := p.createKey(t, keys, apikey.Spec{Admin: true, Name: "console e2e"})
	tenant, tenantKey := p.createKey(t, keys, apikey.Spec{Tenant: "acme"})
	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
	p.publish(t, "orders.created", "evt-broken", []byte(`{"specversion":"1.0","id":"evt-broken"}`))
	broken := waitDeadLetter(t, p)
	p.settle(t)

	b := openBrowser(t, browserPath, "http://"+p.dev.App.APIAddr())
	b.open("/console/flow")
	require.Contains(t, b.location(), "/console/signin?next=%2Fconsole%2Fflow", "signed out, a page sends to sign-in")
	b.screenshot("signin")

	b.signIn(tenant)
	require.Contains(t, b.location(), "/console/signin")
	require.Contains(t, b.text("#key-error"), "that key is a tenant's")

	b.signIn(admin)
	require.True(t, strings.HasSuffix(b.location(), "/console/flow"), "back where the operator was going: %s", b.location())
	require.Contains(t, b.text(".who"), adminKey.ID)
	flow := b.text("table.flow")
	require.Contains(t, flow, "ORDERS")
	b.visible(`tr[data-id="ORDERS/router"]`)
	b.poll(`document.getElementById("live").textContent.startsWith("Live, updated")`, "the live stream updates the page")
	require.Equal(t, "1", b.text("#dlq-depth"))
	b.screenshot("flow")
	b.onPhone("flow-phone")

	b.follow(`nav a[href="/console/dlq"]`)
	require.Contains(t, b.text(`tr:has(#seq-`+broken.seq+`) td.reason`), broken.reason)
	b.screenshot("dlq")
	b.onPhone("")

	b.follow(`table.dlq a[href="/console/dlq/` + broken.seq + `"]`)
	require.Equal(t, "{\n  \"specversion\": \"1.0\",\n  \"id\": \"evt-broken\"\n}", b.text("pre.payload"), "the payload, indented")
	require.Contains(t, b.text("dl.facts"), broken.reason)
	b.screenshot("dlq-entry")
	b.onPhone("")

	b.follow(`a[href="/console/dlq"]:not(nav a)`)
	b.do(chromedp.Click(chromedp.ID("seq-" + broken.seq)))
	b.follow(`button[formaction="/console/dlq/redrive"]`)
	require.Equal(t, "1 entry redriven.", b.text("p.notice"))
	require.Equal(t, b.base+"/console/dlq?done=1+entry+redriven.", b.location(), "back to the list, with the notice")
	require.Contains(t, b.evaluate(`document.getElementById("seq-`+broken.seq+`").closest("tr").cells[6].textContent`), "1×")
	b.open("/console/dlq/" + broken.seq)
	require.Contains(t, b.text("dl.facts"), "Redriven")

	// Support looks for the sample order's notifications, and opens one.
	b.follow(`nav a[href="/console/notifications"]`)
	search := `form[aria-label="Search notifications"] `
	b.do(chromedp.SendKeys(chromedp.CSS(search+`input[name="tenant"]`), "acme"),
		chromedp.SendKeys(chromedp.CSS(search+`input[name="order"]`), "PO-2026-0042"))
	require.Eventually(t, func() bool { // the history service indexes them as they settle
		b.follow(search + `button[type="submit"]`)
		return strings.Count(b.evaluate(`String(document.querySelectorAll('a[href^="/console/notifications/ntf_"]').length)`), "2") == 1
	}, 30*time.Second, 200*time.Millisecond, "the order's two notifications are listed")
	require.Contains(t, b.text("main"), "olga@zarya.example")
	b.screenshot("notifications")
	b.follow(`a[href^="/console/notifications/ntf_"]`)
	require.Contains(t, b.text("table.timeline"), "Delivered")
	b.screenshot("notification")

	// An operator makes a key for the tenant, sees it once, and revokes it.
	b.follow(`nav a[href="/console/tenants"]`)
	require.Contains(t, b.text("main"), "acme")
	b.screenshot("tenants")
	b.follow(`a[href="/console/tenants/acme"]`)
	b.screenshot("tenant")
	b.do(chromedp.SendKeys(chromedp.ID("key-name"), "made in the browser"))
	b.follow(`form[action="/console/tenants/acme/keys"] button[type="submit"]`)
	made := strings.TrimSpace(b.text(`pre.payload`))
	require.True(t, strings.HasPrefix(made, "hk_"), "the new key, shown once: %q", made)
	madeID, err := apikey.Parse(made)
	require.NoError(t, err)
	b.open("/console/tenants/acme")
	require.NotContains(t, b.text("main"), made, "never shown again")
	b.follow(`a[href="/console/tenants/acme/keys/` + madeID + `/revoke"]`)
	b.follow(`button.danger`)
	require.Contains(t, b.text("main"), "revoked")

	b.follow(`form.signout button`)
	require.Contains(t, b.location(), "/console/signin")
	b.open("/console/dlq")
	require.Contains(t, b.location(), "/console/signin", "the session has ended")
	b.requireNoErrors()

	audit := auditEntries(t, p)
	require.Contains(t, audit, console.AuditEntry{Who: tenantKey.ID, Action: "signin", Error: "not an admin key"})
	require.Contains(t, audit, console.AuditEntry{Who: adminKey.ID, Action: "signin"})
	require.Contains(t, audit, console.AuditEntry{Who: adminKey.ID, Action: "dlq.redrive", Target: "entries " + broken.seq})
	require.Contains(t, audit, console.AuditEntry{Who: adminKey.ID, Action: "key.create", Target: madeID})
	require.Contains(t, audit, console.AuditEntry{Who: adminKey.ID, Action: "key.revoke", Target: madeID})
	require.Contains(t, audit, console.AuditEntry{Who: adminKey.ID, Action: "signout"})
}

// A dead letter whose payload, reason and headers are markup is shown as
// text: nothing in it runs. The content security policy would stop an
// inline script anyway; the test asks for more — no element made of it —
// and requireNoErrors that the policy had nothing to refuse.
func TestConsoleShowsAHostileDeadLetterAsText(t *testing.T) {
	t.Parallel()
	browserPath := chromium(t)
	p := startPipeline(t)
	admin, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Admin: true, Name: "console e2e"})
	const script, img = `<script>window.__pwned=1</script>`, `<img src=x onerror="window.__pwned=1">`
	// Written out, not json.Marshal'ed, which would escape < and > as \u003c.
	quoted := strings.ReplaceAll(img, `"`, `\"`)
	hostile := `{"specversion":"1.0","id":"evt-hostile","` + script + `":1,"` + quoted + `":2,"note":"</pre>` + quoted + `"}`
	p.publish(t, "orders.created", img, []byte(hostile))
	entry := waitDeadLetter(t, p)
	require.Contains(t, entry.reason, script, "the reason names the keys")

	b := openBrowser(t, browserPath, "http://"+p.dev.App.APIAddr())
	b.open("/console/signin")
	b.signIn(admin)
	for _, page := range []string{"/console/dlq", "/console/dlq/" + entry.seq} {
		b.open(page)
		require.Equal(t, "true", b.evaluate(`String(window.__pwned === undefined && document.querySelectorAll("main script, main img").length === 0)`),
			"nothing of the dead letter ran on %s", page)
		require.Contains(t, b.text("main"), script, "shown as text on %s", page)
		require.Contains(t, b.text("main"), `<img src=x onerror=`, "shown as text on %s", page)
	}
	require.Contains(t, b.text("table.headers"), img, "the message id header, as text")
	require.Contains(t, b.text("pre.payload"), `"note": "</pre>`+quoted+`"`, "the payload, as text")
	b.requireNoErrors()
}

// deadLetter is what a test reads back of the only DLQ entry.
type deadLetter struct{ seq, reason string }

func waitDeadLetter(t *testing.T, p *pipeline) deadLetter {
	t.Helper()
	ctx := heraldtest.Context(t)
	entries, err := dlq.OpenEntries(ctx, p.js)
	require.NoError(t, err)
	var list []dlq.Entry
	require.Eventually(t, func() bool {
		list, _, err = entries.List(ctx, dlq.Filter{}, 10)
		require.NoError(t, err)
		return len(list) > 0
	}, 30*time.Second, 50*time.Millisecond, "the event was not dead-lettered")
	require.Len(t, list, 1)
	return deadLetter{seq: strconv.FormatUint(list[0].Seq, 10), reason: list[0].Reason}
}

// auditEntries reads the console's audit log, without the times.
func auditEntries(t *testing.T, p *pipeline) []console.AuditEntry {
	t.Helper()
	var out []console.AuditEntry
	for _, m := range p.streamMessages(t, "AUDIT") {
		if m.Subject != console.AuditSubject {
			continue
		}
		var e console.AuditEntry
		require.NoError(t, json.Unmarshal(m.Data, &e))
		e.Time = time.Time{}
		out = append(out, e)
	}
	return out
}

// browser is one tab of a headless Chromium, closed before the pipeline
// stops (cleanups run last in, first out), so no live stream keeps the
// API's listener from shutting down.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

// browserTimeout bounds each step in the browser.
const browserTimeout = 30 * time.Second

// chromium finds the browser, before the test starts anything: without
// one, the test is skipped — except in CI, which installs it.
func chromium(t *testing.T) string {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("Chromium is not installed (CI installs the chromium package)")
		}
		t.Skip("Chromium is not installed: the console's browser tests need it")
	}
	return path
}

// openBrowser starts Chromium with a 1280×900 viewport.
func openBrowser(t *testing.T, path, base string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	quiet := func(string, ...any) {} // a newer browser's unknown events are not the console's errors
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(quiet), chromedp.WithLogf(quiet))
	b := &browser{t: t, ctx: ctx, base: base}
	var done sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		done.Wait()
	})
	require.NoError(t, chromedp.Do(ctx), "starting Chromium") // with no timeout: the browser lives as long as ctx
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
	b.do(chromedp.EmulateViewport(1280, 900))
	return b
}

// chromiumPath finds the browser: Debian's package, or one on the PATH.
func chromiumPath() string {
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	return ""
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, steps...))
}

func run[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	require.NoError(b.t, err)
	return v
}

// open goes to a page of the console, as typed in the address bar.
func (b *browser) open(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.base + path))
}

// follow clicks a link or a button and waits for the page it leads to.
func (b *browser) follow(sel string) {
	b.t.Helper()
	run(b, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)))
}

func (b *browser) signIn(key string) {
	b.t.Helper()
	b.do(chromedp.SendKeys(chromedp.ID("key"), key))
	b.follow(`form.signin button[type="submit"]`)
}

func (b *browser) location() string {
	b.t.Helper()
	return run(b, chromedp.Location())
}

// text is what an element shows.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return run(b, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
}

func (b *browser) visible(sel string) {
	b.t.Helper()
	b.do(chromedp.WaitVisible(chromedp.CSS(sel)))
}

func (b *browser) evaluate(expr string) string {
	b.t.Helper()
	return run(b, chromedp.Evaluate[string](expr))
}

// poll waits until a JavaScript expression is true on the page.
func (b *browser) poll(expr, why string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second)))
	require.NoError(b.t, err, why)
}

// requireNoErrors checks the pages wrote no error to the console: no
// exception, nothing the content security policy refused. An answer's
// status (the 403 of a tenant's sign-in, no favicon) is the network's
// entry, not the page's error.
func (b *browser) requireNoErrors() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []string
	for _, m := range b.messages {
		if m.Source == "network" && strings.HasPrefix(m.Text, "Failed to load resource: the server responded with a status of") {
			continue
		}
		if m.Type == chromedp.ConsoleError || m.IsException() {
			errs = append(errs, m.URL+": "+m.String())
		}
	}
	require.Empty(b.t, errs, "the console's pages wrote errors")
}

// screenshot writes the page, whole, to docs/console/<name>.png when
// HERALD_SCREENSHOTS is set.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	if os.Getenv(screenshotsEnv) == "" {
		return
	}
	writePNG(b.t, name, run(b, chromedp.FullScreenshot(100)))
}

// onPhone checks the page fits a phone's 390×844 screen — nothing wider
// than the screen but what scrolls in its own box (the tables) — and
// writes its screenshot too, as screenshot does, when name is not empty.
func (b *browser) onPhone(name string) {
	b.t.Helper()
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	defer b.do(chromedp.EmulateViewport(1280, 900))
	require.Equal(b.t, "390 390", b.evaluate(`document.documentElement.scrollWidth + " " + window.innerWidth`),
		"the page is no wider than the phone's screen")
	if name != "" && os.Getenv(screenshotsEnv) != "" {
		writePNG(b.t, name, run(b, chromedp.FullScreenshot(100)))
	}
}

// writePNG writes a screenshot with its 256 commonest colours — a page of
// text has a few more, its letters' edges, which the nearest of those
// draws as well — at Go's best compression: a third of Chromium's size,
// for files that are committed.
func writePNG(t *testing.T, name string, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	counts := map[color.RGBA]int{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	// Colours as common are ordered by value, so that the same page makes
	// the same file.
	rgba := func(c color.RGBA) uint32 { return uint32(c.R)<<24 | uint32(c.G)<<16 | uint32(c.B)<<8 | uint32(c.A) }
	colors := slices.SortedFunc(maps.Keys(counts), func(a, b color.RGBA) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(rgba(a), rgba(b)))
	})
	palette := make(color.Palette, 0, 256)
	for _, c := range colors[:min(256, len(colors))] {
		palette = append(palette, c)
	}
	paletted := image.NewPaletted(bounds, palette)
	draw.Draw(paletted, bounds, img, bounds.Min, draw.Src)
	var buf bytes.Buffer
	require.NoError(t, (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, paletted))
	path := filepath.Join("..", "docs", "console", name+".png")
	if strings.HasSuffix(name, ".png") { // a path under docs/, not a console page's name
		path = filepath.Join("..", "docs", name)
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	t.Logf("wrote %s, %d bytes (%d from Chromium)", path, buf.Len(), len(shot))
}
