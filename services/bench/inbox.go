package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/shared/inbox"
)

// InboxConfig is an inbox run (herald bench --inbox): Connections
// subscribers of Tenant, each with a subscriber token minted through the
// API, each holding one Server-Sent Events stream open on the API; then
// Items new items written to the feeds of subscribers picked at random,
// Rate a second, each timed from its write to its arrival on its
// subscriber's stream. It measures a running Herald (herald dev, or one
// API replica): the API's memory and CPU are read from its metrics.
type InboxConfig struct {
	// APIURL is the public listener. Defaults to http://localhost:8081.
	APIURL string
	// MetricsURL is the API process's metrics. Defaults to
	// http://localhost:8080/metrics.
	MetricsURL string
	// NATSURL is the server the API's inbox store is on: items are
	// written there, as the inbox channel writes them. Defaults to
	// nats://127.0.0.1:4222 (herald dev's).
	NATSURL string
	// Key is an API key of Tenant with the send scope. Required.
	Key string
	// Tenant whose subscribers connect. Defaults to acme.
	Tenant string
	// Connections is how many streams are held open. Defaults to 10,000.
	Connections int
	// Items is how many new items are timed. Defaults to 1,000.
	Items int
	// Rate is how many items a second are written. Defaults to 200.
	Rate int
	// Idle is how long the connections are held with nothing to send,
	// to measure the API's CPU at idle. Defaults to 30s.
	Idle time.Duration
}

// WithDefaults fills the zero fields.
func (c InboxConfig) WithDefaults() InboxConfig {
	c.APIURL = strings.TrimSuffix(cmp.Or(c.APIURL, "http://localhost:8081"), "/")
	c.MetricsURL = cmp.Or(c.MetricsURL, "http://localhost:8080/metrics")
	c.NATSURL = cmp.Or(c.NATSURL, nats.DefaultURL)
	c.Tenant = cmp.Or(c.Tenant, "acme")
	c.Connections = cmp.Or(c.Connections, 10_000)
	c.Items = cmp.Or(c.Items, 1_000)
	c.Rate = cmp.Or(c.Rate, 200)
	c.Idle = cmp.Or(c.Idle, 30*time.Second)
	return c
}

// Phases of an inbox run, for progress.
const (
	InboxMinting    = "minting tokens"
	InboxConnecting = "connecting"
	InboxIdle       = "idle"
	InboxFanOut     = "new items"
)

// InboxProgress is where a run stands.
type InboxProgress struct {
	Phase      string
	Done, Want int
}

// InboxReport is what an inbox run measured.
type InboxReport struct {
	Connections int `json:"connections"`
	// The API process before and after the connections opened.
	RSSBeforeMB            float64 `json:"rss_before_mb"`
	RSSAfterMB             float64 `json:"rss_after_mb"`
	HeapBeforeMB           float64 `json:"heap_before_mb"`
	HeapAfterMB            float64 `json:"heap_after_mb"`
	RSSPerConnectionKB     float64 `json:"rss_per_connection_kb"`
	HeapPerConnectionKB    float64 `json:"heap_per_connection_kb"`
	GoroutinesPerConection float64 `json:"goroutines_per_connection"`
	// IdleCPUPercent is the API process's CPU over the idle period, in
	// percent of one core.
	IdleCPUPercent float64 `json:"idle_cpu_percent"`
	IdleSeconds    float64 `json:"idle_seconds"`
	Items          int     `json:"items"`
	Received       int     `json:"received"`
	// Latency from an item's write to its arrival on its stream, ms.
	P50ms     float64                 `json:"p50_ms"`
	P90ms     float64                 `json:"p90_ms"`
	P99ms     float64                 `json:"p99_ms"`
	MaxMs     float64                 `json:"max_ms"`
	Histogram *hdrhistogram.Histogram `json:"-"`
}

// Check fails a run that lost an item: every item written must have
// reached its stream.
func (r InboxReport) Check() error {
	if r.Received != r.Items {
		return fmt.Errorf("%d of %d items never reached their subscriber's stream", r.Items-r.Received, r.Items)
	}
	return nil
}

