package alert

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Failure is one dead-letter entry, as much as an alert needs.
type Failure struct {
	Stream   string    `json:"stream"`
	Consumer string    `json:"consumer"`
	Subject  string    `json:"subject"`
	Tenant   string    `json:"tenant"`
	Reason   string    `json:"reason"`
	Time     time.Time `json:"time"`
}

// Quota is a tenant's month reaching a threshold of a channel's quota: 80 %
// (a warning) or 100 % (the next notification is refused). Operators hear
// of them beside the failures, in the same summaries.
type Quota struct {
	Tenant  string `json:"tenant"`
	Channel string `json:"channel"`
	Month   string `json:"month"` // yyyy-mm, UTC
	Used    int64  `json:"used"`
	Quota   int64  `json:"quota"`
	// Threshold is the share reached, in percent.
	Threshold int       `json:"threshold"`
	Time      time.Time `json:"time"`
}

// Summary is what one alert says: how many failures since the last alert,
// broken down, with the most frequent reasons; and the quota thresholds
// reached since.
type Summary struct {
	Count int `json:"count"`
	// Since is when the previous alert of the same burst was cut, or when
	// the burst's first failure was added; Until is when this one was cut.
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// ByStream counts failures by "STREAM > consumer".
	ByStream map[string]int `json:"by_stream"`
	// ByTenant counts failures by tenant; "(none)" counts those without one.
	ByTenant map[string]int `json:"by_tenant"`
	// TopReasons are the most frequent reason classes (see ReasonClass),
	// most frequent first, at most five.
	TopReasons []ReasonCount `json:"top_reasons"`
	// Example is the first failure of the window, verbatim, for context.
	Example Failure `json:"example"`
	// Quotas are the thresholds reached, by tenant, channel, month and
	// threshold, at most 1,000; QuotasLeftOut counts those that did not fit.
	Quotas        []Quota `json:"quotas,omitempty"`
	QuotasLeftOut int     `json:"quotas_left_out,omitempty"`
}

// ReasonCount is how many failures had one reason class.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// Sender delivers one alert somewhere. Every sender is handed the same
// Summary, so Send must not modify its maps or slices.
type Sender interface {
	Send(ctx context.Context, s Summary) error
}

// Config configures an Aggregator.
type Config struct {
	// Window is the shortest time between two alerts while failures keep
	// coming. Defaults to 1 minute.
	Window time.Duration
	// Senders each get every summary. Without any, summaries are only
	// logged and counted.
	Senders []Sender
	// RetryDelay is how long a sender waits after a failed try; it doubles
	// with each try, and a 429's Retry-After is honoured if longer (up to
	// 30s). Defaults to 500ms.
	RetryDelay time.Duration
	// SendTimeout bounds one try of one sender. Defaults to 10s.
	SendTimeout time.Duration
	// FlushTimeout bounds how long Run keeps sending once its context ends.
	// Defaults to 5s.
	FlushTimeout time.Duration

	// Logger defaults to discarding.
	Logger *slog.Logger
	// MeterProvider defaults to a no-op provider.
	MeterProvider metric.MeterProvider
	// Clock stamps summaries and times windows, retries and timeouts.
	// Defaults to the system clock.
	Clock Clock
}

// WithDefaults returns the config with every unset field filled in.
func (c Config) WithDefaults() Config {
	c.Window = cmp.Or(c.Window, time.Minute)
	c.RetryDelay = cmp.Or(c.RetryDelay, 500*time.Millisecond)
	c.SendTimeout = cmp.Or(c.SendTimeout, 10*time.Second)
	c.FlushTimeout = cmp.Or(c.FlushTimeout, 5*time.Second)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	return c
}

// Aggregator collects failures and emits Summaries: the first failure after
// a quiet period is alerted at once, then at most one Summary per Window is
// sent while failures keep coming (see the package doc for the bound).
type Aggregator struct {
	cfg     Config
	metrics metrics
	// wake tells Run that a failure was added; one pending signal is enough.
	wake chan struct{}
	ran  atomic.Bool

	mu      sync.Mutex
	pending window
	// nextSince is when the last summary was cut while a burst goes on, so
	// the next summary covers the time in between; zero when quiet.
	nextSince time.Time
}

// New returns an Aggregator; nothing is sent until Run is called.
func New(cfg Config) *Aggregator {
	cfg = cfg.WithDefaults()
	return &Aggregator{cfg: cfg, metrics: newMetrics(cfg), wake: make(chan struct{}, 1)}
}

// Add counts f for the next summary. It never waits on the network and is
// safe for concurrent use. Failures added after Run returns are not sent.
func (a *Aggregator) Add(f Failure) {
	now := a.cfg.Clock.Now()
	if f.Time.IsZero() {
		f.Time = now
	}
	class := ReasonClass(f.Reason) // outside the lock: it is the costly part
	a.add(now, func(w *window) { w.addFailure(f, class) })
}

// AddQuota counts q for the next summary, as Add counts a failure: the
// same windows, the same senders. It never waits on the network and is
// safe for concurrent use.
func (a *Aggregator) AddQuota(q Quota) {
	now := a.cfg.Clock.Now()
	if q.Time.IsZero() {
		q.Time = now
	}
	a.add(now, func(w *window) { w.addQuota(q) })
}

