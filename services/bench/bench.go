// Package bench measures Herald as it runs: the real router, renderer and
// delivery workers of one channel, on embedded NATS and Redis (or the ones
// NATS_URL and REDIS_URL name), against a far side whose latency and fault
// rate are set by the caller — an in-process provider for email and sms,
// loopback HTTP endpoints that verify every signature for webhook. It
// publishes a workload — a burst, or an open-loop rate — and reports
// throughput, end-to-end latency from event publish to acceptance, and the
// two numbers that must be zero: duplicates sent and notifications lost.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/pdf"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/redact"
	"github.com/heraldhq/herald/shared/redisconn"
	"github.com/heraldhq/herald/streams"
)

// Config is one benchmark run.
type Config struct {
	// NATSURL and RedisURL point at servers to use; empty means embedded
	// ones, started for the run (and counted in its CPU and memory).
	NATSURL  string
	RedisURL string
	// Channel is the channel measured: email (the default), sms or
	// webhook.
	Channel event.Channel
	// Orders and Recipients make the workload: Orders × Recipients
	// notifications, each recipient reached on Channel.
	Orders     int
	Recipients int
	// DuplicateRatio of the events are published twice: half again at
	// once (the stream's duplicate window drops them), half under a new
	// event id (only the delivery ledger stops them).
	DuplicateRatio float64
	// Documents renders a purchase order PDF per order, which each
	// notification waits for: an email attaches it, a webhook refers to it.
	Documents bool
	// Rate is the open-loop publishing rate in events per second; 0
	// publishes everything at once (a burst).
	Rate float64
	// ProviderLatency is how long the far side takes to answer.
	ProviderLatency time.Duration
	// FaultRate is the share of calls the far side fails transiently (a
	// webhook endpoint answers 503).
	FaultRate float64
	// Concurrency is sends at once per priority. Defaults to 64.
	Concurrency int
	// FIFO takes deliveries first come, first served, as
	// scheduling: {fair: false} does; by default tenants are served in
	// turn, as Herald does by default (scheduling.fair).
	FIFO bool
	// Plain leaves out the per-tenant checks every run makes by default
	// (features.go): the tenant registry, the plan's rate and quota, the
	// suppression list — to see what they cost.
	Plain bool
	// Timeout ends the run when nothing more is delivered for this long.
	// Defaults to 45s: longer than a provider circuit's cool-down (30s),
	// during which nothing may be delivered, so that notifications waiting
	// out an open circuit are not counted as lost.
	Timeout time.Duration
	// HeapProfile, when set, receives a pprof heap profile taken once the
	// run is over, before its services stop: what the run keeps.
	HeapProfile io.Writer
	// Logger receives the services' warnings. Defaults to discarding.
	Logger *slog.Logger
}

// Channels are the channels a run can measure.
var Channels = []event.Channel{event.ChannelEmail, event.ChannelSMS, event.ChannelWebhook}

// Progress is how far a run has come.
type Progress struct {
	Published, Delivered, Expected int
}

