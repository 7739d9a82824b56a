package alert_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/dlq/alert"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The three causes a burst is made of, each with ids that differ per failure.
var (
	illegalAddress = func(i int) string {
		return fmt.Sprintf("faulty: permanent: HTTP 400: Illegal address (request id fake-%d)", i)
	}
	renderFailed = func(i int) string {
		return fmt.Sprintf("render failed after %d tries: rendering acme/PO-%d/invoice.pdf: template: missing", i%5+1, i)
	}
	invalidEvent = func(i int) string {
		return fmt.Sprintf("invalid event: tenant: is required (event %q)", fmt.Sprint("evt-", i))
	}
)

const (
	illegalAddressClass = "faulty: permanent: HTTP 400: Illegal address (request id {id})"
	renderFailedClass   = "render failed after {n} tries: rendering {path}: template: missing"
	invalidEventClass   = `invalid event: tenant: is required (event "…")`
)

func failure(i int) alert.Failure {
	f := alert.Failure{Stream: "NOTIFY", Consumer: "email-normal", Subject: "notify.email.normal.acme", Tenant: "acme"}
	switch i % 10 {
	case 0, 2, 4, 6, 8:
		f.Reason = illegalAddress(i)
	case 1, 3, 5:
		f.Stream, f.Consumer, f.Subject, f.Reason = "DOCS", "render", "docs.render.acme", renderFailed(i)
	default:
		f.Stream, f.Consumer, f.Subject, f.Tenant, f.Reason = "ORDERS", "router", "orders.created", "", invalidEvent(i)
	}
	return f
}

func TestSingleFailureAlertsAtOnce(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	slack := newFakeSlack(t)
	tb.cfg.Senders = []alert.Sender{alert.Slack{URL: slack.url, Client: slack.client()}}
	agg, stop := start(t, tb.cfg) // the fake clock never ends the window: only the first-alert path can send

	agg.Add(failure(0))
	require.Eventually(t, func() bool { return len(slack.delivered()) == 1 }, 2*time.Second, 5*time.Millisecond)
	stop()

	texts := slack.delivered()
	require.Len(t, texts, 1, "nothing was pending at shutdown, so nothing more is sent")
	require.Equal(t, strings.Join([]string{
		":rotating_light: Herald gave up on 1 message",
		"*Streams*",
		"• NOTIFY > email-normal: 1",
		"*Top reasons*",
		"• 1 × `faulty: permanent: HTTP 400: Illegal address (request id {id})`",
		"*Tenants*: acme 1",
		"*Example*: `notify.email.normal.acme` at ",
	}, "\n"), texts[0][:strings.LastIndex(texts[0], " at ")+4])
	require.Equal(t, 1, countIn(t, texts[0]))
}

func TestBurstIsAggregated(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	slack, hook := newFakeSlack(t), newFakeWebhook(t)
	tb.cfg.Senders = []alert.Sender{
		alert.Slack{URL: slack.url, Client: slack.client()},
		alert.Webhook{URL: hook.url, Client: hook.client()},
	}
	agg, stop := start(t, tb.cfg)

	// The fake clock stands still: the whole burst falls within one window.
	const goroutines, each = 8, 1250
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for j := range each {
				agg.Add(failure(g*each + j))
			}
		})
	}
	wg.Wait()

	total := func() int {
		n := 0
		for _, s := range hook.summaries(t) {
			n += s.Count
		}
		return n
	}
	tb.clock.advanceWhenArmed(t, tb.cfg.Window)
	require.Eventually(t, func() bool { return total() == goroutines*each }, 5*time.Second, 10*time.Millisecond)
	// One more window, in which nothing came: the burst is over, and the
	// aggregator waits for the next failure instead of opening a window.
	tb.clock.advanceWhenArmed(t, tb.cfg.Window)
	require.Eventually(t, func() bool { return !tb.clock.armed(tb.cfg.Window) }, 5*time.Second, 5*time.Millisecond)
	stop() // waits for the senders, so a stray alert would be in by now

	summaries, texts := hook.summaries(t), slack.delivered()
	require.LessOrEqual(t, len(summaries), 2, "one alert at once, one when the window ends")
	require.Len(t, texts, len(summaries))
	require.Equal(t, goroutines*each, total())
	slackTotal := 0
	for _, text := range texts {
		slackTotal += countIn(t, text)
	}
	require.Equal(t, goroutines*each, slackTotal)

	reasons, streams, tenants := map[string]int{}, map[string]int{}, map[string]int{}
	for _, s := range summaries {
		for _, r := range s.TopReasons {
			reasons[r.Reason] += r.Count
		}
		for k, n := range s.ByStream {
			streams[k] += n
		}
		for k, n := range s.ByTenant {
			tenants[k] += n
		}
	}
	require.Equal(t, map[string]int{illegalAddressClass: 5000, renderFailedClass: 3000, invalidEventClass: 2000}, reasons)
	require.Equal(t, map[string]int{"NOTIFY > email-normal": 5000, "DOCS > render": 3000, "ORDERS > router": 2000}, streams)
	require.Equal(t, map[string]int{"acme": 8000, "(none)": 2000}, tenants)
}

