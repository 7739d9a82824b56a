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
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// The tenants of a fairness run: A floods, B sends a trickle.
const (
	BulkTenant  = "bulk"
	SmallTenant = "small"
)

// TenantsConfig is a fairness run (herald bench --tenants): tenant A
// (BulkTenant) publishes a burst of email deliveries, then tenant B
// (SmallTenant) sends a few at a steady rate while A's backlog drains.
// Deliveries are published on NOTIFY as a publisher of written messages
// would (no router, no templates): the run measures delivery scheduling.
// It is made with fair scheduling off and on, each beside two baselines
// on the same scheduling: B alone and A alone. Each of the six runs gets
// fresh streams (fresh embedded servers unless NATSURL is set).
type TenantsConfig struct {
	// NATSURL and RedisURL point at servers to use; empty means embedded
	// ones, started for each run.
	NATSURL  string
	RedisURL string
	// Bulk is A's burst. Defaults to 50,000.
	Bulk int
	// BulkTenants spreads A's burst over this many tenants (bulk0,
	// bulk1, …), each with a backlog at once, reported together as A.
	// Defaults to 1: tenant bulk alone.
	BulkTenants int
	// Small is how many deliveries B sends. Defaults to 100.
	Small int
	// SmallRate is B's rate, deliveries per second. Defaults to 10.
	SmallRate float64
	// ProviderLatency is how long the far side takes to answer.
	ProviderLatency time.Duration
	// Concurrency is sends at once per priority. Defaults to 64.
	Concurrency int
	// Timeout ends a run when nothing more is delivered for this long.
	// Defaults to 45s.
	Timeout time.Duration
	// Logger receives the services' warnings. Defaults to discarding.
	Logger *slog.Logger
}

// WithDefaults fills the zero fields.
func (c TenantsConfig) WithDefaults() TenantsConfig {
	c.Bulk = cmp.Or(c.Bulk, 50_000)
	c.BulkTenants = cmp.Or(c.BulkTenants, 1)
	c.Small = cmp.Or(c.Small, 100)
	c.SmallRate = cmp.Or(c.SmallRate, 10)
	c.Concurrency = cmp.Or(c.Concurrency, 64)
	c.Timeout = cmp.Or(c.Timeout, 45*time.Second)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	return c
}

func (c TenantsConfig) validate() error {
	if c.Bulk < 1 || c.Small < 1 {
		return errors.New("bench: --bulk and --small must be 1 or more")
	}
	if c.BulkTenants < 1 || c.BulkTenants > c.Bulk {
		return fmt.Errorf("bench: --bulk-tenants must be between 1 and --bulk (got %d)", c.BulkTenants)
	}
	if c.SmallRate <= 0 {
		return errors.New("bench: --small-rate must be above 0")
	}
	return nil
}

// TenantsProgress is how far a fairness run has come: which of its runs,
// and how far that one is.
type TenantsProgress struct {
	Run string
	Progress
}

// TenantsReport is what a fairness run measured.
type TenantsReport struct {
	Bulk              int     `json:"bulk"`
	BulkTenants       int     `json:"bulk_tenants"`
	Small             int     `json:"small"`
	SmallRate         float64 `json:"small_rate"`
	ProviderLatencyMS float64 `json:"provider_latency_ms"`
	Concurrency       int     `json:"concurrency"`
	// FIFO is first come, first served (one consumer per priority); Fair
	// is scheduling.fair (a consumer per tenant, served in turn).
	FIFO Mode `json:"fifo"`
	Fair Mode `json:"fair"`
	// FairVsFIFO compares fair's run together with first come, first
	// served's runs alone: the cost of fairness itself shows here.
	FairVsFIFO    Ratios `json:"fair_vs_fifo"`
	EmbeddedNATS  bool   `json:"embedded_nats"`
	EmbeddedRedis bool   `json:"embedded_redis"`
	Cores         int    `json:"cores"`
	GoVersion     string `json:"go_version"`
}

