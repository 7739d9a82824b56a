package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	chart "github.com/wcharczuk/go-chart/v2"

	"github.com/heraldhq/herald/services/bench"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/redact"
)

func benchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the pipeline: throughput, end-to-end latency, duplicates and losses",
		Long: `Run Herald's real router, renderer and delivery workers of one channel in
this process, on embedded NATS and Redis (or NATS_URL and REDIS_URL — use
servers dedicated to the benchmark), against a far side whose latency and
fault rate you choose: an in-process provider for email and sms; for webhook,
loopback HTTP endpoints registered for the run, which verify every Standard
Webhooks signature and answer 503 on a fault (private networks are allowed for
the run only). Publish orders × recipients notifications as a burst or at an
open-loop rate; and report deliveries per second, the latency from event
publish to acceptance (HDR histogram), duplicates sent and notifications lost
(both must be 0), retries, CPU seconds and peak RSS.

  herald bench --orders 4000 --recipients 5                 # burst of 20,000 emails
  herald bench --orders 1000 --recipients 5 --rate 200      # 1,000 deliveries/s, open loop
  herald bench --channel sms --orders 2000 --recipients 5   # 10,000 text messages
  herald bench --channel webhook --orders 2000 --recipients 5
  herald bench --documents --fault-rate 0.2 --dup-ratio 0.1 --plot latency.svg`,
		Args: cobra.NoArgs,
		RunE: runBench,
	}
	f := cmd.Flags()
	f.String("channel", "email", "channel to measure: email, sms or webhook")
	f.Int("orders", 4000, "orders to publish")
	f.Int("recipients", 5, "recipients per order, each reached on the channel (webhook: at most 20, one endpoint each)")
	f.Float64("dup-ratio", 0, "share of events published twice (half at once, half under a new id)")
	f.Bool("documents", false, "render a purchase order PDF per order, which each notification waits for (emails attach it)")
	f.Float64("rate", 0, "open-loop rate in events per second (0: one burst)")
	f.Duration("latency", 0, "how long the fake provider, or the webhook endpoint, takes to answer")
	f.Float64("fault-rate", 0, "share of calls that fail transiently (a webhook endpoint answers 503)")
	f.Int("concurrency", 64, "sends at once per priority")
	f.Bool("json", false, "print the report as JSON")
	f.String("plot", "", "write the latency percentile plot to this .svg or .png file")
	f.String("cpuprofile", "", "write a pprof CPU profile of the run to this file")
	return cmd
}

func runBench(cmd *cobra.Command, _ []string) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	f := cmd.Flags()
	var bc bench.Config
	channel, _ := f.GetString("channel")
	bc.Channel = event.Channel(channel)
	if !slices.Contains(bench.Channels, bc.Channel) {
		return fmt.Errorf("--channel: %q is not one of email, sms, webhook", channel)
	}
	bc.Orders, _ = f.GetInt("orders")
	bc.Recipients, _ = f.GetInt("recipients")
	bc.DuplicateRatio, _ = f.GetFloat64("dup-ratio")
	bc.Documents, _ = f.GetBool("documents")
	bc.Rate, _ = f.GetFloat64("rate")
	bc.ProviderLatency, _ = f.GetDuration("latency")
	bc.FaultRate, _ = f.GetFloat64("fault-rate")
	bc.Concurrency, _ = f.GetInt("concurrency")
	if os.Getenv("NATS_URL") != "" {
		bc.NATSURL = cfg.NATS.URL
	}
	bc.RedisURL = cfg.Redis.URL
	asJSON, _ := f.GetBool("json")
	plot, _ := f.GetString("plot")

	if path, _ := f.GetString("cpuprofile"); path != "" {
		out, err := os.Create(path)
		if err != nil {
			return err
		}
		defer out.Close()
		if err := pprof.StartCPUProfile(out); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	bar := progressbar.NewOptions(bc.Orders*max(bc.Recipients, 1), progressbar.OptionSetDescription("delivering"),
		progressbar.OptionSetWriter(cmd.ErrOrStderr()), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
		progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
	report, err := bench.Run(cmd.Context(), bc, func(p bench.Progress) { _ = bar.Set(p.Delivered) })
	_ = bar.Finish()
	if err != nil {
		return redact.Error(err, bc.NATSURL, bc.RedisURL)
	}
	if plot != "" {
		if err := writePlot(plot, report); err != nil {
			return err
		}
	}
	if asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		printReport(cmd.OutOrStdout(), bc, report)
	}
	if report.BadSignatures > 0 {
		return fmt.Errorf("%d webhooks did not verify; %d duplicates sent, %d notifications lost", report.BadSignatures, report.Duplicates, report.Lost)
	}
	if report.Duplicates > 0 || report.Lost > 0 {
		return fmt.Errorf("%d duplicates sent, %d notifications lost", report.Duplicates, report.Lost)
	}
	return nil
}

