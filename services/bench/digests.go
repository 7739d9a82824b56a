package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/examples"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
)

// DigestsConfig is a digests run (herald bench --digests): Digests
// low-stock alerts of tenant bench, their warehouses taken in turn from
// Keys, each starting a run of a route that gathers a warehouse's alerts
// for one recipient (digest: {key: "{{.Stock.Warehouse}}", window:
// Window}) and then sends. It drives the workflow service alone, as
// TimersConfig does: the runs' starts are published on runs.in.bench and
// the digests' sends watched on runs.send.bench.
type DigestsConfig struct {
	// NATSURL points at a server to use; empty means an embedded one
	// (counted in the run's CPU and memory).
	NATSURL string
	// Digests is how many alerts, each a run. Defaults to 10,000.
	Digests int
	// Keys is how many warehouses they are of: as many digests are
	// expected. Defaults to 100.
	Keys int
	// Window is each digest's window. Every alert must reach its digest
	// within the window of the warehouse's first, or a warehouse's
	// alerts go in two digests: 10,000 take about five seconds to gather
	// on 2 shared cores (docs/BENCHMARKS.md). Defaults to 30s.
	Window time.Duration
	// Concurrency is the workflow service's (workflow.concurrency).
	// Defaults to the service's default.
	Concurrency int
	// Timeout ends the run when no alert is gathered or sent for this
	// long after the window. Defaults to 45s.
	Timeout time.Duration
	// Logger receives the service's warnings. Defaults to discarding.
	Logger *slog.Logger
}

// WithDefaults fills the zero fields.
func (c DigestsConfig) WithDefaults() DigestsConfig {
	c.Digests = cmp.Or(c.Digests, 10_000)
	c.Keys = cmp.Or(c.Keys, 100)
	c.Window = cmp.Or(c.Window, 30*time.Second)
	c.Concurrency = cmp.Or(c.Concurrency, workflow.Config{}.WithDefaults().Concurrency)
	c.Timeout = cmp.Or(c.Timeout, 45*time.Second)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	return c
}

func (c DigestsConfig) validate() error {
	if c.Digests < 1 || c.Keys < 1 || c.Keys > c.Digests {
		return fmt.Errorf("bench: --digests must be 1 or more and --keys between 1 and --digests (got %d and %d)", c.Digests, c.Keys)
	}
	if c.Digests/c.Keys+1 > router.MaxDigestItems {
		return fmt.Errorf("bench: %d alerts of a warehouse fill a digest (%d items): use more --keys", c.Digests/c.Keys+1, router.MaxDigestItems)
	}
	if c.Window < time.Second {
		return fmt.Errorf("bench: --window must be 1s or more (got %s)", c.Window)
	}
	return nil
}

// The phases of a digests run, as its progress names them.
const (
	DigestsGathering = "alerts: gathering"
	DigestsFlushing  = "digests: flushing"
)

// DigestsProgress is how far a digests run has come: the alerts gathered
// (in their digest), the alerts sent in a digest, and the digests sent.
type DigestsProgress struct {
	Phase                      string
	Gathered, Sent, Expected   int
	DigestsSent, DigestsWanted int
}