func TestLongBurstAlertsAboutOncePerWindow(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	hook := newFakeWebhook(t)
	tb.cfg.Window = 100 * time.Millisecond
	tb.cfg.Senders = []alert.Sender{alert.Webhook{URL: hook.url, Client: hook.client()}}
	agg, stop := start(t, tb.cfg)

	// A failure every 5 ms for six windows. The clock moves on only once the
	// aggregator has set its window, as a real one would while it works.
	const step, steps = 5 * time.Millisecond, 120
	began := tb.clock.Now()
	for i := range steps {
		agg.Add(failure(i))
		tb.clock.waitArmed(t, tb.cfg.Window)
		tb.clock.advance(step)
	}
	require.Eventually(t, func() bool {
		n := 0
		for _, s := range hook.summaries(t) {
			n += s.Count
		}
		return n == steps
	}, 5*time.Second, 10*time.Millisecond)
	stop()

	// One alert at once, then one as each of the six windows ends: the
	// package doc's bound, 1 + ceil(burst/window).
	summaries := hook.summaries(t)
	require.Len(t, summaries, 7)
	for i, s := range summaries {
		require.Equal(t, began.Add(time.Duration(i)*tb.cfg.Window), s.Until, "alerts are a window apart")
		if i > 0 {
			require.Equal(t, summaries[i-1].Until, s.Since, "each summary covers the time since the one before")
		}
	}
}

func TestWebhookSendsTheDocumentedJSON(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	hook := newFakeWebhook(t)
	now := tb.clock.Now()
	tb.cfg.Senders = []alert.Sender{alert.Webhook{URL: hook.url, Client: hook.client(),
		Header: http.Header{"Authorization": {"Bearer s3cret"}}}}
	agg, _ := start(t, tb.cfg)

	f := failure(0)
	f.Time = now.Add(-500 * time.Millisecond)
	agg.Add(f)
	require.Eventually(t, func() bool { return len(hook.bodies()) == 1 }, 2*time.Second, 5*time.Millisecond)

	body := hook.bodies()[0]
	var keys map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &keys))
	require.ElementsMatch(t, []string{"count", "since", "until", "by_stream", "by_tenant", "top_reasons", "example"}, slices.Collect(maps.Keys(keys)))
	require.Equal(t, hookSummary{
		Count: 1, Since: now, Until: now,
		ByStream:   map[string]int{"NOTIFY > email-normal": 1},
		ByTenant:   map[string]int{"acme": 1},
		TopReasons: []hookReason{{Reason: illegalAddressClass, Count: 1}},
		Example: hookFailure{Stream: "NOTIFY", Consumer: "email-normal", Subject: "notify.email.normal.acme",
			Tenant: "acme", Reason: illegalAddress(0), Time: now.Add(-500 * time.Millisecond)},
	}, decodeStrictly(t, body))
	require.Equal(t, "Bearer s3cret", hook.lastAuthorization())
}

