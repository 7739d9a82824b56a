package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/bench"
	"github.com/heraldhq/herald/shared/redact"
)

// runDigestsBench is herald bench --digests.
func runDigestsBench(cmd *cobra.Command, natsURL string) error {
	f := cmd.Flags()
	var dc bench.DigestsConfig
	if os.Getenv("NATS_URL") != "" {
		dc.NATSURL = natsURL
	}
	dc.Digests, _ = f.GetInt("digests")
	dc.Keys, _ = f.GetInt("keys")
	dc.Window, _ = f.GetDuration("window")
	if f.Changed("concurrency") {
		dc.Concurrency, _ = f.GetInt("concurrency")
	}
	if dc.Digests < 1 || dc.Keys < 1 {
		return fmt.Errorf("--digests and --keys: must be 1 or more (got %d and %d)", dc.Digests, dc.Keys)
	}
	plot, _ := f.GetString("plot")
	var bars phaseBars
	report, err := bench.RunDigests(cmd.Context(), dc, func(p bench.DigestsProgress) {
		if p.Phase == bench.DigestsGathering {
			bars.set(cmd, p.Phase, p.Expected, p.Gathered)
		} else {
			bars.set(cmd, p.Phase, p.DigestsWanted, p.DigestsSent)
		}
	})
	bars.finish()
	if err != nil {
		return redact.Error(err, dc.NATSURL)
	}
	if plot != "" {
		title := fmt.Sprintf("Herald: %d alerts into %d digests of %g s, lateness after the window closed", report.Alerts, report.Keys, report.WindowSeconds)
		if err := writePlot(plot, title, []plotLine{{"", report.Histogram}}); err != nil {
			return err
		}
	}
	if err := printJSONOr(cmd, report, func(w io.Writer) { printDigestsReport(w, report) }); err != nil {
		return err
	}
	return report.Check()
}

func printDigestsReport(w io.Writer, r bench.DigestsReport) {
	servers := "NATS embedded (its CPU and memory count below)"
	if !r.EmbeddedNATS {
		servers = "NATS_URL"
	}
	tw := newTable(w)
	row := func(k, v string, args ...any) { tw.row(k, fmt.Sprintf(v, args...)) }
	row("workload", "%d low-stock alerts of %d warehouses in turn, one recipient, a digest window of %g s, then a send", r.Alerts, r.Keys, r.WindowSeconds)
	row("servers", "%s; the workflow service alone, workflow.concurrency %d", servers, r.Concurrency)
	row("digests", "%d sent for %d warehouses; %d split, %d mixed, %d empty, %d messages left", r.Digests, r.Keys, r.Split, r.Mixed, r.Empty, r.Left)
	row("alerts", "%d of %d listed once; %d twice, %d never", r.Sent, r.Alerts, r.SentTwice, r.Lost)
	row("gathered", "%.0f alerts/s (%d in %.2f s); the last digest %.2f s after the first start", r.StartedPerSecond, r.Alerts, r.GatherSeconds, r.Seconds)
	l := r.Lateness
	row("lateness", "p50 %.1f ms · p90 %.1f ms · p99 %.1f ms · max %.1f ms, a warehouse's first digest after its window closed (%d without a flush seen)",
		l.P50, l.P90, l.P99, l.Max, r.Unmatched)
	row("cpu", "%.2f s: %.3f ms per alert on %d cores", r.CPUSeconds, r.CPUPerAlertMS, r.Cores)
	row("peak rss", "%.0f MB (%.0f MB before)", r.PeakRSSMB, r.BaseRSSMB)
	row("stores at peak", "%d gathered and not yet sent: RUNS %.1f MB, KV_runs %.1f MB", r.PeakPending, float64(r.RunsBytes)/(1<<20), float64(r.KVBytes)/(1<<20))
	row("go", "%s", r.GoVersion)
	_ = tw.flush()
}