// Mode is one scheduling's three runs, and how the run together compares
// with each tenant's alone.
type Mode struct {
	SmallAlone Phase `json:"small_alone"`
	BulkAlone  Phase `json:"bulk_alone"`
	Together   Phase `json:"together"`
	Ratios
}

// Ratios compare a run together with runs alone.
type Ratios struct {
	// SmallP99Ratio is B's p99 beside A's burst over B's p99 alone
	// (issue 14's target: at most 2).
	SmallP99Ratio float64 `json:"small_p99_ratio"`
	// BulkThroughputRatio is A's throughput beside B over A's alone
	// (issue 14's target: at least 0.9).
	BulkThroughputRatio float64 `json:"bulk_throughput_ratio"`
}

// Phase is one run: what each tenant in it got.
type Phase struct {
	Small *TenantResult `json:"small,omitempty"`
	Bulk  *TenantResult `json:"bulk,omitempty"`
	// BulkLeft is how many of A's deliveries were still to be accepted
	// when B's last one was (runs with both).
	BulkLeft int `json:"bulk_left_when_small_done"`
}

// Duplicates and Lost are the run's, both tenants'.
func (p Phase) Duplicates() int { return p.Small.duplicates() + p.Bulk.duplicates() }
func (p Phase) Lost() int       { return p.Small.lost() + p.Bulk.lost() }

