package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// workflowProcess, set in a child's environment, makes the test binary a
// workflow process (TestMain): `herald run workflow` as a process the test
// kills with SIGKILL while its runs wait.
const workflowProcess = "HERALD_E2E_WORKFLOW"

// runWorkflowProcess runs the workflow service as `herald run workflow`
// does, on NATS_URL, until it is killed.
func runWorkflowProcess() int {
	var cfg app.Config
	cfg.Services = []string{"workflow"}
	cfg.NATS.URL = os.Getenv("NATS_URL")
	cfg.HTTP.Listen, cfg.API.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Streams.SkipApply = true
	a, err := app.New(cfg, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err == nil {
		err = a.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	select {} // until killed
}

// runStates counts acme's runs by state.
func runStates(t *testing.T, js jetstream.JetStream) map[workflow.State]int {
	t.Helper()
	runs, err := workflow.OpenRuns(heraldtest.Context(t), js)
	require.NoError(t, err)
	out := map[workflow.State]int{}
	for f := (workflow.Filter{Limit: 100}); ; {
		page, err := runs.List(heraldtest.Context(t), "acme", f)
		require.NoError(t, err)
		for _, r := range page.Runs {
			out[r.State]++
		}
		if page.Next == "" {
			return out
		}
		f.Cursor = page.Next
	}
}

// Herald's workflow process is killed with SIGKILL while a thousand runs
// wait on their timers; another starts. Every run fires once: each of the
// thousand suppliers receives exactly one email, none two.
func TestRunsWaitingThroughAKillFireOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("a thousand runs through a kill")
	}
	t.Parallel()
	const runs = 1000
	wait := 20 * time.Second
	p := startPipeline(t, func(c *app.Config) {
		c.Services = slices.DeleteFunc(slices.Clone(app.Targets), func(s string) bool { return s == "workflow" || s == "outbox-relay" })
		c.Router.Routes = []router.Route{{Event: "order.created", Template: "purchase_order", Channels: []event.Channel{event.ChannelEmail},
			Steps: []router.Step{{Wait: &router.WaitStep{For: router.Duration(wait)}}, {Send: &router.SendStep{}}}}}
	})
	w := &processes{t: t, env: []string{workflowProcess + "=1", "NATS_URL=" + p.dev.NATS.URL()}}
	w.start()
	defer w.stop()
	began := time.Now()
	for i := range runs {
		p.publishAsync(t, "orders.created", "", sample(t, "order.created.json", func(m map[string]any) {
			m["id"] = fmt.Sprintf("evt-wf-%d", i)
			data := m["data"].(map[string]any)
			data["order"].(map[string]any)["id"] = fmt.Sprintf("PO-WF-%04d", i)
			data["recipients"] = []any{map[string]any{"role": "supplier", "email": fmt.Sprintf("s%04d@zarya.example", i), "channels": []any{"email"}}}
		}))
	}
	p.waitPublished(t)
	// Killed once every run has started: all of them waiting, unless a
	// slow machine took longer than the wait to start them.
	var states map[workflow.State]int
	require.Eventually(t, func() bool {
		states = runStates(t, p.js)
		return states[workflow.Waiting]+states[workflow.Done] == runs
	}, 2*time.Minute, 500*time.Millisecond, "a thousand runs started")
	w.kill()
	t.Logf("killed %s after the first event, with %d runs waiting", time.Since(began).Round(time.Millisecond), states[workflow.Waiting])

	w.start()
	require.Eventually(t, func() bool { return runStates(t, p.js)[workflow.Done] == runs }, 3*time.Minute, 500*time.Millisecond,
		"every run fires")
	p.settle(t)
	got := map[string]int{}
	for _, m := range p.mail(t) {
		got[m.To]++
	}
	require.Len(t, got, runs, "each supplier")
	for to, n := range got {
		require.Equal(t, 1, n, "%s received %d emails", to, n)
	}
}
