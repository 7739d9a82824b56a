package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
)

// TimersConfig is a timers run (herald bench --timers): Timers workflow
// runs of tenant bench, each waiting a random whole number of seconds
// between MinWait and MaxWait and then sending, driven through the
// workflow service alone (no router: the runs' starts are published on
// runs.in.bench as the router would, and their sends are watched on
// runs.send.bench); then as many runs without a wait, on fresh streams,
// to weigh what the wait costs.
type TimersConfig struct {
	// NATSURL points at a server to use; empty means an embedded one,
	// started for each phase (and counted in its CPU and memory).
	NATSURL string
	// Timers is how many runs wait. Defaults to 100,000.
	Timers int
	// MinWait and MaxWait bound each run's wait, whole seconds. Default
	// to 10s and 60s.
	MinWait, MaxWait time.Duration
	// Concurrency is the workflow service's (workflow.concurrency).
	// Defaults to the service's default.
	Concurrency int
	// Timeout ends a phase when no run starts or sends for this long.
	// Defaults to 45s.
	Timeout time.Duration
	// Logger receives the service's warnings. Defaults to discarding.
	Logger *slog.Logger
}

// WithDefaults fills the zero fields.
func (c TimersConfig) WithDefaults() TimersConfig {
	c.Timers = cmp.Or(c.Timers, 100_000)
	c.MinWait = cmp.Or(c.MinWait, 10*time.Second)
	c.MaxWait = cmp.Or(c.MaxWait, 60*time.Second)
	c.Concurrency = cmp.Or(c.Concurrency, workflow.Config{}.WithDefaults().Concurrency)
	c.Timeout = cmp.Or(c.Timeout, 45*time.Second)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	return c
}

func (c TimersConfig) validate() error {
	if c.Timers < 1 {
		return errors.New("bench: --timers must be 1 or more")
	}
	if c.MinWait < time.Second || c.MaxWait < c.MinWait {
		return fmt.Errorf("bench: --min-wait must be 1s or more and --max-wait at least --min-wait (got %s and %s)", c.MinWait, c.MaxWait)
	}
	return nil
}

// The phases of a timers run, as its progress names them.
const (
	TimersStarting = "waiting runs: starting"
	TimersFiring   = "waiting runs: firing"
	TimersNoWait   = "runs without a wait"
)

// TimersProgress is how far a timers run has come: its phase, the runs
// started in it (a waiting run's timer armed, or a run's send made) and
// the runs sent.
type TimersProgress struct {
	Phase                   string
	Started, Sent, Expected int
}

// TimersReport is what a timers run measured.
type TimersReport struct {
	Timers         int         `json:"timers"`
	MinWaitSeconds float64     `json:"min_wait_seconds"`
	MaxWaitSeconds float64     `json:"max_wait_seconds"`
	Concurrency    int         `json:"concurrency"`
	Waiting        TimersPhase `json:"waiting"`
	NoWait         TimersPhase `json:"no_wait"`
	// Lateness is each waiting run's send, as it reached a subscriber,
	// after its timer's time (the wait's end rounded up to the second,
	// the schedule's precision): what a recipient sees. A timer's wake
	// joins the runs' one queue (runs.in.<tenant>), behind the starts not
	// yet taken: LatenessAfterStart is that of the AfterStart timers due
	// once every run had started (its timer armed), which queued behind
	// other wakes only. Early counts sends before their time (0 is
	// expected; they are recorded as 0 late). Short counts runs that sent
	// before their wait had passed since their start was published,
	// whatever their timer said (0 is expected).
	Lateness           Latency `json:"lateness_ms"`
	LatenessAfterStart Latency `json:"lateness_after_start_ms"`
	AfterStart         int     `json:"timers_due_after_start"`
	Early              int     `json:"fired_early"`
	Short              int     `json:"sent_before_wait"`
	// PeakPending is the most runs waiting at once; the stores' sizes
	// are taken then: RUNS (the timers, with the starts not yet taken
	// and the sends of the SentAtPeak runs already sent) and KV_runs.
	PeakPending         int     `json:"peak_pending"`
	SentAtPeak          int     `json:"sent_at_peak"`
	RunsBytes           uint64  `json:"runs_stream_bytes"`
	RunsBytesPerPending float64 `json:"runs_stream_bytes_per_pending"`
	KVBytes             uint64  `json:"runs_kv_bytes"`
	KVBytesPerPending   float64 `json:"runs_kv_bytes_per_pending"`
	// BaseRSSMB is the process's resident set before the first run,
	// PeakRSSMB its peak once every waiting run sent (the embedded
	// server's memory included); RSSPerTimerKB their difference over the
	// runs.
	BaseRSSMB     float64 `json:"base_rss_mb"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
	RSSPerTimerKB float64 `json:"rss_per_timer_kb"`
	// CostRatio is a waiting run's CPU over a run's without a wait.
	CostRatio    float64 `json:"cpu_per_run_ratio"`
	EmbeddedNATS bool    `json:"embedded_nats"`
	Cores        int     `json:"cores"`
	GoVersion    string  `json:"go_version"`

	Histogram, AfterStartHistogram *hdrhistogram.Histogram `json:"-"`
}

// TimersPhase is one phase's runs.
type TimersPhase struct {
	Runs       int `json:"runs"`
	Sent       int `json:"sent"`
	Duplicates int `json:"duplicates_sent"`
	Lost       int `json:"lost"`
	// StartSeconds is from the first run's publish to the last run's
	// start (its timer armed; without a wait, its send), and
	// StartedPerSecond the runs over it.
	StartSeconds     float64 `json:"start_seconds"`
	StartedPerSecond float64 `json:"started_per_second"`
	// Seconds is from the first run's publish to the last send.
	Seconds     float64 `json:"seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	CPUPerRunMS float64 `json:"cpu_per_run_ms"`
}

