package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/event"
)

// An operator follows a purchase order's reminder workflow in a real
// browser: the Runs page lists acme's runs — one the supplier's
// confirmation ended, one waiting — the waiting run's page shows its
// steps, its timeline and the event that started it, and Cancel ends it.
func TestConsoleRunsInTheBrowser(t *testing.T) {
	t.Parallel()
	browserPath := chromium(t)
	p := startPipeline(t, func(c *app.Config) {
		c.Router.Routes = router.DefaultRoutes()
		po := &c.Router.Routes[0]
		po.Roles, po.CancelOn = []string{"supplier"}, []string{"order.cancelled"}
		po.Steps = []router.Step{
			{Send: &router.SendStep{Channels: []event.Channel{event.ChannelEmail}}},
			{Wait: &router.WaitStep{For: router.Duration(24 * time.Hour), UntilEvent: "order.confirmed"}},
			{Send: &router.SendStep{Roles: []string{"buyer"}, Channels: []event.Channel{event.ChannelEmail}}},
		}
	})
	admin, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Admin: true, Name: "console e2e"})
	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
	p.publish(t, "orders.created", "evt-2026-11-30-0002", sample(t, "order.created.json", func(m map[string]any) {
		m["id"] = "evt-2026-11-30-0002"
		m["data"].(map[string]any)["order"].(map[string]any)["id"] = "PO-2026-0043"
	}))
	require.Eventually(t, func() bool { return runStates(t, p.js)[workflow.Waiting] == 2 }, 30*time.Second, 100*time.Millisecond,
		"both orders' runs wait for the supplier")
	p.publish(t, "orders.confirmed", "evt-2026-11-30-0003", sample(t, "order.confirmed.json", nil))
	require.Eventually(t, func() bool { return runStates(t, p.js)[workflow.Done] == 1 }, 30*time.Second, 100*time.Millisecond,
		"the confirmation ends PO-2026-0042's run")

	b := openBrowser(t, browserPath, "http://"+p.dev.App.APIAddr())
	b.open("/console/signin")
	b.signIn(admin)
	b.follow(`nav a[href="/console/runs"]`)
	b.do(chromedp.SendKeys(chromedp.CSS(`form[aria-label="Filter runs"] input[name="tenant"]`), "acme"))
	b.follow(`form[aria-label="Filter runs"] button[type="submit"]`)
	runs := b.text("table.runs")
	require.Contains(t, runs, "PO-2026-0042")
	require.Contains(t, runs, "PO-2026-0043")
	require.Contains(t, runs, "2: wait 24h or order.confirmed")
	b.screenshot("runs")
	b.onPhone("")

	b.follow(`table.runs tr:has(td > a[href*="order=PO-2026-0043"]) a[href^="/console/runs/run_"]`)
	require.Contains(t, b.text("ol.steps"), "wait: wait 24h or order.confirmed (now)")
	require.Contains(t, b.text("table.timeline"), "waiting")
	require.Contains(t, b.text("pre.payload"), `"id": "PO-2026-0043"`)
	b.screenshot("run")
	b.onPhone("")

	b.follow(`form[action$="/cancel"] button[type="submit"]`)
	require.Equal(t, "Cancelled: nothing more is sent.", b.text("p.notice"))
	require.Equal(t, "cancelled", b.text("dl.facts strong"))
	require.True(t, strings.Contains(b.text("table.timeline"), "by the console (key "), "the timeline says by whom")
	require.Equal(t, 0, runStates(t, p.js)[workflow.Waiting], "nothing waits")
	b.requireNoErrors()
}