// TenantResult is one tenant's deliveries in a run.
type TenantResult struct {
	Expected   int `json:"expected"`
	Delivered  int `json:"delivered"`
	Duplicates int `json:"duplicates_sent"`
	Lost       int `json:"lost"`
	// Seconds is from its first acceptance to its last, and PerSecond the
	// deliveries accepted after the first over that time.
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"deliveries_per_second"`
	// Latency is from each delivery's publish to its acceptance.
	Latency   Latency                 `json:"latency_ms"`
	Histogram *hdrhistogram.Histogram `json:"-"`
}

func (r *TenantResult) duplicates() int {
	if r == nil {
		return 0
	}
	return r.Duplicates
}

func (r *TenantResult) lost() int {
	if r == nil {
		return 0
	}
	return r.Lost
}

// RunTenants runs the six runs of a fairness measurement: first come,
// first served, then fair (whose per-tenant consumers would overlap the
// former's durables on NOTIFY were they left on a NATSURL).
func RunTenants(ctx context.Context, cfg TenantsConfig, progress func(TenantsProgress)) (TenantsReport, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return TenantsReport{}, err
	}
	r := TenantsReport{Bulk: cfg.Bulk, BulkTenants: cfg.BulkTenants, Small: cfg.Small, SmallRate: cfg.SmallRate, Concurrency: cfg.Concurrency,
		ProviderLatencyMS: float64(cfg.ProviderLatency) / float64(time.Millisecond),
		EmbeddedNATS:      cfg.NATSURL == "", EmbeddedRedis: cfg.RedisURL == "",
		Cores: runtime.GOMAXPROCS(0), GoVersion: runtime.Version()}
	var err error
	if r.FIFO, err = runMode(ctx, cfg, false, progress); err != nil {
		return r, err
	}
	if r.Fair, err = runMode(ctx, cfg, true, progress); err != nil {
		return r, err
	}
	r.FairVsFIFO = compare(r.Fair.Together, r.FIFO.SmallAlone, r.FIFO.BulkAlone)
	return r, nil
}

func runMode(ctx context.Context, cfg TenantsConfig, fair bool, progress func(TenantsProgress)) (Mode, error) {
	name := "fifo"
	if fair {
		name = "fair"
	}
	var m Mode
	runs := []struct {
		run         string
		into        *Phase
		bulk, small int
	}{
		{name + ": small alone", &m.SmallAlone, 0, cfg.Small},
		{name + ": bulk alone", &m.BulkAlone, cfg.Bulk, 0},
		{name + ": together", &m.Together, cfg.Bulk, cfg.Small},
	}
	for _, r := range runs {
		p, err := runPhase(ctx, cfg, fair, r.bulk, r.small, func(p Progress) {
			if progress != nil {
				progress(TenantsProgress{Run: r.run, Progress: p})
			}
		})
		*r.into = p
		if err != nil {
			return m, fmt.Errorf("bench: %s: %w", r.run, err)
		}
	}
	m.Ratios = compare(m.Together, m.SmallAlone, m.BulkAlone)
	return m, nil
}

// compare is together's small p99 and bulk throughput against theirs
// alone.
func compare(together, smallAlone, bulkAlone Phase) Ratios {
	var r Ratios
	if p99 := smallAlone.Small.Latency.P99; p99 > 0 {
		r.SmallP99Ratio = together.Small.Latency.P99 / p99
	}
	if alone := bulkAlone.Bulk.PerSecond; alone > 0 {
		r.BulkThroughputRatio = together.Bulk.PerSecond / alone
	}
	return r
}

// runPhase is one run on fresh streams: A's burst of bulk (if any), then
// B's small at the rate, until everything is accepted or nothing more is
// for the timeout.
func runPhase(ctx context.Context, cfg TenantsConfig, fair bool, bulk, small int, progress func(Progress)) (Phase, error) {
	bc := Config{NATSURL: cfg.NATSURL, RedisURL: cfg.RedisURL, Channel: event.ChannelEmail,
		ProviderLatency: cfg.ProviderLatency, Concurrency: cfg.Concurrency, Logger: cfg.Logger}
	env, err := startEnv(ctx, bc, scheduling(fair))
	if err != nil {
		return Phase{}, err
	}
	defer env.close()
	load := newTenantLoad(bulk, cfg.BulkTenants, small)
	got := newReceipts(load)
	far, err := env.startFarSide(ctx, bc, &faults{latency: cfg.ProviderLatency}, got)
	if err != nil {
		return Phase{}, err
	}
	defer far.close()
	d, err := env.delivery(bc, far, fair, nil)
	if err != nil {
		return Phase{}, err
	}
	stop, err := startAll(ctx, []service{d})
	if err != nil {
		return Phase{}, err
	}
	defer stop()

	// The tenants publish on a connection of their own, as they would
	// from their own processes: the workers' connection also carries a
	// copy of every delivery, to the fair loop's watch.
	pc, err := nats.Connect(env.url)
	if err != nil {
		return Phase{}, fmt.Errorf("bench: NATS: %w", err)
	}
	defer pc.Close()
	pjs, err := jetstream.New(pc, jetstream.WithPublishAsyncMaxPending(4096), jetstream.WithPublishAsyncTimeout(notification.AckTimeout))
	if err != nil {
		return Phase{}, err
	}
	done := make(chan error, 1)
	go func() { done <- load.publish(ctx, pjs, cfg.SmallRate) }()
	err = load.wait(ctx, got, cfg.Timeout, progress)
	if perr := <-done; err == nil {
		err = perr
	}
	p := Phase{BulkLeft: got.leftAfter(BulkTenant, SmallTenant)}
	if bulk > 0 {
		p.Bulk = result(got.tenant(BulkTenant), bulk)
	}
	if small > 0 {
		p.Small = result(got.tenant(SmallTenant), small)
	}
	return p, err
}

func result(t tally, expected int) *TenantResult {
	h := t.hist
	r := &TenantResult{Expected: expected, Delivered: t.delivered, Duplicates: t.duplicates, Lost: expected - t.delivered,
		Latency:   Latency{P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)), P99: ms(h.ValueAtQuantile(99)), Max: ms(h.Max())},
		Histogram: h}
	if t.delivered > 1 {
		r.Seconds = t.last.Sub(t.first).Seconds()
		r.PerSecond = float64(t.delivered-1) / r.Seconds
	}
	return r
}

// tenantLoad is the deliveries of one run, per tenant, and when each was
// published. A delivery's dedupe key is tenant:tenant-i:run, so the far
// side finds its tenant and index.
type tenantLoad struct {
	run       string
	bulk      int
	tenants   int // A's tenants
	small     int
	published map[string][]atomic.Int64 // tenant → unix nanos, per delivery; the map is not written once made
	sent      atomic.Int64
}

func newTenantLoad(bulk, tenants, small int) *tenantLoad {
	return &tenantLoad{run: strconv.FormatUint(rand.Uint64()%1e6, 36), bulk: bulk, tenants: max(tenants, 1), small: small,
		published: map[string][]atomic.Int64{BulkTenant: make([]atomic.Int64, bulk), SmallTenant: make([]atomic.Int64, small)}}
}

func (l *tenantLoad) publishedAt(orderID string) (time.Time, bool) {
	tenant, n, ok := strings.Cut(orderID, "-")
	i, err := strconv.Atoi(n)
	ts := l.published[tenant]
	if !ok || err != nil || i < 0 || i >= len(ts) {
		return time.Time{}, false
	}
	ns := ts[i].Load()
	return time.Unix(0, ns), ns != 0
}

// message is tenant's delivery i, a written email, as it is published on
// NOTIFY. A's deliveries go to its tenants in turn; the dedupe key keeps
// the name A and B are reported under.
func (l *tenantLoad) message(tenant string, i int) *nats.Msg {
	key := fmt.Sprintf("%s:%s-%d:%s", tenant, tenant, i, l.run)
	if tenant == BulkTenant && l.tenants > 1 {
		tenant = fmt.Sprintf("%s%d", BulkTenant, i%l.tenants)
	}
	d := notification.Delivery{ID: notification.ID(key), DedupeKey: key, Tenant: tenant, Channel: event.ChannelEmail,
		Priority: notification.PriorityNormal, Recipient: notification.Recipient{Address: fmt.Sprintf("r%d@%s.example", i%97, tenant)},
		Locale: "en", Message: &notification.Message{Subject: "Your order has shipped", Text: "Your order has shipped.\n"},
		Event: notification.EventRef{ID: key, Type: "job", Source: "/bench"}, CreatedAt: time.Now().UTC()}
	b, _ := json.Marshal(d)
	msg := nats.NewMsg(notification.Subject(d.Channel, d.Priority, tenant))
	msg.Data = b
	msg.Header.Set(jetstream.MsgIDHeader, key)
	return msg
}

// publish sends A's burst and waits until the stream holds all of it,
// then B's deliveries on an open-loop schedule at rate (each one's publish
// time is its scheduled time, so a publisher falling behind shows as
// latency).
func (l *tenantLoad) publish(ctx context.Context, js jetstream.JetStream, rate float64) error {
	pub := newPublisher(js)
	var err error
	for i := 0; i < l.bulk && err == nil && ctx.Err() == nil; i++ {
		l.published[BulkTenant][i].Store(time.Now().UnixNano())
		err = pub.send(l.message(BulkTenant, i))
		l.sent.Add(1)
	}
	if perr := pub.wait(); err == nil {
		err = perr
	}
	pub, start := newPublisher(js), time.Now()
	for i := 0; i < l.small && err == nil && ctx.Err() == nil; i++ {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		time.Sleep(time.Until(at))
		l.published[SmallTenant][i].Store(at.UnixNano())
		err = pub.send(l.message(SmallTenant, i))
		l.sent.Add(1)
	}
	if perr := pub.wait(); err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("bench: publishing: %w", err)
	}
	return ctx.Err()
}

// wait watches the far side until every delivery arrived, or nothing
// more arrives for timeout.
func (l *tenantLoad) wait(ctx context.Context, got *receipts, timeout time.Duration, progress func(Progress)) error {
	return awaitReceipts(ctx, got, l.bulk+l.small, &l.sent, timeout, progress)
}