// RunTimers runs the waiting runs, then the runs without a wait.
func RunTimers(ctx context.Context, cfg TimersConfig, progress func(TimersProgress)) (TimersReport, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return TimersReport{}, err
	}
	if progress == nil {
		progress = func(TimersProgress) {}
	}
	r := TimersReport{Timers: cfg.Timers, MinWaitSeconds: cfg.MinWait.Seconds(), MaxWaitSeconds: cfg.MaxWait.Seconds(),
		Concurrency: cfg.Concurrency, EmbeddedNATS: cfg.NATSURL == "", Cores: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		BaseRSSMB: currentRSSMB()}
	waiting, err := runTimersPhase(ctx, cfg, true, progress)
	r.Waiting = waiting.phase
	r.PeakRSSMB = peakRSSMB()
	r.RSSPerTimerKB = max(r.PeakRSSMB-r.BaseRSSMB, 0) * 1024 / float64(cfg.Timers)
	r.Histogram, r.AfterStartHistogram, r.Early = waiting.hist, waiting.afterStart, waiting.early
	r.Lateness, r.LatenessAfterStart = latencyOf(waiting.hist), latencyOf(waiting.afterStart)
	r.AfterStart, r.Short = int(waiting.afterStart.TotalCount()), waiting.short
	r.PeakPending, r.SentAtPeak, r.RunsBytes, r.KVBytes = waiting.peak.pending, waiting.peak.sent, waiting.peak.runs, waiting.peak.kv
	if r.PeakPending > 0 {
		r.RunsBytesPerPending = float64(r.RunsBytes) / float64(r.PeakPending)
		r.KVBytesPerPending = float64(r.KVBytes) / float64(r.PeakPending)
	}
	if err != nil {
		return r, fmt.Errorf("bench: waiting runs: %w", err)
	}
	noWait, err := runTimersPhase(ctx, cfg, false, progress)
	r.NoWait = noWait.phase
	if r.NoWait.CPUPerRunMS > 0 {
		r.CostRatio = r.Waiting.CPUPerRunMS / r.NoWait.CPUPerRunMS
	}
	if err != nil {
		return r, fmt.Errorf("bench: runs without a wait: %w", err)
	}
	return r, nil
}

// phaseResult is a phase's runs and what was sampled while they waited.
type phaseResult struct {
	phase            TimersPhase
	hist, afterStart *hdrhistogram.Histogram
	early, short     int
	peak             peakSample
}

// peakSample is the stores' sizes when most runs waited.
type peakSample struct {
	pending, sent int
	runs, kv      uint64
}