func TestSlackRetriesUntilItIsHeard(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	slack := newFakeSlack(t, http.StatusInternalServerError, http.StatusTooManyRequests)
	tb.cfg.Senders = []alert.Sender{alert.Slack{URL: slack.url, Client: slack.client()}}
	agg, stop := start(t, tb.cfg)

	agg.Add(failure(0))
	tb.clock.advanceWhenArmed(t, tb.cfg.RetryDelay) // after the 500
	// After the 429, the retry waits its Retry-After: 1, not twice RetryDelay.
	tb.clock.advanceWhenArmed(t, time.Second)
	require.Eventually(t, func() bool { return len(slack.delivered()) == 1 }, 5*time.Second, 10*time.Millisecond)
	stop()

	require.Equal(t, 3, slack.tries())
	require.Equal(t, map[string]int64{"slack sent": 1}, tb.alertsCounted(t))
	require.Contains(t, tb.logs.String(), "the slack webhook: HTTP 500: Internal Server Error (internal_error)")
	require.Contains(t, tb.logs.String(), "the slack webhook: HTTP 429: Too Many Requests (rate_limited)")
	require.NotContains(t, tb.logs.String(), slack.url)
	require.NotContains(t, tb.logs.String(), slackSecret)
}

func TestAFailingSenderBlocksNobody(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	down, hung, hook := newFakeSlack(t), newFakeSlack(t), newFakeWebhook(t)
	down.failAlways(http.StatusInternalServerError)
	hung.hangAlways()
	tb.cfg.Senders = []alert.Sender{
		alert.Slack{URL: down.url, Client: down.client()},
		&alert.Slack{URL: hung.url, Client: hung.client()}, // a pointer counts as "slack" too
		alert.Webhook{URL: hook.url, Client: hook.client()},
	}
	agg, stop := start(t, tb.cfg)

	agg.Add(failure(0))
	require.Eventually(t, func() bool { return len(hook.bodies()) == 1 && hung.hanging() == 1 }, 5*time.Second, 5*time.Millisecond,
		"the webhook did not wait for the hung slack")
	// Time passes until both slacks gave up, SendTimeout ending each hung
	// try. It passes only while every try under way is held by the hung
	// slack: one still on its way would be cut short before it arrived.
	require.Eventually(t, func() bool {
		if strings.Count(tb.logs.String(), `msg="alert not sent"`) == 2 {
			return true
		}
		// Every try's timeout is the hung slack's, which both its client
		// and its server hold: no other try is on its way (the failing
		// slack's own would be cut short — counted, its timer could pass
		// for that of a hung try already timed out and still unwinding),
		// and the last hung one has arrived.
		w := tb.clock.waiting(tb.cfg.SendTimeout)
		if down.calling.Load() == 0 && w == int(hung.calling.Load()) && w == hung.hanging() {
			tb.clock.advanceToNext()
		}
		return false
	}, 10*time.Second, 5*time.Millisecond)
	stop()

	require.Equal(t, 4, down.tries())
	require.Equal(t, 4, hung.tries())
	require.Equal(t, map[string]int64{"slack failed": 2, "webhook sent": 1}, tb.alertsCounted(t))
	logs := tb.logs.String()
	require.Contains(t, logs, "4 tries failed, the last with: the slack webhook: HTTP 500: Internal Server Error")
	require.Contains(t, logs, "4 tries failed, the last with: posting to the slack webhook: context deadline exceeded")
	for _, u := range []string{down.url, hung.url, hook.url, slackSecret, webhookSecret} {
		require.NotContains(t, logs, u)
	}
}