// RunInbox runs cfg against a running Herald.
func RunInbox(ctx context.Context, cfg InboxConfig, progress func(InboxProgress)) (InboxReport, error) {
	cfg = cfg.WithDefaults()
	if cfg.Key == "" {
		return InboxReport{}, errors.New("an API key of the tenant, with the send scope, is required")
	}
	nc, err := nats.Connect(cfg.NATSURL, nats.Name("herald bench --inbox"))
	if err != nil {
		return InboxReport{}, fmt.Errorf("connecting to NATS: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return InboxReport{}, err
	}
	store, err := inbox.Open(ctx, js)
	if err != nil {
		return InboxReport{}, err
	}
	run := &inboxRun{cfg: cfg, progress: progress, sent: map[string]time.Time{},
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Connections, DisableCompression: true}}}
	defer run.client.CloseIdleConnections()
	return run.measure(ctx, store)
}

type inboxRun struct {
	cfg      InboxConfig
	progress func(InboxProgress)
	client   *http.Client

	mu       sync.Mutex
	sent     map[string]time.Time // item id → when it was written
	hist     *hdrhistogram.Histogram
	received atomic.Int64
	open     atomic.Int64
}

func (r *inboxRun) measure(ctx context.Context, store *inbox.Store) (InboxReport, error) {
	report := InboxReport{Connections: r.cfg.Connections, Items: r.cfg.Items}
	tokens, err := r.mint(ctx)
	if err != nil {
		return report, err
	}
	before, err := scrape(ctx, r.cfg.MetricsURL)
	if err != nil {
		return report, err
	}
	streams, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if err := r.connect(streams, tokens, &wg); err != nil {
		return report, err
	}
	after, err := r.idle(ctx)
	if err != nil {
		return report, err
	}
	report.fill(before, after, r.cfg)
	if err := r.fanOut(ctx, store); err != nil {
		return report, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	report.Received, report.Histogram = int(r.received.Load()), r.hist
	ms := func(q float64) float64 { return float64(r.hist.ValueAtQuantile(q)) / 1000 }
	report.P50ms, report.P90ms, report.P99ms, report.MaxMs = ms(50), ms(90), ms(99), float64(r.hist.Max())/1000
	return report, nil
}

func subscriberID(i int) string { return fmt.Sprintf("bench-inbox-%05d", i) }

// mint asks the API for a token per subscriber, 32 at a time.
func (r *inboxRun) mint(ctx context.Context) ([]string, error) {
	tokens := make([]string, r.cfg.Connections)
	var done atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range tokens {
		g.Go(func() error {
			body, _ := json.Marshal(map[string]string{"subscriber": subscriberID(i), "ttl": "2h"})
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.cfg.APIURL+"/v1/inbox/tokens", bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+r.cfg.Key)
			req.Header.Set("Content-Type", "application/json")
			var out struct {
				Token string `json:"token"`
			}
			if err := doJSON(r.client, req, &out); err != nil {
				return fmt.Errorf("minting a subscriber token: %w", err)
			}
			tokens[i] = out.Token
			r.report(InboxMinting, int(done.Add(1)), len(tokens))
			return nil
		})
	}
	return tokens, g.Wait()
}

func (r *inboxRun) report(phase string, done, want int) {
	if r.progress != nil {
		r.progress(InboxProgress{Phase: phase, Done: done, Want: want})
	}
}

// connect opens every stream and returns once each answered 200.
func (r *inboxRun) connect(ctx context.Context, tokens []string, wg *sync.WaitGroup) error {
	errs := make(chan error, len(tokens))
	sem := make(chan struct{}, 64) // connections being opened at once
	for _, token := range tokens {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.follow(ctx, token, func(err error) { <-sem; errs <- err })
		}()
	}
	for range tokens {
		if err := <-errs; err != nil {
			return err
		}
		r.report(InboxConnecting, int(r.open.Load()), len(tokens))
	}
	return nil
}