// runTimersPhase is one phase on fresh streams: cfg.Timers runs started,
// each waiting (wait) or not, until every run sent or nothing more
// happened for the timeout.
func runTimersPhase(ctx context.Context, cfg TimersConfig, wait bool, progress func(TimersProgress)) (phaseResult, error) {
	rg, err := startRig(ctx, cfg.NATSURL, cfg.Concurrency, cfg.Logger)
	if err != nil {
		return phaseResult{}, err
	}
	defer rg.close()
	runs := newTimerRuns(cfg.Timers, wait)
	unsubscribe, err := rg.watch(map[string]nats.MsgHandler{
		"runs.timer." + tenant + ".>": runs.onTimer,
		router.RunsSend(tenant):       runs.onSend,
	})
	if err != nil {
		return phaseResult{}, err
	}
	defer unsubscribe()
	startCPU, start := cpuTime(), time.Now()
	done := make(chan error, 1)
	go func() { done <- runs.publish(ctx, rg.starts, cfg) }()
	var peak peakSample
	err = awaitRuns(ctx, cfg.Timeout, cfg.Timers, runs.counts, func(started, sent int) {
		progress(TimersProgress{Phase: runs.phaseName(started), Started: started, Sent: sent, Expected: cfg.Timers})
		if wait && started-sent > peak.pending {
			peak = rg.sample(ctx, started-sent, sent, peak)
		}
	})
	cpu := cpuTime() - startCPU
	if perr := <-done; err == nil {
		err = perr
	}
	time.Sleep(500 * time.Millisecond) // a send made twice would arrive now
	return runs.result(start, cpu, peak), err
}

// sample is the stores' sizes with pending runs waiting, or keep when
// they cannot be read.
func (e *env) sample(ctx context.Context, pending, sent int, keep peakSample) peakSample {
	runs, err := e.js.Stream(ctx, router.RunsStream)
	if err != nil {
		return keep
	}
	kv, err := e.js.Stream(ctx, "KV_"+workflow.Bucket)
	if err != nil {
		return keep
	}
	return peakSample{pending: pending, sent: sent, runs: runs.CachedInfo().State.Bytes, kv: kv.CachedInfo().State.Bytes}
}

// timerRuns are a phase's runs: their ids, and what was seen of each on
// its way — its timer armed (runs.timer.bench.<run>.<step>, its time in
// its Nats-Schedule header), its send made (runs.send.bench).
type timerRuns struct {
	wait  bool
	ids   []string
	index map[string]int // not written once made
	// waits are each run's wait, in seconds, and published when its
	// start was published; written by publish, read once it returned.
	waits     []int
	published []time.Time

	mu                  sync.Mutex
	at                  []time.Time // the timer's time, per run
	sentAt              []time.Time // its first send's arrival
	sends               []int
	armed, sent, dups   int
	lastStart, lastSent time.Time
}

func newTimerRuns(n int, wait bool) *timerRuns {
	t := &timerRuns{wait: wait, ids: make([]string, n), index: make(map[string]int, n), waits: make([]int, n), published: make([]time.Time, n),
		at: make([]time.Time, n), sentAt: make([]time.Time, n), sends: make([]int, n)}
	for i := range t.ids {
		t.ids[i] = fmt.Sprintf("run_%016x%016x", rand.Uint64(), rand.Uint64())
		t.index[t.ids[i]] = i
	}
	return t
}

func (t *timerRuns) phaseName(started int) string {
	switch {
	case !t.wait:
		return TimersNoWait
	case started < len(t.ids):
		return TimersStarting
	}
	return TimersFiring
}

// onTimer records a run's timer: runs.timer.bench.<run>.<step>, firing
// at its Nats-Schedule header's @at.
func (t *timerRuns) onTimer(msg *nats.Msg) {
	parts := strings.Split(msg.Subject, ".")
	if len(parts) != 5 {
		return
	}
	at, err := time.Parse(time.RFC3339, strings.TrimPrefix(msg.Header.Get(jetstream.ScheduleHeader), "@at "))
	i, ok := t.index[parts[3]]
	if err != nil || !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at[i].IsZero() {
		t.armed++
		t.lastStart = time.Now()
	}
	t.at[i] = at
}

// onSend records a run's send, by its Nats-Msg-Id (send:<run>:<step>),
// and when the first came.
func (t *timerRuns) onSend(msg *nats.Msg) {
	now := time.Now()
	_, rest, _ := strings.Cut(msg.Header.Get(jetstream.MsgIDHeader), ":")
	run, _, _ := strings.Cut(rest, ":")
	i, ok := t.index[run]
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sends[i]++
	if t.sends[i] > 1 {
		t.dups++
		return
	}
	t.sent++
	t.lastSent, t.sentAt[i] = now, now
	if !t.wait {
		t.lastStart = now
	}
}