func TestErrorsNeverQuoteTheURL(t *testing.T) {
	t.Parallel()
	down := newFakeSlack(t)
	down.failAlways(http.StatusNotFound)
	hung := newFakeSlack(t)
	hung.hangAlways()
	port, err := heraldtest.RefusingPort(t, net.IPv4(127, 0, 0, 1))
	require.NoError(t, err)
	refused := fmt.Sprintf("http://127.0.0.1:%d/hooks/%s", port, webhookSecret)

	for name, tc := range map[string]struct {
		sender alert.Sender
		url    string
		want   string
	}{
		"an error status": {alert.Slack{URL: down.url, Client: down.client()}, down.url,
			"the slack webhook: permanent: HTTP 404: Not Found"},
		"no answer in time": {alert.Slack{URL: hung.url, Client: hung.client()}, hung.url,
			"posting to the slack webhook: context deadline exceeded"},
		"a refused connection": {alert.Webhook{URL: refused}, refused,
			"posting to the webhook: dial tcp"},
		"an invalid URL": {alert.Slack{URL: "https://hooks.slack.com/services/\x7f" + slackSecret}, "https://hooks.slack.com/services/\x7f" + slackSecret,
			"the URL of the slack webhook is not valid"},
		"no URL": {alert.Webhook{}, "", "the webhook has no URL"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			if tc.url == hung.url {
				ctx = expireWhenHeld(t, hung)
			}
			err := tc.sender.Send(ctx, alert.Summary{Count: 1})
			require.ErrorContains(t, err, tc.want)
			if tc.url != "" {
				require.NotContains(t, err.Error(), tc.url)
			}
			require.NotContains(t, err.Error(), slackSecret)
			require.NotContains(t, err.Error(), webhookSecret)
		})
	}
}

func TestShutdownFlushesWhatIsPending(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	hook := newFakeWebhook(t)
	tb.cfg.Senders = []alert.Sender{alert.Webhook{URL: hook.url, Client: hook.client()}}
	agg, stop := start(t, tb.cfg)

	agg.Add(failure(0))
	require.Eventually(t, func() bool { return len(hook.bodies()) == 1 }, 2*time.Second, 5*time.Millisecond)
	for i := 1; i <= 4; i++ {
		agg.Add(failure(i))
	}
	stop() // the fake clock never ends the window: only the shutdown can send these

	summaries := hook.summaries(t)
	require.Len(t, summaries, 2)
	require.Equal(t, []int{1, 4}, []int{summaries[0].Count, summaries[1].Count})
	require.Equal(t, summaries[0].Until, summaries[1].Since)
}

func TestShutdownIsBounded(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	hung := newFakeSlack(t)
	hung.hangAlways()
	tb.cfg.FlushTimeout = 200 * time.Millisecond
	tb.cfg.Senders = []alert.Sender{alert.Slack{URL: hung.url, Client: hung.client()}}
	agg, stop := start(t, tb.cfg)

	agg.Add(failure(0))
	require.Eventually(t, func() bool { return hung.hanging() == 1 }, 5*time.Second, 5*time.Millisecond)
	// Shutdown waits for the hung slack until FlushTimeout has passed, and no
	// longer: start's stop fails if Run does not return.
	flushTimedOut := make(chan bool, 1)
	go func() { flushTimedOut <- tb.clock.advanceOnceArmed(tb.cfg.FlushTimeout) }()
	stop()

	require.True(t, <-flushTimedOut, "shutdown set no FlushTimeout")
	require.Equal(t, map[string]int64{"slack failed": 1}, tb.alertsCounted(t))
}

func TestSlackEscapesMarkup(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	slack := newFakeSlack(t)
	tb.cfg.Senders = []alert.Sender{alert.Slack{URL: slack.url, Client: slack.client()}}
	agg, _ := start(t, tb.cfg)

	agg.Add(alert.Failure{Stream: "NOTIFY", Consumer: "email-normal", Tenant: "<!channel>", Reason: "<!here> `x` & *bold*"})
	require.Eventually(t, func() bool { return len(slack.delivered()) == 1 }, 2*time.Second, 5*time.Millisecond)

	raw := slack.rawTexts()[0]
	require.NotContains(t, raw, "<!channel>")
	require.NotContains(t, raw, "<!here>")
	require.Contains(t, raw, "• NOTIFY &gt; email-normal: 1")
	require.Contains(t, slack.delivered()[0], "• 1 × `<!here> '…' & *bold*`", "backticks would end the code span")
	require.Contains(t, slack.delivered()[0], "*Tenants*: <!channel> 1")
}