// Report is what a run measured.
type Report struct {
	Channel    string `json:"channel"`
	Scheduling string `json:"scheduling"` // fair, or fifo
	Orders     int    `json:"orders"`
	Recipients int    `json:"recipients"`
	Expected   int    `json:"expected"`
	Delivered  int    `json:"delivered"`
	Duplicates int    `json:"duplicates_sent"`
	Lost       int    `json:"lost"`
	Retries    int64  `json:"retries"`
	// BadSignatures are webhooks the endpoints refused because their
	// signature did not verify; each is also lost.
	BadSignatures int     `json:"bad_signatures,omitempty"`
	Seconds       float64 `json:"seconds"`
	PerSecond     float64 `json:"deliveries_per_second"`
	Latency       Latency `json:"latency_ms"`
	// Writes are the messages JetStream stored during the run, in every
	// stream and bucket: events, deliveries, ledger writes, counters,
	// status events, acknowledged or not.
	Writes            int64   `json:"jetstream_writes"`
	WritesPerDelivery float64 `json:"jetstream_writes_per_delivery"`
	// RedisRoundTrips are the round trips the run's services made to
	// Redis: a command alone, or a pipeline of many, is one.
	RedisRoundTrips            int64   `json:"redis_round_trips"`
	RedisRoundTripsPerDelivery float64 `json:"redis_round_trips_per_delivery"`
	CPUSeconds                 float64 `json:"cpu_seconds"`
	// Work is what the fair loop did for no delivery, per delivery: a
	// count the machine's load does not move, unlike the latencies.
	Work          Work    `json:"fair_loop"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
	EmbeddedNATS  bool    `json:"embedded_nats"`
	EmbeddedRedis bool    `json:"embedded_redis"`
	Cores         int     `json:"cores"`
	GoVersion     string  `json:"go_version"`

	Histogram *hdrhistogram.Histogram `json:"-"`
}

// Work is what the fair loop did during a run for no delivery.
type Work struct {
	// IdleWakesPerDelivery are workers woken to find no tenant in line.
	IdleWakesPerDelivery float64 `json:"idle_wakes_per_delivery"`
	// EmptyPullsPerDelivery are pulls that found nothing.
	EmptyPullsPerDelivery float64 `json:"empty_pulls_per_delivery"`
	// Limit is how many sends the loop let run at once at the run's
	// end (it follows the share of their time spent waiting on the
	// provider).
	Limit int `json:"in_flight_limit"`
}

// work is the fair loop's work between from and to, over delivered.
func work(from, to consumer.FairWork, delivered int) Work {
	per := func(n int64) float64 { return float64(n) / float64(max(delivered, 1)) }
	return Work{IdleWakesPerDelivery: per(to.IdleWakes - from.IdleWakes),
		EmptyPullsPerDelivery: per(to.EmptyPulls - from.EmptyPulls), Limit: to.Limit}
}

// Latency is the end-to-end latency distribution, event publish to
// acceptance by the far side, in milliseconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Run runs one benchmark, calling progress about four times a second.
func Run(ctx context.Context, cfg Config, progress func(Progress)) (Report, error) {
	cfg.Recipients = max(cfg.Recipients, 1)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, 64)
	cfg.Timeout = cmp.Or(cfg.Timeout, 45*time.Second)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	cfg.Channel = cmp.Or(cfg.Channel, event.ChannelEmail)
	if cfg.Orders < 1 {
		return Report{}, errors.New("bench: orders must be 1 or more")
	}
	if !slices.Contains(Channels, cfg.Channel) {
		return Report{}, fmt.Errorf("bench: channel %q is not one of %v", cfg.Channel, Channels)
	}
	env, err := startEnv(ctx, cfg, scheduling(!cfg.FIFO))
	if err != nil {
		return Report{}, err
	}
	defer env.close()
	w := newWorkload(cfg)
	got := newReceipts(w)
	f := &faults{latency: cfg.ProviderLatency, rate: cfg.FaultRate}
	far, err := env.startFarSide(ctx, cfg, f, got)
	if err != nil {
		return Report{}, err
	}
	defer far.close()
	w.address = far.address
	var feats *features
	if !cfg.Plain {
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if feats, err = env.startFeatures(fctx, fmt.Sprintf("bench:%d:", rand.Int64())); err != nil {
			return Report{}, err
		}
	}
	stop, err := env.startServices(ctx, cfg, far, feats)
	if err != nil {
		return Report{}, err
	}
	defer stop()

	startWrites, err := env.writes(ctx)
	if err != nil {
		return Report{}, err
	}
	startTrips := env.trips.Load()
	startCPU, start, startWork := cpuTime(), time.Now(), env.sent.Work()
	done := make(chan error, 1)
	go func() { done <- w.publish(ctx, env.js, cfg.Rate) }()
	report, err := w.wait(ctx, got, cfg.Timeout, progress)
	if perr := <-done; err == nil {
		err = perr
	}
	if cfg.HeapProfile != nil {
		runtime.GC() // the profile's in-use figures are as of the last collection
		if herr := pprof.WriteHeapProfile(cfg.HeapProfile); err == nil {
			err = herr
		}
	}
	report.Channel, report.Scheduling = string(cfg.Channel), "fair"
	if cfg.FIFO {
		report.Scheduling = "fifo"
	}
	report.BadSignatures = far.badSignatures()
	report.Seconds = got.lastAccept().Sub(start).Seconds()
	if report.Seconds > 0 {
		report.PerSecond = float64(report.Delivered) / report.Seconds
	}
	report.CPUSeconds = (cpuTime() - startCPU).Seconds()
	if writes, werr := env.writes(ctx); werr == nil {
		report.Writes = writes - startWrites
		report.WritesPerDelivery = float64(report.Writes) / float64(max(report.Delivered, 1))
	}
	report.RedisRoundTrips = env.trips.Load() - startTrips
	report.RedisRoundTripsPerDelivery = float64(report.RedisRoundTrips) / float64(max(report.Delivered, 1))
	report.Work = work(startWork, env.sent.Work(), report.Delivered)
	report.PeakRSSMB = peakRSSMB()
	report.EmbeddedNATS, report.EmbeddedRedis = cfg.NATSURL == "", cfg.RedisURL == ""
	report.Cores, report.GoVersion = runtime.GOMAXPROCS(0), runtime.Version()
	report.Retries = f.n.Load()
	return report, err
}

// scheduling is how streams are applied for a run: with fair scheduling,
// NOTIFY's and DOCS's declared consumers are templates, made per tenant;
// without, applying removes what an earlier fair run on a NATSURL made.
func scheduling(fair bool) streams.Options {
	if !fair {
		return streams.Options{}
	}
	return streams.Options{Templates: []string{delivery.Stream, pdf.Stream}}
}

// env is the servers a run talks to.
type env struct {
	nats  *embedded.NATS
	redis *embedded.Redis
	nc    *nats.Conn
	js    jetstream.JetStream
	rdb   redis.UniversalClient
	trips atomic.Int64 // rdb's round trips (roundTrips)
	dir   string
	url   string // NATS's
	// sent is the delivery service startServices started.
	sent *delivery.Service
}

// roundTrips counts a client's round trips to Redis: each command sent
// alone, and each pipeline.
type roundTrips struct{ n *atomic.Int64 }

func (r roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

func startEnv(ctx context.Context, cfg Config, apply streams.Options) (*env, error) {
	e, err := startNATSEnv(ctx, cfg.NATSURL, apply)
	if err != nil {
		return nil, err
	}
	redisURL := cfg.RedisURL
	if redisURL == "" {
		if e.redis, err = embedded.StartRedis("127.0.0.1:0"); err != nil {
			e.close()
			return nil, err
		}
		redisURL = e.redis.URL()
	}
	if e.rdb, _, err = redisconn.Open(redisURL, redisconn.TLS{}); err != nil {
		e.close()
		return nil, fmt.Errorf("redis: %w", redact.Error(err, redisURL))
	}
	e.rdb.AddHook(roundTrips{&e.trips})
	return e, nil
}

// startNATSEnv is an env without Redis: NATS at natsURL (embedded when
// empty), its streams applied.
func startNATSEnv(ctx context.Context, natsURL string, apply streams.Options) (*env, error) {
	e := &env{}
	var err error
	if natsURL == "" {
		if e.dir, err = os.MkdirTemp("", "herald-bench-*"); err != nil {
			return nil, err
		}
		if e.nats, err = embedded.StartNATS(embedded.NATSConfig{StoreDir: e.dir}); err != nil {
			e.close()
			return nil, err
		}
		natsURL = e.nats.URL()
	}
	e.url = natsURL
	if e.nc, err = nats.Connect(natsURL); err != nil {
		e.close()
		return nil, fmt.Errorf("bench: NATS: %w", err)
	}
	if e.js, err = jetstream.New(e.nc, jetstream.WithPublishAsyncMaxPending(4096), jetstream.WithPublishAsyncTimeout(notification.AckTimeout)); err != nil {
		e.close()
		return nil, err
	}
	report, err := streams.Apply(ctx, e.js, apply)
	if err == nil {
		err = report.Err()
	}
	if err != nil {
		e.close()
		return nil, fmt.Errorf("bench: streams: %w", err)
	}
	return e, nil
}

func (e *env) close() {
	if e.rdb != nil {
		_ = e.rdb.Close()
	}
	if e.nc != nil {
		_ = e.nc.Drain()
	}
	if e.nats != nil {
		e.nats.Shutdown()
	}
	if e.redis != nil {
		e.redis.Close()
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
}

type service interface {
	Start(context.Context) error
	Stop(context.Context) error
}

// startServices runs the pipeline in this process; the returned func
// drains it.
func (e *env) startServices(ctx context.Context, cfg Config, far *farSide, feats *features) (func(), error) {
	route := router.Route{Event: "order.created", Template: "purchase_order", Channels: []event.Channel{cfg.Channel}}
	if cfg.Documents {
		route.Document = "purchase_order"
	}
	var services []service
	r, err := router.New(e.js, feats.routing(router.Config{Routes: []router.Route{route}, Channels: []event.Channel{cfg.Channel},
		Concurrency: 16, Logger: cfg.Logger}))
	if err != nil {
		return nil, err
	}
	services = append(services, r)
	if cfg.Documents {
		p, err := pdf.New(e.js, pdf.Config{Concurrency: runtime.GOMAXPROCS(0), Fair: !cfg.FIFO, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		services = append(services, p)
	}
	d, err := e.delivery(cfg, far, !cfg.FIFO, feats)
	if err != nil {
		return nil, err
	}
	e.sent = d
	return startAll(ctx, append(services, d))
}

// delivery is the channel's delivery workers, serving tenants in turn
// when fair (scheduling.fair), first come, first served when not, making
// the checks of feats (none when nil).
func (e *env) delivery(cfg Config, far *farSide, fair bool, feats *features) (*delivery.Service, error) {
	return delivery.New(e.js, feats.delivering(delivery.Config{
		Channel: far.channel, Platform: far.platform,
		Locker: lock.NewRedis(e.rdb, fmt.Sprintf("bench:%d:lock:", rand.Int64())), Concurrency: cfg.Concurrency,
		RetryDelay: 50 * time.Millisecond, Logger: cfg.Logger, Fair: fair,
	}))
}

// writes is how many messages JetStream has stored so far, in every
// stream: the sum of their last sequences, which count every message
// stored, whether still kept or not.
func (e *env) writes(ctx context.Context) (int64, error) {
	var n int64
	streams := e.js.ListStreams(ctx)
	for info := range streams.Info() {
		n += int64(info.State.LastSeq)
	}
	if err := streams.Err(); err != nil {
		return 0, fmt.Errorf("bench: counting writes: %w", err)
	}
	return n, nil
}

// startAll starts services in order; the returned func stops them in
// reverse, draining each.
func startAll(ctx context.Context, services []service) (func(), error) {
	var started []service
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := len(started) - 1; i >= 0; i-- {
			_ = started[i].Stop(sctx)
		}
	}
	for _, s := range services {
		if err := s.Start(ctx); err != nil {
			stop()
			return nil, err
		}
		started = append(started, s)
	}
	return stop, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSMB is the process's peak resident set (Linux reports KiB).
func peakRSSMB() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}