// counts are the runs started (timer armed; without a wait, sent) and
// sent so far.
func (t *timerRuns) counts() (started, sent int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.wait {
		return t.sent, t.sent
	}
	return t.armed, t.sent
}

// publish starts every run, as the router would: a RunStart on
// runs.in.bench, its id its Nats-Msg-Id. A waiting run's route is a
// wait for a random whole number of seconds, then a send; the others'
// the send alone.
func (t *timerRuns) publish(ctx context.Context, js jetstream.JetStream, cfg TimersConfig) error {
	w := newWorkload(Config{Orders: 1, Recipients: 1, Channel: event.ChannelEmail})
	w.address = func(int, int) string { return "buyer@bench.example" }
	ev := w.event(0, "evt-timers")
	rcpt := event.Recipient{Name: "Buyer", Role: "buyer", Email: "buyer@bench.example", Channels: []event.Channel{event.ChannelEmail}}
	lo, hi := int(cfg.MinWait/time.Second), int(cfg.MaxWait/time.Second)
	pub := newPublisher(js)
	var err error
	for i := 0; i < len(t.ids) && err == nil && ctx.Err() == nil; i++ {
		route := router.Route{Event: "order.created", Template: "purchase_order", Channels: []event.Channel{event.ChannelEmail},
			Steps: []router.Step{{Send: &router.SendStep{}}}}
		if t.wait {
			t.waits[i] = lo + rand.IntN(hi-lo+1)
			wait := router.Step{Wait: &router.WaitStep{For: router.Duration(time.Duration(t.waits[i]) * time.Second)}}
			route.Steps = append([]router.Step{wait}, route.Steps...)
		}
		msg, merr := startMsg(router.RunStart{ID: t.ids[i], Tenant: tenant, Subject: "B-" + strconv.Itoa(i), Event: ev,
			StoredAt: time.Now().UTC(), Route: route, Recipient: rcpt})
		if merr != nil {
			err = merr
			break
		}
		t.published[i] = time.Now()
		err = pub.send(msg)
	}
	if perr := pub.wait(); err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("bench: starting runs: %w", err)
	}
	return ctx.Err()
}

// result is the phase's figures, from its first publish at start.
func (t *timerRuns) result(start time.Time, cpu time.Duration, peak peakSample) phaseResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.ids)
	p := TimersPhase{Runs: n, Sent: t.sent, Duplicates: t.dups, Lost: n - t.sent, CPUSeconds: cpu.Seconds(),
		CPUPerRunMS: 1000 * cpu.Seconds() / float64(n)}
	if !t.lastStart.IsZero() {
		p.StartSeconds = t.lastStart.Sub(start).Seconds()
		p.StartedPerSecond = float64(n) / p.StartSeconds
	}
	if !t.lastSent.IsZero() {
		p.Seconds = t.lastSent.Sub(start).Seconds()
	}
	res := phaseResult{phase: p, hist: newHistogram(), afterStart: newHistogram(), peak: peak}
	for i, at := range t.at {
		if t.wait && !t.sentAt[i].IsZero() && t.sentAt[i].Before(t.published[i].Add(time.Duration(t.waits[i])*time.Second)) {
			res.short++
		}
		if at.IsZero() || t.sentAt[i].IsZero() {
			continue // not armed (a run without a wait), or lost
		}
		late := t.sentAt[i].Sub(at)
		if late < 0 {
			res.early++
		}
		_ = res.hist.RecordValue(max(late, 0).Microseconds())
		if at.After(t.lastStart) {
			_ = res.afterStart.RecordValue(max(late, 0).Microseconds())
		}
	}
	return res
}

func latencyOf(h *hdrhistogram.Histogram) Latency {
	return Latency{P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)), P99: ms(h.ValueAtQuantile(99)), Max: ms(h.Max())}
}

// currentRSSMB is the process's resident set now (Linux's
// /proc/self/statm, in pages), 0 where it cannot be read.
func currentRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return float64(pages*int64(os.Getpagesize())) / (1 << 20)
}