func TestWithoutSendersSummariesAreLogged(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	agg, stop := start(t, tb.cfg)

	agg.Add(failure(1))
	require.Eventually(t, func() bool { return strings.Contains(tb.logs.String(), `msg="Herald gave up on messages"`) }, 2*time.Second, 5*time.Millisecond)
	stop()

	require.Contains(t, tb.logs.String(), "count=1 ")
	require.Contains(t, tb.logs.String(), `top_reason="`+renderFailedClass+`"`)
}

func TestRunRunsOnce(t *testing.T) {
	t.Parallel()
	agg := alert.New(setup(t).cfg)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, agg.Run(ctx))
	require.ErrorContains(t, agg.Run(context.Background()), "Run was already called")
}

// testBundle is what every test needs: a config whose logs and metrics it
// can read.
type testBundle struct {
	cfg    alert.Config
	clock  *fakeClock
	logs   *logBuffer
	reader *sdkmetric.ManualReader
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	tb := &testBundle{clock: newFakeClock(), logs: &logBuffer{}, reader: sdkmetric.NewManualReader()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tb.reader))
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	tb.cfg = alert.Config{
		Window:     time.Minute,
		RetryDelay: 20 * time.Millisecond,
		// Longer than the clock is moved by any test that does not mean to
		// cut a send short, however slow the machine is to finish one.
		SendTimeout:   time.Hour,
		Logger:        slog.New(slog.NewTextHandler(tb.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		MeterProvider: mp,
		Clock:         tb.clock,
	}
	return tb
}

// alertsCounted reads herald.dlq.alerts as "sender outcome" → count.
func (tb *testBundle) alertsCounted(t *testing.T) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tb.reader.Collect(context.Background(), &rm))
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "herald.dlq.alerts" {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			require.True(t, ok)
			for _, dp := range sum.DataPoints {
				sender, _ := dp.Attributes.Value("sender")
				outcome, _ := dp.Attributes.Value("outcome")
				out[sender.AsString()+" "+outcome.AsString()] += dp.Value
			}
		}
	}
	return out
}

// start runs an aggregator until the returned stop is called or the test
// ends, and checks that Run returns nil, promptly.
func start(t *testing.T, cfg alert.Config) (*alert.Aggregator, func()) {
	t.Helper()
	agg := alert.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agg.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				require.Fail(t, "Run did not return after its context ended")
			}
		})
	}
	t.Cleanup(stop)
	return agg, stop
}

// countIn reads the count from an alert's first line.
func countIn(t *testing.T, text string) int {
	t.Helper()
	m := regexp.MustCompile(`Herald gave up on ([\d,]+) messages?`).FindStringSubmatch(text)
	require.NotNil(t, m, text)
	n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	require.NoError(t, err)
	return n
}

// The secret parts of the fakes' URLs, which must never be logged.
const (
	slackSecret   = "xoxsecretT0KEN"
	slackPath     = "/services/T0001/B0001/" + slackSecret
	webhookSecret = "whsecretT0KEN"
)

// fakeSlack answers like a Slack incoming webhook: POST application/json
// {"text": "..."}, answered 200 "ok", or 400 "invalid_payload" or 404
// "no_service" when the request is wrong. It can be told to fail first.
type fakeSlack struct {
	srv     *httptest.Server
	url     string
	release chan struct{}
	// calling counts the requests its client is waiting on: the server
	// learns a client gave up only a moment later.
	calling atomic.Int32

	mu     sync.Mutex
	fail   []int // statuses to answer, one per request, before accepting
	always int   // a status to answer every request with
	hang   bool  // never answer
	tried  int
	held   int // hung requests not yet given up by the client
	texts  []string
}