// follow holds one stream open until ctx ends, timing every item whose
// write it knows of; opened says how opening it went.
func (r *inboxRun) follow(ctx context.Context, token string, opened func(error)) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.cfg.APIURL+"/v1/inbox/stream", nil)
	if err != nil {
		opened(err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := r.client.Do(req)
	if err != nil {
		opened(fmt.Errorf("opening a stream: %w", err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		opened(fmt.Errorf("opening a stream: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b)))
		return
	}
	r.open.Add(1)
	opened(nil)
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 4096), 1<<20)
	event := ""
	for lines.Scan() {
		line := lines.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:") && event == "item":
			r.arrived(strings.TrimSpace(strings.TrimPrefix(line, "data:")), time.Now())
		case line == "":
			event = ""
		}
	}
}

// arrived times the item an item event carries.
func (r *inboxRun) arrived(data string, at time.Time) {
	var ev struct {
		Item struct {
			ID string `json:"id"`
		} `json:"item"`
	}
	if json.Unmarshal([]byte(data), &ev) != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sent, ok := r.sent[ev.Item.ID]
	if !ok {
		return
	}
	delete(r.sent, ev.Item.ID)
	_ = r.hist.RecordValue(at.Sub(sent).Microseconds())
	r.received.Add(1)
}

// idle holds the connections with nothing to send and reads the API's
// metrics at the end.
func (r *inboxRun) idle(ctx context.Context) (idleSample, error) {
	start, err := scrape(ctx, r.cfg.MetricsURL)
	if err != nil {
		return idleSample{}, err
	}
	began := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for time.Since(began) < r.cfg.Idle {
		select {
		case <-ctx.Done():
			return idleSample{}, ctx.Err()
		case <-tick.C:
			r.report(InboxIdle, int(time.Since(began).Seconds()), int(r.cfg.Idle.Seconds()))
		}
	}
	end, err := scrape(ctx, r.cfg.MetricsURL)
	return idleSample{start: start, end: end, seconds: time.Since(began).Seconds()}, err
}

type idleSample struct {
	start, end processSample
	seconds    float64
}

// fanOut writes Items items at Rate a second to subscribers picked at
// random, then waits for the last to arrive (at most ten seconds).
func (r *inboxRun) fanOut(ctx context.Context, store *inbox.Store) error {
	r.hist = hdrhistogram.New(1, 60_000_000, 3)
	every := time.Second / time.Duration(r.cfg.Rate)
	next := time.Now()
	for i := range r.cfg.Items {
		time.Sleep(time.Until(next))
		next = next.Add(every)
		id := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
		r.mu.Lock()
		r.sent[id] = time.Now()
		r.mu.Unlock()
		sub := subscriberID(rand.IntN(r.cfg.Connections))
		it := inbox.Item{ID: id, Notification: id, Title: "Order PO-2026-0042 shipped", Body: "bench", CreatedAt: time.Now().UTC()}
		if _, _, err := store.Add(ctx, r.cfg.Tenant, sub, it, inbox.Limits{}); err != nil {
			return fmt.Errorf("writing an item: %w", err)
		}
		r.report(InboxFanOut, int(r.received.Load()), r.cfg.Items)
	}
	deadline := time.Now().Add(10 * time.Second)
	for int(r.received.Load()) < r.cfg.Items && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		r.report(InboxFanOut, int(r.received.Load()), r.cfg.Items)
	}
	return nil
}

// processSample is what the API's metrics say of its process.
type processSample struct {
	rss, heap, cpu, goroutines float64
}

func scrape(ctx context.Context, url string) (processSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return processSample{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return processSample{}, fmt.Errorf("reading the API's metrics: %w", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return processSample{}, fmt.Errorf("reading the API's metrics: %w", err)
	}
	value := func(name string) float64 {
		f, ok := families[name]
		if !ok || len(f.GetMetric()) == 0 {
			return 0
		}
		m := f.GetMetric()[0]
		return cmp.Or(m.GetGauge().GetValue(), m.GetCounter().GetValue())
	}
	return processSample{rss: value("process_resident_memory_bytes"), heap: value("go_memstats_heap_inuse_bytes"),
		cpu: value("process_cpu_seconds_total"), goroutines: value("go_goroutines")}, nil
}

// fill works out what the samples say per connection and at idle.
func (r *InboxReport) fill(before processSample, idle idleSample, cfg InboxConfig) {
	after := idle.end
	const mb = 1 << 20
	n := float64(cfg.Connections)
	r.RSSBeforeMB, r.RSSAfterMB = before.rss/mb, after.rss/mb
	r.HeapBeforeMB, r.HeapAfterMB = before.heap/mb, after.heap/mb
	r.RSSPerConnectionKB = (after.rss - before.rss) / n / 1024
	r.HeapPerConnectionKB = (after.heap - before.heap) / n / 1024
	r.GoroutinesPerConection = (after.goroutines - before.goroutines) / n
	r.IdleSeconds = idle.seconds
	if idle.seconds > 0 {
		r.IdleCPUPercent = (idle.end.cpu - idle.start.cpu) / idle.seconds * 100
	}
}

func doJSON(c *http.Client, req *http.Request, out any) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, out)
}
