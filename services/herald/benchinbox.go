package main

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/bench"
	"github.com/heraldhq/herald/shared/redact"
)

// runInboxBench is herald bench --inbox: against a running Herald.
func runInboxBench(cmd *cobra.Command) error {
	f := cmd.Flags()
	var ic bench.InboxConfig
	ic.Connections, _ = f.GetInt("inbox")
	ic.APIURL, _ = f.GetString("api")
	ic.MetricsURL, _ = f.GetString("metrics-url")
	ic.Key, _ = f.GetString("key")
	ic.Tenant, _ = f.GetString("tenant")
	ic.Items, _ = f.GetInt("items")
	ic.Rate, _ = f.GetInt("item-rate")
	ic.Idle, _ = f.GetDuration("idle")
	ic.NATSURL = os.Getenv("NATS_URL")
	if ic.Connections < 1 || ic.Items < 1 || ic.Rate < 1 {
		return fmt.Errorf("--inbox, --items and --item-rate: must be 1 or more (got %d, %d and %d)", ic.Connections, ic.Items, ic.Rate)
	}
	if ic.Key == "" {
		return fmt.Errorf("--key: an API key of --tenant with the send scope is required (herald keys create --tenant acme --name bench --scope send --json)")
	}
	var (
		mu   sync.Mutex
		bars phaseBars
	)
	report, err := bench.RunInbox(cmd.Context(), ic, func(p bench.InboxProgress) {
		mu.Lock()
		defer mu.Unlock()
		bars.set(cmd, p.Phase, p.Want, p.Done)
	})
	bars.finish()
	if err != nil {
		return redact.Error(err, ic.NATSURL)
	}
	if plot, _ := f.GetString("plot"); plot != "" {
		title := fmt.Sprintf("Herald: a new inbox item to its browser, %d streams open", report.Connections)
		if err := writePlot(plot, title, []plotLine{{"", report.Histogram}}); err != nil {
			return err
		}
	}
	if err := printJSONOr(cmd, report, func(w io.Writer) { printInboxReport(w, report) }); err != nil {
		return err
	}
	return report.Check()
}

func printInboxReport(w io.Writer, r bench.InboxReport) {
	tw := newTable(w)
	row := func(k, v string, args ...any) { tw.row(k, fmt.Sprintf(v, args...)) }
	row("streams", "%d subscribers, each with one Server-Sent Events stream open on the API", r.Connections)
	row("memory", "%.1f KB resident, %.1f KB of heap, %.1f goroutines per stream (RSS %.0f → %.0f MB, heap %.0f → %.0f MB)",
		r.RSSPerConnectionKB, r.HeapPerConnectionKB, r.GoroutinesPerConection, r.RSSBeforeMB, r.RSSAfterMB, r.HeapBeforeMB, r.HeapAfterMB)
	row("idle", "%.1f %% of a core over %.0f s with every stream open and nothing to send", r.IdleCPUPercent, r.IdleSeconds)
	row("new items", "%d of %d reached their stream: p50 %.1f ms · p90 %.1f ms · p99 %.1f ms · max %.1f ms from the write",
		r.Received, r.Items, r.P50ms, r.P90ms, r.P99ms, r.MaxMs)
	_ = tw.flush()
}