func newFakeSlack(t *testing.T, fail ...int) *fakeSlack {
	f := &fakeSlack{fail: fail, release: make(chan struct{})}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.release) }) // before Close, which waits for hung requests
	f.url = f.srv.URL + slackPath
	return f
}

func (f *fakeSlack) client() *http.Client {
	c := *f.srv.Client()
	c.Transport = countingTransport{RoundTripper: c.Transport, n: &f.calling}
	return &c
}

// countingTransport counts the round trips under way.
type countingTransport struct {
	http.RoundTripper
	n *atomic.Int32
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	defer t.n.Add(-1)
	return t.RoundTripper.RoundTrip(r)
}

func (f *fakeSlack) failAlways(status int) { f.mu.Lock(); f.always = status; f.mu.Unlock() }
func (f *fakeSlack) hangAlways()           { f.mu.Lock(); f.hang = true; f.mu.Unlock() }

func (f *fakeSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != slackPath {
		http.Error(w, "no_service", http.StatusNotFound)
		return
	}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var payload struct {
		Text string `json:"text"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if r.Method != http.MethodPost || mediaType != "application/json" || dec.Decode(&payload) != nil || payload.Text == "" {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.tried++
	status, hang := f.always, f.hang
	if status == 0 && len(f.fail) > 0 {
		status, f.fail = f.fail[0], f.fail[1:]
	}
	if status == 0 && !hang {
		f.texts = append(f.texts, payload.Text)
	}
	f.mu.Unlock()
	switch {
	case hang:
		f.mu.Lock()
		f.held++
		f.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-f.release:
		}
		f.mu.Lock()
		f.held--
		f.mu.Unlock()
	case status == http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "rate_limited", status)
	case status == http.StatusNotFound:
		http.Error(w, "no_service", status)
	case status != 0:
		http.Error(w, "internal_error", status)
	default:
		_, _ = w.Write([]byte("ok"))
	}
}

// expireWhenHeld returns a context whose deadline passes once f holds a
// request unanswered: a wall-clock deadline could pass before the request
// even arrived.
func expireWhenHeld(t *testing.T, f *fakeSlack) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(nil); <-done })
	go func() {
		defer close(done)
		for f.hanging() == 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
		cancel(context.DeadlineExceeded)
	}()
	return ctx
}

// delivered are the accepted texts as Slack shows them.
func (f *fakeSlack) delivered() []string {
	out := f.rawTexts()
	for i, s := range out {
		out[i] = html.UnescapeString(s)
	}
	return out
}

func (f *fakeSlack) rawTexts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.texts)
}

func (f *fakeSlack) tries() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tried
}

// hanging is how many requests the fake holds unanswered right now.
func (f *fakeSlack) hanging() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held
}

// fakeWebhook accepts any JSON POST with 202 and keeps it.
type fakeWebhook struct {
	srv *httptest.Server
	url string

	mu     sync.Mutex
	posts  [][]byte
	header http.Header
}

func newFakeWebhook(t *testing.T) *fakeWebhook {
	f := &fakeWebhook{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/hooks/"+webhookSecret || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.posts = append(f.posts, buf.Bytes())
		f.header = r.Header.Clone()
		f.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(f.srv.Close)
	f.url = f.srv.URL + "/hooks/" + webhookSecret
	return f
}

func (f *fakeWebhook) client() *http.Client { return f.srv.Client() }

func (f *fakeWebhook) bodies() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.posts)
}

func (f *fakeWebhook) lastAuthorization() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.header.Get("Authorization")
}

func (f *fakeWebhook) summaries(t *testing.T) []hookSummary {
	var out []hookSummary
	for _, b := range f.bodies() {
		out = append(out, decodeStrictly(t, b))
	}
	return out
}

// hookSummary is the documented JSON shape, written out independently of
// the package's types so that a change to them shows here.
type hookSummary struct {
	Count      int            `json:"count"`
	Since      time.Time      `json:"since"`
	Until      time.Time      `json:"until"`
	ByStream   map[string]int `json:"by_stream"`
	ByTenant   map[string]int `json:"by_tenant"`
	TopReasons []hookReason   `json:"top_reasons"`
	Example    hookFailure    `json:"example"`
	Quotas     []hookQuota    `json:"quotas,omitempty"`
	QuotasOut  int            `json:"quotas_left_out,omitempty"`
}

type hookQuota struct {
	Tenant    string    `json:"tenant"`
	Channel   string    `json:"channel"`
	Month     string    `json:"month"`
	Used      int64     `json:"used"`
	Quota     int64     `json:"quota"`
	Threshold int       `json:"threshold"`
	Time      time.Time `json:"time"`
}

type hookReason struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

type hookFailure struct {
	Stream   string    `json:"stream"`
	Consumer string    `json:"consumer"`
	Subject  string    `json:"subject"`
	Tenant   string    `json:"tenant"`
	Reason   string    `json:"reason"`
	Time     time.Time `json:"time"`
}

func decodeStrictly(t *testing.T, body []byte) hookSummary {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var s hookSummary
	require.NoError(t, dec.Decode(&s), string(body))
	return s
}

// logBuffer is a bytes.Buffer that several goroutines can log to.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fakeClock is an alert.Clock whose time moves only when the test moves it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*fakeTimer]struct{}
}

type fakeTimer struct {
	at time.Time
	d  time.Duration // as set, so tests can tell a window from a retry
	f  func()
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC), timers: map[*fakeTimer]struct{}{}}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := &fakeTimer{at: c.now.Add(d), d: d, f: f}
	c.timers[tm] = struct{}{}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, armed := c.timers[tm]
		delete(c.timers, tm)
		return armed
	}
}

// advance moves time on by d and fires the timers then due.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for tm := range c.timers {
		if !tm.at.After(c.now) {
			due = append(due, tm.f)
			delete(c.timers, tm)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

// advanceToNext moves time on to the earliest armed timer, if any.
func (c *fakeClock) advanceToNext() {
	c.mu.Lock()
	var next time.Duration
	for tm := range c.timers {
		if d := tm.at.Sub(c.now); next == 0 || d < next {
			next = d
		}
	}
	c.mu.Unlock()
	c.advance(next)
}

// armed reports whether a timer set for d is waiting.
func (c *fakeClock) armed(d time.Duration) bool { return c.waiting(d) > 0 }

// waiting counts the timers set for d that are waiting.
func (c *fakeClock) waiting(d time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for tm := range c.timers {
		if tm.d == d {
			n++
		}
	}
	return n
}

// armedDurations lists what the waiting timers were set for.
func (c *fakeClock) armedDurations() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for tm := range c.timers {
		out = append(out, tm.d)
	}
	return out
}

// armedWithin waits up to 10 s for the code under test to set a timer for d.
// It is safe to call from any goroutine.
func (c *fakeClock) armedWithin(d time.Duration) bool {
	for deadline := time.Now().Add(10 * time.Second); !c.armed(d); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// advanceOnceArmed waits for a timer set for d, then moves time on by d. It
// reports false if none was set. It is safe to call from any goroutine.
func (c *fakeClock) advanceOnceArmed(d time.Duration) bool {
	if !c.armedWithin(d) {
		return false
	}
	c.advance(d)
	return true
}

// waitArmed waits for the code under test to set a timer for d.
func (c *fakeClock) waitArmed(t *testing.T, d time.Duration) {
	t.Helper()
	require.True(t, c.armedWithin(d), "no timer was set for %s (armed: %v)", d, c.armedDurations())
}

// advanceWhenArmed waits for a timer set for d, then moves time on by d.
func (c *fakeClock) advanceWhenArmed(t *testing.T, d time.Duration) {
	t.Helper()
	c.waitArmed(t, d)
	c.advance(d)
}
