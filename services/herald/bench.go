package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
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
(both must be 0), retries, CPU seconds and peak RSS. Deliveries are
scheduled as Herald schedules them by default, tenants served in turn
(scheduling.fair); --fifo takes them first come, first served.

  herald bench --orders 4000 --recipients 5                 # burst of 20,000 emails
  herald bench --orders 1000 --recipients 5 --rate 200      # 1,000 deliveries/s, open loop
  herald bench --channel sms --orders 2000 --recipients 5   # 10,000 text messages
  herald bench --channel webhook --orders 2000 --recipients 5
  herald bench --documents --fault-rate 0.2 --dup-ratio 0.1 --plot latency.svg

With --tenants, measure fairness across tenants instead (scheduling.fair):
tenant "bulk" publishes a burst of --bulk email deliveries straight onto
NOTIFY, then tenant "small" sends --small at --small-rate per second while the
burst drains. Made first come, first served and then fair, each beside both
tenants alone, on fresh streams each time; reported: small's latency from
publish to acceptance alone and beside the burst, bulk's throughput alone and
beside small, and their ratios (issue 14's targets: at most 2×, at least 90 %).

  herald bench --tenants                                    # 50,000 beside 100 at 10/s
  herald bench --tenants --bulk 5000 --small 50 --plot fairness.svg
  herald bench --tenants --bulk-tenants 1000                # the burst from 1,000 tenants at once

With --timers N, measure workflow timers instead: the workflow service alone
(no router) starts N runs of tenant "bench", each waiting a random whole
number of seconds between --min-wait and --max-wait on a JetStream schedule,
then sending; then N runs without a wait, on fresh streams. Reported: each
send's lateness after its timer's time (p50, p99; issue 34's target: p99 under
1 s at 100,000), also of the timers due once every run had started (their
wakes did not queue behind starts on runs.in), the rate runs were started at, peak RSS and RUNS's and
KV_runs's bytes per pending timer, and CPU per run with and without the wait.
--concurrency sets workflow.concurrency (default: the service's).

  herald bench --timers 100000                              # waits of 10-60 s
  herald bench --timers 1000 --min-wait 1s --max-wait 5s --plot lateness.svg

With --digests N, measure workflow digests instead: the workflow service alone
starts N runs of tenant "bench", low-stock alerts of --keys warehouses in
turn, one recipient, each gathered into its warehouse's digest for --window,
then sent. Reported: the digests sent (exactly --keys are expected, each
listing every alert of its warehouse once; anything else fails the run), the
rate alerts reached their digests, each digest's lateness after its window
closed (p50, p99), peak RSS, RUNS's and KV_runs's bytes, CPU per alert.

  herald bench --digests 10000 --keys 100                   # a window of 30 s
  herald bench --digests 1000 --keys 10 --window 30s --plot digests.svg

With --inbox N, measure the in-app inbox's live stream on a running Herald
(herald dev, or one API replica; NATS_URL for its server, else herald dev's):
N subscribers of --tenant, each with a token minted through the API with
--key and a Server-Sent Events stream held open; then the API process's
memory per stream and CPU at idle (from its metrics), and --items new items
written to random subscribers' feeds, each timed from its write to its
arrival on the stream (p50, p99). Every item must arrive.

  herald bench --inbox 10000 --key $KEY                     # 10,000 streams`,
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
	f.Bool("plain", false, "leave out the per-tenant checks a run makes by default (registered tenant, plan rate and quota, suppression list)")
	f.Bool("fifo", false, "take deliveries first come, first served (scheduling: {fair: false}) instead of serving tenants in turn")
	f.Bool("json", false, "print the report as JSON")
	f.String("plot", "", "write the latency percentile plot to this .svg or .png file")
	f.String("cpuprofile", "", "write a pprof CPU profile of the run to this file")
	f.String("memprofile", "", "write a pprof heap profile to this file once the run is over, before its services stop")
	f.Bool("tenants", false, "measure fairness across tenants: a bulk tenant's burst beside a small tenant's trickle, fair scheduling off and on")
	f.Int("bulk", 50_000, "with --tenants: the bulk tenant's burst")
	f.Int("bulk-tenants", 1, "with --tenants: spread the burst over this many tenants, each with a backlog at once (bulk0, bulk1, …)")
	f.Int("small", 100, "with --tenants: the small tenant's deliveries")
	f.Float64("small-rate", 10, "with --tenants: the small tenant's deliveries per second")
	f.Int("timers", 100_000, "measure workflow timers: this many runs, each waiting between --min-wait and --max-wait, then sending")
	f.Duration("min-wait", 10*time.Second, "with --timers: the shortest wait (whole seconds)")
	f.Duration("max-wait", 60*time.Second, "with --timers: the longest wait (whole seconds)")
	f.Int("digests", 10_000, "measure workflow digests: this many low-stock alerts, their warehouses taken in turn from --keys, gathered per warehouse for --window, then sent")
	f.Int("keys", 100, "with --digests: the warehouses, one digest each")
	f.Duration("window", bench.DigestsConfig{}.WithDefaults().Window, "with --digests: each digest's window (every alert must reach its digest within it)")
	defaults := bench.InboxConfig{}.WithDefaults()
	f.Int("inbox", defaults.Connections, "measure the inbox's live stream on a running Herald: this many subscribers, each with a Server-Sent Events stream open")
	f.String("api", defaults.APIURL, "with --inbox: the API's public address")
	f.String("metrics-url", defaults.MetricsURL, "with --inbox: the API process's metrics")
	f.String("key", "", "with --inbox: an API key of --tenant with the send scope, to mint subscriber tokens")
	f.String("tenant", defaults.Tenant, "with --inbox: the tenant whose subscribers connect")
	f.Int("items", defaults.Items, "with --inbox: new items timed from their write to their stream")
	f.Int("item-rate", defaults.Rate, "with --inbox: new items a second")
	f.Duration("idle", defaults.Idle, "with --inbox: how long every stream is held open with nothing to send (the API's CPU at idle)")
	return cmd
}

func runBench(cmd *cobra.Command, _ []string) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	f := cmd.Flags()
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
	if tenants, _ := f.GetBool("tenants"); tenants {
		return runTenantsBench(cmd, cfg.NATS.URL, cfg.Redis.URL)
	}
	if f.Changed("timers") {
		return runTimersBench(cmd, cfg.NATS.URL)
	}
	if f.Changed("digests") {
		return runDigestsBench(cmd, cfg.NATS.URL)
	}
	if f.Changed("inbox") {
		return runInboxBench(cmd)
	}
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
	bc.FIFO, _ = f.GetBool("fifo")
	bc.Plain, _ = f.GetBool("plain")
	if path, _ := f.GetString("memprofile"); path != "" {
		out, err := os.Create(path)
		if err != nil {
			return err
		}
		defer out.Close()
		bc.HeapProfile = out
	}
	if os.Getenv("NATS_URL") != "" {
		bc.NATSURL = cfg.NATS.URL
	}
	bc.RedisURL = cfg.Redis.URL
	plot, _ := f.GetString("plot")

	bar := progressbar.NewOptions(bc.Orders*max(bc.Recipients, 1), progressbar.OptionSetDescription("delivering"),
		progressbar.OptionSetWriter(cmd.ErrOrStderr()), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
		progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
	report, err := bench.Run(cmd.Context(), bc, func(p bench.Progress) { _ = bar.Set(p.Delivered) })
	_ = bar.Finish()
	if err != nil {
		return redact.Error(err, bc.NATSURL, bc.RedisURL)
	}
	if plot != "" {
		title := fmt.Sprintf("Herald %s: event published to notification accepted, %d deliveries", report.Channel, report.Delivered)
		if err := writePlot(plot, title, []plotLine{{"", report.Histogram}}); err != nil {
			return err
		}
	}
	if err := printJSONOr(cmd, report, func(w io.Writer) { printReport(w, bc, report) }); err != nil {
		return err
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
	tw := newTable(w)
	row := func(k, v string, args ...any) { tw.row(k, fmt.Sprintf(v, args...)) }
	row("workload", "%d orders × %d %s recipients, %s, documents: %v, dup-ratio %.2f", r.Orders, r.Recipients, r.Channel, mode, bc.Documents, bc.DuplicateRatio)
	if r.Channel == string(event.ChannelWebhook) {
		row("endpoints", "%d on loopback HTTP, signatures verified (%d refused); latency %s, fault rate %.2f (503)", r.Recipients, r.BadSignatures, bc.ProviderLatency, bc.FaultRate)
	} else {
		row("provider", "in-process %s provider, latency %s, fault rate %.2f", r.Channel, bc.ProviderLatency, bc.FaultRate)
	}
	row("servers", "%s", servers)
	row("scheduling", "%s", map[string]string{"fair": "fair: tenants served in turn (scheduling.fair)", "fifo": "first come, first served"}[r.Scheduling])
	row("tenant checks", "%s", map[bool]string{false: "registered tenant, plan rate and monthly quota, 1,000 suppressed addresses", true: "none (--plain)"}[bc.Plain])
	row("deliveries", "%d of %d", r.Delivered, r.Expected)
	row("throughput", "%.0f deliveries/s over %.2f s", r.PerSecond, r.Seconds)
	row("latency", "p50 %.1f ms · p90 %.1f ms · p99 %.1f ms · max %.1f ms", r.Latency.P50, r.Latency.P90, r.Latency.P99, r.Latency.Max)
	row("duplicates sent", "%d", r.Duplicates)
	row("lost", "%d", r.Lost)
	row("retries", "%d", r.Retries)
	row("jetstream writes", "%d (%.2f per delivery)", r.Writes, r.WritesPerDelivery)
	row("redis round trips", "%d (%.2f per delivery)", r.RedisRoundTrips, r.RedisRoundTripsPerDelivery)
	if r.Scheduling == "fair" {
		row("fair loop", "%.3f idle wakes, %.3f empty pulls per delivery; %d sends in flight at most at the end",
			r.Work.IdleWakesPerDelivery, r.Work.EmptyPullsPerDelivery, r.Work.Limit)
	}
	row("cpu", "%.2f s (%.2f ms per delivery) on %d cores", r.CPUSeconds, 1000*r.CPUSeconds/float64(max(r.Delivered, 1)), r.Cores)
	row("peak rss", "%.0f MB", r.PeakRSSMB)
	row("go", "%s", r.GoVersion)
	_ = tw.flush()
}

// plotLine is one latency distribution of a plot.
type plotLine struct {
	name string
	hist *hdrhistogram.Histogram
}

// writePlot draws latency against percentile on the usual HDR axis, where
// each step right is one more nine (90 %, 99 %, 99.9 %…), so the tail that
// matters is as wide as the body; one line per distribution.
func writePlot(path, title string, lines []plotLine) error {
	nines := func(q float64) float64 { return -math.Log10(1 - q/100) }
	var series []chart.Series
	for i, l := range lines {
		var xs, ys []float64
		for _, q := range []float64{0, 25, 50, 75, 90, 95, 97.5, 99, 99.5, 99.9, 99.95, 99.99} {
			xs = append(xs, nines(q))
			ys = append(ys, float64(l.hist.ValueAtQuantile(q))/1000)
		}
		xs, ys = append(xs, 4.5), append(ys, float64(l.hist.Max())/1000)
		series = append(series, chart.ContinuousSeries{Name: l.name, XValues: xs, YValues: ys,
			Style: chart.Style{StrokeColor: chart.GetDefaultColor(i), StrokeWidth: 2}})
	}
	ticks := []chart.Tick{{Value: 0, Label: "0%"}, {Value: 1, Label: "90%"}, {Value: 2, Label: "99%"},
		{Value: 3, Label: "99.9%"}, {Value: 4, Label: "99.99%"}, {Value: 4.5, Label: "max"}}
	graph := chart.Chart{
		Title:  title,
		XAxis:  chart.XAxis{Name: "percentile", Ticks: ticks},
		YAxis:  chart.YAxis{Name: "latency (ms)"},
		Series: series,
	}
	if len(lines) > 1 { // lines a thousand times apart: a log scale shows each
		graph.YAxis = chart.YAxis{Name: "latency (ms, log scale)", Range: &chart.LogarithmicRange{}}
		graph.Background = chart.Style{Padding: chart.Box{Top: 50, Left: 20, Right: 20, Bottom: 20}}
		graph.Elements = []chart.Renderable{chart.LegendLeft(&graph)}
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

// runTenantsBench is herald bench --tenants.
func runTenantsBench(cmd *cobra.Command, natsURL, redisURL string) error {
	f := cmd.Flags()
	var tc bench.TenantsConfig
	if os.Getenv("NATS_URL") != "" {
		tc.NATSURL = natsURL
	}
	tc.RedisURL = redisURL
	tc.Bulk, _ = f.GetInt("bulk")
	tc.BulkTenants, _ = f.GetInt("bulk-tenants")
	tc.Small, _ = f.GetInt("small")
	tc.SmallRate, _ = f.GetFloat64("small-rate")
	tc.ProviderLatency, _ = f.GetDuration("latency")
	tc.Concurrency, _ = f.GetInt("concurrency")
	plot, _ := f.GetString("plot")

	var (
		bar *progressbar.ProgressBar
		run string
	)
	report, err := bench.RunTenants(cmd.Context(), tc, func(p bench.TenantsProgress) {
		if p.Run != run {
			if bar != nil {
				_ = bar.Finish()
			}
			run = p.Run
			bar = progressbar.NewOptions(p.Expected, progressbar.OptionSetDescription(run),
				progressbar.OptionSetWriter(cmd.ErrOrStderr()), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
				progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
		}
		_ = bar.Set(p.Delivered)
	})
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return redact.Error(err, tc.NATSURL, tc.RedisURL)
	}
	if plot != "" {
		if err := writeTenantsPlot(plot, report); err != nil {
			return err
		}
	}
	if err := printJSONOr(cmd, report, func(w io.Writer) { printTenantsReport(w, report) }); err != nil {
		return err
	}
	dups, lost := 0, 0
	for _, m := range []bench.Mode{report.FIFO, report.Fair} {
		for _, p := range []bench.Phase{m.SmallAlone, m.BulkAlone, m.Together} {
			dups, lost = dups+p.Duplicates(), lost+p.Lost()
		}
	}
	if dups > 0 || lost > 0 {
		return fmt.Errorf("%d duplicates sent, %d deliveries lost", dups, lost)
	}
	return nil
}

func printTenantsReport(w io.Writer, r bench.TenantsReport) {
	where := func(embedded bool, env string) string {
		if embedded {
			return "embedded, fresh for each run"
		}
		return env
	}
	tw := newTable(w)
	line := func(k, v string, args ...any) { tw.row(k, fmt.Sprintf(v, args...)) }
	bulk := bench.BulkTenant
	if r.BulkTenants > 1 {
		bulk = fmt.Sprintf("%s (%d tenants)", bulk, r.BulkTenants)
	}
	line("workload", "%s: %d email deliveries at once, then %s: %d at %g/s, straight onto NOTIFY", bulk, r.Bulk, bench.SmallTenant, r.Small, r.SmallRate)
	line("provider", "in-process email provider, latency %g ms; %d sends at once per priority", r.ProviderLatencyMS, r.Concurrency)
	line("servers", "NATS %s; Redis %s", where(r.EmbeddedNATS, "NATS_URL"), where(r.EmbeddedRedis, "REDIS_URL"))
	line("go", "%s on %d cores", r.GoVersion, r.Cores)
	_ = tw.flush()
	fmt.Fprintln(w)

	tw = newTable(w)
	row := func(k string, f func(m bench.Mode) string) { tw.row(k, f(r.FIFO), f(r.Fair)) }
	latency := func(t *bench.TenantResult) string {
		return fmt.Sprintf("%.1f · %.1f · %.1f ms", t.Latency.P50, t.Latency.P99, t.Latency.Max)
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	tw.row("", "first come, first served", "fair (scheduling.fair)")
	row(bench.SmallTenant+" alone: p50 · p99 · max", func(m bench.Mode) string { return latency(m.SmallAlone.Small) })
	row(bench.SmallTenant+" beside the burst", func(m bench.Mode) string { return latency(m.Together.Small) })
	row("  p99 ratio (target ≤ 2×)", func(m bench.Mode) string {
		return fmt.Sprintf("%.2f× (%s)", m.SmallP99Ratio, verdict(m.SmallP99Ratio > 0 && m.SmallP99Ratio <= 2))
	})
	row(bench.BulkTenant+" alone", func(m bench.Mode) string { return fmt.Sprintf("%.0f deliveries/s", m.BulkAlone.Bulk.PerSecond) })
	row(bench.BulkTenant+" beside "+bench.SmallTenant, func(m bench.Mode) string { return fmt.Sprintf("%.0f deliveries/s", m.Together.Bulk.PerSecond) })
	row("  throughput ratio (target ≥ 90 %)", func(m bench.Mode) string {
		return fmt.Sprintf("%.1f %% (%s)", 100*m.BulkThroughputRatio, verdict(m.BulkThroughputRatio >= 0.9))
	})
	row(bench.BulkTenant+" still waiting at "+bench.SmallTenant+"'s last", func(m bench.Mode) string {
		return fmt.Sprintf("%d of %d", m.Together.BulkLeft, r.Bulk)
	})
	row("duplicates sent, lost", func(m bench.Mode) string {
		d, l := 0, 0
		for _, p := range []bench.Phase{m.SmallAlone, m.BulkAlone, m.Together} {
			d, l = d+p.Duplicates(), l+p.Lost()
		}
		return fmt.Sprintf("%d, %d", d, l)
	})
	_ = tw.flush()
	fmt.Fprintf(w, "\nfair beside the burst, against first come, first served alone (today's idle system and single-tenant run):\n")
	fmt.Fprintf(w, "  %s's p99 %.2f× (%s), %s's throughput %.1f %% (%s)\n", bench.SmallTenant, r.FairVsFIFO.SmallP99Ratio,
		verdict(r.FairVsFIFO.SmallP99Ratio > 0 && r.FairVsFIFO.SmallP99Ratio <= 2), bench.BulkTenant,
		100*r.FairVsFIFO.BulkThroughputRatio, verdict(r.FairVsFIFO.BulkThroughputRatio >= 0.9))
}

// writeTenantsPlot draws the small tenant's latency in the four runs it
// is in.
func writeTenantsPlot(path string, r bench.TenantsReport) error {
	title := fmt.Sprintf("Herald: %s's %d deliveries at %g/s, publish to acceptance, beside %s's burst of %d",
		bench.SmallTenant, r.Small, r.SmallRate, bench.BulkTenant, r.Bulk)
	return writePlot(path, title, []plotLine{
		{"first come, first served: alone", r.FIFO.SmallAlone.Small.Histogram},
		{"first come, first served: beside the burst", r.FIFO.Together.Small.Histogram},
		{"fair: alone", r.Fair.SmallAlone.Small.Histogram},
		{"fair: beside the burst", r.Fair.Together.Small.Histogram},
	})
}

// runTimersBench is herald bench --timers.
func runTimersBench(cmd *cobra.Command, natsURL string) error {
	f := cmd.Flags()
	var tc bench.TimersConfig
	if os.Getenv("NATS_URL") != "" {
		tc.NATSURL = natsURL
	}
	tc.Timers, _ = f.GetInt("timers")
	tc.MinWait, _ = f.GetDuration("min-wait")
	tc.MaxWait, _ = f.GetDuration("max-wait")
	if f.Changed("concurrency") {
		tc.Concurrency, _ = f.GetInt("concurrency")
	}
	if tc.Timers < 1 {
		return fmt.Errorf("--timers: must be 1 or more (got %d)", tc.Timers)
	}
	plot, _ := f.GetString("plot")

	var bars phaseBars
	report, err := bench.RunTimers(cmd.Context(), tc, func(p bench.TimersProgress) {
		bars.set(cmd, p.Phase, p.Expected, map[bool]int{true: p.Started, false: p.Sent}[p.Phase == bench.TimersStarting])
	})
	bars.finish()
	if err != nil {
		return redact.Error(err, tc.NATSURL)
	}
	if plot != "" {
		title := fmt.Sprintf("Herald: %d workflow timers of %g-%g s, lateness after the timer's time", report.Timers, report.MinWaitSeconds, report.MaxWaitSeconds)
		if err := writePlot(plot, title, []plotLine{{"", report.Histogram}}); err != nil {
			return err
		}
	}
	if err := printJSONOr(cmd, report, func(w io.Writer) { printTimersReport(w, report) }); err != nil {
		return err
	}
	dups, lost := report.Waiting.Duplicates+report.NoWait.Duplicates, report.Waiting.Lost+report.NoWait.Lost
	if dups > 0 || lost > 0 || report.Early > 0 || report.Short > 0 {
		return fmt.Errorf("%d runs sent twice, %d never sent, %d before their timer's time, %d before their wait", dups, lost, report.Early, report.Short)
	}
	return nil
}

// phaseBars shows a long run's progress, a bar per phase.
type phaseBars struct {
	bar   *progressbar.ProgressBar
	phase string
}

func (b *phaseBars) set(cmd *cobra.Command, phase string, expected, n int) {
	if phase != b.phase {
		b.finish()
		b.phase = phase
		b.bar = progressbar.NewOptions(expected, progressbar.OptionSetDescription(phase),
			progressbar.OptionSetWriter(cmd.ErrOrStderr()), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
			progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	_ = b.bar.Set(n)
}

func (b *phaseBars) finish() {
	if b.bar != nil {
		_ = b.bar.Finish()
	}
}

func printTimersReport(w io.Writer, r bench.TimersReport) {
	verdict := map[bool]string{true: "met", false: "missed"}
	servers := "NATS embedded (its CPU and memory count below)"
	if !r.EmbeddedNATS {
		servers = "NATS_URL"
	}
	tw := newTable(w)
	row := func(k, v string, args ...any) { tw.row(k, fmt.Sprintf(v, args...)) }
	row("workload", "%d runs each waiting %g-%g s, then a send; then %d runs without a wait", r.Timers, r.MinWaitSeconds, r.MaxWaitSeconds, r.NoWait.Runs)
	row("servers", "%s; the workflow service alone, workflow.concurrency %d", servers, r.Concurrency)
	row("timers", "%d of %d fired once; %d sent twice, %d lost, %d early, %d before their wait", r.Waiting.Sent, r.Waiting.Runs,
		r.Waiting.Duplicates, r.Waiting.Lost, r.Early, r.Short)
	late := func(k string, l bench.Latency) {
		row(k, "p50 %.1f ms · p90 %.1f ms · p99 %.1f ms · max %.1f ms (target p99 < 1 s: %s)",
			l.P50, l.P90, l.P99, l.Max, verdict[l.P99 < 1000])
	}
	late("lateness", r.Lateness)
	late(fmt.Sprintf("  %d due after start", r.AfterStart), r.LatenessAfterStart)
	row("started", "%.0f runs/s waiting (%d armed in %.2f s)", r.Waiting.StartedPerSecond, r.Waiting.Runs, r.Waiting.StartSeconds)
	row("without a wait", "%.0f runs/s started to sent (%d in %.2f s); %d sent twice, %d lost",
		r.NoWait.StartedPerSecond, r.NoWait.Runs, r.NoWait.StartSeconds, r.NoWait.Duplicates, r.NoWait.Lost)
	row("cpu per run", "%.3f ms waiting, %.3f ms without a wait: %.2f× on %d cores", r.Waiting.CPUPerRunMS, r.NoWait.CPUPerRunMS, r.CostRatio, r.Cores)
	row("peak rss", "%.0f MB (%.0f MB before): %.2f KB per timer", r.PeakRSSMB, r.BaseRSSMB, r.RSSPerTimerKB)
	row("stores at peak", "%d waiting (%d sent): RUNS %.1f MB (%.0f B each), KV_runs %.1f MB (%.0f B each)",
		r.PeakPending, r.SentAtPeak, float64(r.RunsBytes)/(1<<20), r.RunsBytesPerPending, float64(r.KVBytes)/(1<<20), r.KVBytesPerPending)
	row("go", "%s", r.GoVersion)
	_ = tw.flush()
}