func printReport(w io.Writer, bc bench.Config, r bench.Report) {
	mode := "burst"
	if bc.Rate > 0 {
		mode = fmt.Sprintf("open loop, %.0f events/s (%.0f deliveries/s)", bc.Rate, bc.Rate*float64(r.Recipients))
	}
	where := func(embedded bool, env string) string {
		if embedded {
			return "embedded (its CPU and memory count below)"
		}
		return env
	}
	servers := fmt.Sprintf("NATS %s; Redis %s", where(r.EmbeddedNATS, "NATS_URL"), where(r.EmbeddedRedis, "REDIS_URL"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(v, args...)) }
	row("workload", "%d orders × %d %s recipients, %s, documents: %v, dup-ratio %.2f", r.Orders, r.Recipients, r.Channel, mode, bc.Documents, bc.DuplicateRatio)
	if r.Channel == string(event.ChannelWebhook) {
		row("endpoints", "%d on loopback HTTP, signatures verified (%d refused); latency %s, fault rate %.2f (503)", r.Recipients, r.BadSignatures, bc.ProviderLatency, bc.FaultRate)
	} else {
		row("provider", "in-process %s provider, latency %s, fault rate %.2f", r.Channel, bc.ProviderLatency, bc.FaultRate)
	}
	row("servers", "%s", servers)
	row("deliveries", "%d of %d", r.Delivered, r.Expected)
	row("throughput", "%.0f deliveries/s over %.2f s", r.PerSecond, r.Seconds)
	row("latency", "p50 %.1f ms · p90 %.1f ms · p99 %.1f ms · max %.1f ms", r.Latency.P50, r.Latency.P90, r.Latency.P99, r.Latency.Max)
	row("duplicates sent", "%d", r.Duplicates)
	row("lost", "%d", r.Lost)
	row("retries", "%d", r.Retries)
	row("cpu", "%.2f s (%.2f ms per delivery) on %d cores", r.CPUSeconds, 1000*r.CPUSeconds/float64(max(r.Delivered, 1)), r.Cores)
	row("peak rss", "%.0f MB", r.PeakRSSMB)
	row("go", "%s", r.GoVersion)
	_ = tw.Flush()
}

// writePlot draws latency against percentile on the usual HDR axis, where
// each step right is one more nine (90 %, 99 %, 99.9 %…), so the tail that
// matters is as wide as the body.
func writePlot(path string, r bench.Report) error {
	nines := func(q float64) float64 { return -math.Log10(1 - q/100) }
	var xs, ys []float64
	for _, q := range []float64{0, 25, 50, 75, 90, 95, 97.5, 99, 99.5, 99.9, 99.95, 99.99} {
		xs = append(xs, nines(q))
		ys = append(ys, float64(r.Histogram.ValueAtQuantile(q))/1000)
	}
	xs, ys = append(xs, 4.5), append(ys, float64(r.Histogram.Max())/1000)
	ticks := []chart.Tick{{Value: 0, Label: "0%"}, {Value: 1, Label: "90%"}, {Value: 2, Label: "99%"},
		{Value: 3, Label: "99.9%"}, {Value: 4, Label: "99.99%"}, {Value: 4.5, Label: "max"}}
	graph := chart.Chart{
		Title:  fmt.Sprintf("Herald %s: event published to notification accepted, %d deliveries", r.Channel, r.Delivered),
		XAxis:  chart.XAxis{Name: "percentile", Ticks: ticks},
		YAxis:  chart.YAxis{Name: "latency (ms)"},
		Series: []chart.Series{chart.ContinuousSeries{XValues: xs, YValues: ys}},
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	render := chart.SVG
	if strings.EqualFold(filepath.Ext(path), ".png") {
		render = chart.PNG
	}
	if err := graph.Render(render, out); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return out.Close()
}