// DigestsReport is what a digests run measured.
type DigestsReport struct {
	Alerts        int     `json:"alerts"`
	Keys          int     `json:"keys"`
	WindowSeconds float64 `json:"window_seconds"`
	Concurrency   int     `json:"concurrency"`
	// Digests counts the sends seen on runs.send.bench (by Nats-Msg-Id):
	// Keys are expected, one per warehouse, each listing every alert of
	// it. Sent counts the alerts listed, each once; SentTwice the
	// listings of an alert beyond its first, Lost the alerts never
	// listed, Split the warehouses in more than one digest, Mixed the
	// digests listing several warehouses' alerts and Empty those listing
	// none (all 0 expected). Left counts the items and flushes still
	// held in RUNS once done: a digest yet to come (0 expected).
	Digests   int `json:"digests"`
	Sent      int `json:"alerts_sent"`
	SentTwice int `json:"alerts_sent_twice"`
	Lost      int `json:"alerts_lost"`
	Split     int `json:"keys_split"`
	Mixed     int `json:"digests_mixed"`
	Empty     int `json:"digests_empty"`
	Left      int `json:"digest_messages_left"`
	// GatherSeconds is from the first run's publish to the last alert
	// gathered, StartedPerSecond the alerts over it; Seconds to the last
	// digest sent.
	GatherSeconds    float64 `json:"gather_seconds"`
	StartedPerSecond float64 `json:"started_per_second"`
	Seconds          float64 `json:"seconds"`
	// Lateness is each warehouse's first digest's send, as it reached a
	// subscriber, after its window closed (its flush schedule's @at): the
	// flush's wait in RUNS and the digest's merge. Unmatched counts the
	// first digests whose flush schedule was not seen (0 expected).
	Lateness  Latency `json:"lateness_ms"`
	Unmatched int     `json:"digests_without_flush"`
	// PeakPending is the most alerts gathered and not yet sent; the
	// stores' sizes are taken then: RUNS (the items, the flushes, and the
	// sends already made) and KV_runs.
	PeakPending int    `json:"peak_pending"`
	RunsBytes   uint64 `json:"runs_stream_bytes"`
	KVBytes     uint64 `json:"runs_kv_bytes"`
	// BaseRSSMB is the process's resident set before the first run,
	// PeakRSSMB its peak once done (the embedded server's included).
	BaseRSSMB     float64 `json:"base_rss_mb"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
	CPUSeconds    float64 `json:"cpu_seconds"`
	CPUPerAlertMS float64 `json:"cpu_per_alert_ms"`
	EmbeddedNATS  bool    `json:"embedded_nats"`
	Cores         int     `json:"cores"`
	GoVersion     string  `json:"go_version"`

	Histogram *hdrhistogram.Histogram `json:"-"`
}

// Check says what the run got wrong: a digest lost, split, mixed or
// duplicated, an alert not listed exactly once.
func (r DigestsReport) Check() error {
	var errs []error
	if r.Digests != r.Keys {
		errs = append(errs, fmt.Errorf("%d digests sent for %d warehouses", r.Digests, r.Keys))
	}
	if r.Sent != r.Alerts || r.Lost > 0 || r.SentTwice > 0 {
		errs = append(errs, fmt.Errorf("%d of %d alerts listed, %d never, %d twice", r.Sent, r.Alerts, r.Lost, r.SentTwice))
	}
	if r.Split > 0 || r.Mixed > 0 || r.Empty > 0 || r.Left > 0 {
		errs = append(errs, fmt.Errorf("%d warehouses split over several digests, %d digests mixing warehouses, %d empty, %d digest messages left",
			r.Split, r.Mixed, r.Empty, r.Left))
	}
	if len(errs) > 0 && r.GatherSeconds > r.WindowSeconds {
		errs = append(errs, fmt.Errorf("the alerts took %.1f s to reach their digests, more than the %g s window: raise --window", r.GatherSeconds, r.WindowSeconds))
	}
	return errors.Join(errs...)
}

// RunDigests runs the alerts into their digests and watches the digests
// go out.
func RunDigests(ctx context.Context, cfg DigestsConfig, progress func(DigestsProgress)) (DigestsReport, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return DigestsReport{}, err
	}
	if progress == nil {
		progress = func(DigestsProgress) {}
	}
	alerts, err := newLowStock()
	if err != nil {
		return DigestsReport{}, err
	}
	r := DigestsReport{Alerts: cfg.Digests, Keys: cfg.Keys, WindowSeconds: cfg.Window.Seconds(), Concurrency: cfg.Concurrency,
		EmbeddedNATS: cfg.NATSURL == "", Cores: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), BaseRSSMB: currentRSSMB()}
	rg, err := startRig(ctx, cfg.NATSURL, cfg.Concurrency, cfg.Logger)
	if err != nil {
		return r, err
	}
	defer rg.close()
	runs := newDigestRuns(cfg.Digests, cfg.Keys)
	unsubscribe, err := rg.watch(map[string]nats.MsgHandler{
		workflow.DigestSubject(tenant, "*"): runs.onItem,
		workflow.FlushSubject(tenant, "*"):  runs.onFlush,
		router.RunsSend(tenant):             runs.onSend,
	})
	if err != nil {
		return r, err
	}
	defer unsubscribe()
	startCPU, start := cpuTime(), time.Now()
	done := make(chan error, 1)
	go func() { done <- runs.publish(ctx, rg.starts, alerts, cfg.Window) }()
	var peak peakSample
	err = awaitRuns(ctx, cfg.Window+cfg.Timeout, cfg.Digests, runs.counts, func(gathered, sent int) {
		progress(runs.progress(gathered, sent))
		if gathered-sent > peak.pending {
			peak = rg.sample(ctx, gathered-sent, sent, peak)
		}
	})
	cpu := cpuTime() - startCPU
	if perr := <-done; err == nil {
		err = perr
	}
	time.Sleep(500 * time.Millisecond) // a digest sent twice would arrive now
	runs.report(&r, start, cpu)
	r.PeakPending, r.RunsBytes, r.KVBytes = peak.pending, peak.runs, peak.kv
	r.PeakRSSMB = peakRSSMB()
	if err == nil {
		r.Left, err = held(ctx, rg.env)
	}
	return r, err
}

// held counts the digests' items and flushes RUNS still holds.
func held(ctx context.Context, e *env) (int, error) {
	s, err := e.js.Stream(ctx, router.RunsStream)
	if err != nil {
		return 0, fmt.Errorf("bench: the %s stream: %w", router.RunsStream, err)
	}
	n := 0
	for _, subject := range []string{workflow.DigestSubject(tenant, ">"), workflow.FlushSubject(tenant, ">")} {
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			return 0, fmt.Errorf("bench: counting %s: %w", subject, err)
		}
		for _, c := range info.State.Subjects {
			n += int(c)
		}
	}
	return n, nil
}

// lowStock makes the run's alerts: examples/events/inventory.low_stock.json
// with an id, a SKU and a warehouse of their own.
type lowStock struct {
	ev        map[string]any
	recipient event.Recipient
}

func newLowStock() (*lowStock, error) {
	b, err := examples.Events.ReadFile("events/inventory.low_stock.json")
	if err != nil {
		return nil, err
	}
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, fmt.Errorf("bench: the low-stock example: %w", err)
	}
	var d struct {
		Recipients []event.Recipient `json:"recipients"`
	}
	data, _ := json.Marshal(ev["data"])
	if err := json.Unmarshal(data, &d); err != nil || len(d.Recipients) == 0 {
		return nil, fmt.Errorf("bench: the low-stock example names no recipient (%v)", err)
	}
	ev["tenant"] = tenant
	return &lowStock{ev: ev, recipient: d.Recipients[0]}, nil
}

func warehouse(key int) string { return fmt.Sprintf("WH-%04d", key) }

// alert is alert i, of warehouse key.
func (l *lowStock) alert(i, key int) ([]byte, error) {
	l.ev["id"] = alertID(i)
	stock := l.ev["data"].(map[string]any)["stock"].(map[string]any)
	stock["sku"], stock["warehouse"] = "SKU-"+strconv.Itoa(i), warehouse(key)
	return json.Marshal(l.ev)
}

const alertPrefix = "evt-digest-"

func alertID(i int) string { return alertPrefix + strconv.Itoa(i) }

// digestRuns are a digests run's alerts, each a run, and what was seen of
// them: each run's item in its digest (runs.digest.bench.<digest>), each
// digest's flush schedule (runs.flush.bench.<digest>), each digest's send.
type digestRuns struct {
	keys  int
	ids   []string
	index map[string]int // run key → alert; not written once made

	mu           sync.Mutex
	gathered     []bool
	nGathered    int
	digestOf     []string             // warehouse → its digest, from the items
	closes       map[string]time.Time // digest → its window's end, since its last send
	sendIDs      map[string]bool
	listed       []int // per alert
	digestsOf    []int // per warehouse
	sent, twice  int
	mixed, empty int
	unmatched    int
	lastGathered time.Time
	lastSent     time.Time
	hist         *hdrhistogram.Histogram
}

func newDigestRuns(n, keys int) *digestRuns {
	d := &digestRuns{keys: keys, ids: make([]string, n), index: make(map[string]int, n), gathered: make([]bool, n),
		digestOf: make([]string, keys), closes: map[string]time.Time{}, sendIDs: map[string]bool{}, listed: make([]int, n),
		digestsOf: make([]int, keys), hist: newHistogram()}
	for i := range d.ids {
		d.ids[i] = fmt.Sprintf("run_%016x%016x", rand.Uint64(), rand.Uint64())
		d.index[workflow.Key(tenant, subjectOf(i), d.ids[i])] = i
	}
	return d
}

func subjectOf(i int) string { return "S-" + strconv.Itoa(i) }

// publish starts every alert's run, as the router would, warehouses in
// turn.
func (d *digestRuns) publish(ctx context.Context, js jetstream.JetStream, alerts *lowStock, window time.Duration) error {
	route := router.Route{Event: "inventory.low_stock", Template: "low_stock", Roles: []string{"warehouse"},
		Channels: []event.Channel{event.ChannelSMS},
		Steps: []router.Step{
			{Digest: &router.DigestStep{Key: "{{.Stock.Warehouse}}", Window: router.Duration(window)}},
			{Send: &router.SendStep{}}}}
	pub := newPublisher(js)
	var err error
	for i := 0; i < len(d.ids) && err == nil && ctx.Err() == nil; i++ {
		var ev []byte
		if ev, err = alerts.alert(i, i%d.keys); err != nil {
			break
		}
		var msg *nats.Msg
		if msg, err = startMsg(router.RunStart{ID: d.ids[i], Tenant: tenant, Subject: subjectOf(i), Event: ev,
			StoredAt: time.Now().UTC(), Route: route, Recipient: alerts.recipient}); err == nil {
			err = pub.send(msg)
		}
	}
	if perr := pub.wait(); err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("bench: starting runs: %w", err)
	}
	return ctx.Err()
}

// onItem records a run's item in its digest, and which warehouse's the
// digest is.
func (d *digestRuns) onItem(msg *nats.Msg) {
	var it struct {
		Run string `json:"run"`
	}
	if json.Unmarshal(msg.Data, &it) != nil {
		return
	}
	i, ok := d.index[it.Run]
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.digestOf[i%d.keys] = strings.TrimPrefix(msg.Subject, workflow.DigestSubject(tenant, ""))
	if !d.gathered[i] {
		d.gathered[i] = true
		d.nGathered++
		d.lastGathered = time.Now()
	}
}

// onFlush records when a digest first closes: the earliest flush
// schedule's @at seen for it. A run that finds the digest open asks for
// a later one, which the server refuses but a subscriber sees: when a
// warehouse's alerts are split over several digests, which of those
// schedules the next digest's is cannot be told from here.
func (d *digestRuns) onFlush(msg *nats.Msg) {
	at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(msg.Header.Get(jetstream.ScheduleHeader), "@at "))
	if err != nil {
		return
	}
	digest := strings.TrimPrefix(msg.Subject, workflow.FlushSubject(tenant, ""))
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.closes[digest]; !ok || at.Before(c) {
		d.closes[digest] = at
	}
}

// onSend records a digest's send, once per Nats-Msg-Id: the alerts it
// lists, and how late it came after its window closed.
func (d *digestRuns) onSend(msg *nats.Msg) {
	now := time.Now()
	var req router.SendRequest
	if json.Unmarshal(msg.Data, &req) != nil {
		return
	}
	alerts := make([]int, 0, len(req.Items))
	for _, item := range req.Items {
		var ev struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(item, &ev) == nil {
			if i, err := strconv.Atoi(strings.TrimPrefix(ev.ID, alertPrefix)); err == nil && i >= 0 && i < len(d.ids) {
				alerts = append(alerts, i)
			}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := msg.Header.Get(jetstream.MsgIDHeader)
	if d.sendIDs[id] {
		return // the same send, published again: JetStream keeps it once
	}
	d.sendIDs[id] = true
	d.list(alerts, now)
}

// list records a digest's alerts; the caller holds mu.
func (d *digestRuns) list(alerts []int, now time.Time) {
	d.lastSent = now
	if len(alerts) == 0 {
		d.empty++
		return
	}
	key := alerts[0] % d.keys
	d.digestsOf[key]++
	for _, i := range alerts {
		if i%d.keys != key {
			d.mixed++
			break
		}
	}
	for _, i := range alerts {
		if d.listed[i]++; d.listed[i] == 1 {
			d.sent++
		} else {
			d.twice++
		}
	}
	if d.digestsOf[key] > 1 {
		return // a split: its window's end is not told apart from refused flushes
	}
	at, ok := d.closes[d.digestOf[key]]
	if !ok {
		d.unmatched++
		return
	}
	_ = d.hist.RecordValue(max(now.Sub(at), 0).Microseconds())
}

// counts are the alerts gathered and those sent in a digest so far.
func (d *digestRuns) counts() (gathered, sent int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nGathered, d.sent
}

func (d *digestRuns) progress(gathered, sent int) DigestsProgress {
	p := DigestsProgress{Phase: DigestsGathering, Gathered: gathered, Sent: sent, Expected: len(d.ids), DigestsWanted: d.keys}
	if gathered >= len(d.ids) {
		p.Phase = DigestsFlushing
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p.DigestsSent = len(d.sendIDs)
	return p
}

// report fills r with what was seen, from the first publish at start.
func (d *digestRuns) report(r *DigestsReport, start time.Time, cpu time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r.Digests, r.Sent, r.SentTwice, r.Lost = len(d.sendIDs), d.sent, d.twice, len(d.ids)-d.sent
	r.Mixed, r.Empty, r.Unmatched = d.mixed, d.empty, d.unmatched
	for _, n := range d.digestsOf {
		if n > 1 {
			r.Split++
		}
	}
	if !d.lastGathered.IsZero() {
		r.GatherSeconds = d.lastGathered.Sub(start).Seconds()
		r.StartedPerSecond = float64(d.nGathered) / r.GatherSeconds
	}
	if !d.lastSent.IsZero() {
		r.Seconds = d.lastSent.Sub(start).Seconds()
	}
	r.CPUSeconds, r.CPUPerAlertMS = cpu.Seconds(), 1000*cpu.Seconds()/float64(len(d.ids))
	r.Histogram, r.Lateness = d.hist, latencyOf(d.hist)
}