// add counts into the pending window with f and wakes Run.
func (a *Aggregator) add(now time.Time, f func(*window)) {
	a.mu.Lock()
	a.pending.open(cmp.Or(a.nextSince, now))
	f(&a.pending)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Run sends summaries until ctx ends, then sends what is pending, giving the
// senders FlushTimeout to finish, and returns nil. An Aggregator runs once;
// calling Run again is an error.
func (a *Aggregator) Run(ctx context.Context) error {
	if !a.ran.CompareAndSwap(false, true) {
		return errors.New("alert: Run was already called; an aggregator runs once")
	}
	// Sends outlive ctx by up to FlushTimeout, so the last summary can go out.
	sendCtx, stopSending := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSending()
	out := a.startSenders(sendCtx)

	// windowEnd receives when the open window ends; nil while none is open,
	// and then the next failure is alerted at once.
	var windowEnd <-chan struct{}
	stopWindow := func() bool { return false }
	openWindow := func() { windowEnd, stopWindow = after(a.cfg.Clock, a.cfg.Window) }
	for {
		select {
		case <-ctx.Done():
			stopWindow()
			a.emit(ctx, out)
			out.close()
			stopFlushing := a.cfg.Clock.AfterFunc(a.cfg.FlushTimeout, stopSending)
			out.wait()
			stopFlushing()
			return nil
		case <-a.wake:
			if windowEnd == nil && a.emit(ctx, out) {
				openWindow()
			}
		case <-windowEnd:
			windowEnd = nil
			if a.emit(ctx, out) {
				openWindow()
			}
		}
	}
}

// emit cuts what is pending into a summary and queues it for every sender.
// It reports false when nothing was pending: the burst is over.
func (a *Aggregator) emit(ctx context.Context, out *outbox) bool {
	s, ok := a.cut()
	if !ok {
		return false
	}
	if s.Count > 0 {
		a.cfg.Logger.WarnContext(ctx, "Herald gave up on messages",
			"count", s.Count, "since", s.Since, "until", s.Until, "streams", s.ByStream, "top_reason", topReason(s))
	}
	if n := len(s.Quotas) + s.QuotasLeftOut; n > 0 {
		a.cfg.Logger.WarnContext(ctx, "tenants reached monthly quota thresholds", "count", n, "since", s.Since, "until", s.Until)
	}
	out.queue(ctx, s)
	return true
}

// cut takes what is pending as a Summary, or reports that nothing is.
func (a *Aggregator) cut() (Summary, bool) {
	now := a.cfg.Clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.pending
	if w.empty() {
		a.nextSince = time.Time{}
		return Summary{}, false
	}
	a.pending = window{}
	a.nextSince = now
	return w.summary(now), true
}

func topReason(s Summary) string {
	if len(s.TopReasons) == 0 {
		return ""
	}
	return s.TopReasons[0].Reason
}

// maxKeys bounds each breakdown, so a burst across a million tenants or
// reasons costs a bounded amount of memory and alert text.
const maxKeys = 1000

// otherKey counts what did not fit in a breakdown.
const otherKey = "(other)"

// window is what has been counted since the last summary.
type window struct {
	count    int
	since    time.Time
	example  Failure
	byStream map[string]int
	byTenant map[string]int
	byReason map[string]int
	quotas   []Quota
	// quotasLeftOut counts the thresholds past maxKeys.
	quotasLeftOut int
}

func (w *window) empty() bool { return w.count == 0 && len(w.quotas) == 0 && w.quotasLeftOut == 0 }

// open starts the window at since unless something is pending already.
func (w *window) open(since time.Time) {
	if w.empty() {
		*w = window{since: since, byStream: map[string]int{}, byTenant: map[string]int{}, byReason: map[string]int{}}
	}
}

func (w *window) addQuota(q Quota) {
	if len(w.quotas) >= maxKeys {
		w.quotasLeftOut++
		return
	}
	w.quotas = append(w.quotas, q)
}

func (w *window) addFailure(f Failure, class string) {
	if w.count == 0 {
		w.example = f
	}
	w.count++
	bump(w.byStream, streamKey(f))
	bump(w.byTenant, cmp.Or(f.Tenant, "(none)"))
	bump(w.byReason, class)
}

func bump(m map[string]int, key string) {
	if _, ok := m[key]; !ok && len(m) >= maxKeys {
		key = otherKey
	}
	m[key]++
}

func streamKey(f Failure) string {
	key := cmp.Or(f.Stream, "(unknown stream)")
	if f.Consumer != "" {
		key += " > " + f.Consumer
	}
	return key
}

// topReasons is how many reason classes a summary lists.
const topReasons = 5

func (w window) summary(until time.Time) Summary {
	s := Summary{Count: w.count, Since: w.since.UTC(), Until: until.UTC(),
		ByStream: w.byStream, ByTenant: w.byTenant, Example: w.example, Quotas: w.quotas, QuotasLeftOut: w.quotasLeftOut}
	s.Example.Time = s.Example.Time.UTC()
	for i := range s.Quotas {
		s.Quotas[i].Time = s.Quotas[i].Time.UTC()
	}
	// A tenant's thresholds together: they arrive in any order, from
	// workers and replicas in parallel.
	slices.SortStableFunc(s.Quotas, func(a, b Quota) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.Month, b.Month),
			cmp.Compare(a.Threshold, b.Threshold))
	})
	s.TopReasons = make([]ReasonCount, 0, topReasons) // [] in JSON, never null
	for _, r := range ranked(w.byReason, topReasons) {
		s.TopReasons = append(s.TopReasons, ReasonCount{Reason: r.key, Count: r.n})
	}
	return s
}

type keyCount struct {
	key string
	n   int
}

// ranked returns m's largest counts, largest first, at most limit of them.
func ranked(m map[string]int, limit int) []keyCount {
	out := make([]keyCount, 0, len(m))
	for k, n := range m {
		out = append(out, keyCount{k, n})
	}
	slices.SortFunc(out, func(a, b keyCount) int {
		return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.key, b.key))
	})
	return out[:min(limit, len(out))]
}
