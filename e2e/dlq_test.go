package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/streams"
)

// slack is a fake Slack incoming webhook: it keeps every text posted. It
// also takes the same alerts as JSON at /hooks/, for the times they were cut.
type slack struct {
	srv       *httptest.Server
	mu        sync.Mutex
	texts     []string
	summaries []alertSummary
}

// alertSummary is the part of a webhook alert the tests read.
type alertSummary struct {
	Count int       `json:"count"`
	Until time.Time `json:"until"`
}

func fakeSlack(t *testing.T) *slack {
	s := &slack{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/hooks/") {
			var sum alertSummary
			if json.Unmarshal(b, &sum) != nil || sum.Count == 0 {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			s.mu.Lock()
			s.summaries = append(s.summaries, sum)
			s.mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var body struct {
			Text string `json:"text"`
		}
		if r.Method != http.MethodPost || json.Unmarshal(b, &body) != nil || body.Text == "" {
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.texts = append(s.texts, body.Text)
		s.mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// webhookAlerts are the alerts received as JSON, in the order they were cut.
func (s *slack) webhookAlerts() []alertSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.summaries)
	slices.SortFunc(out, func(a, b alertSummary) int { return a.Until.Compare(b.Until) })
	return out
}

func (s *slack) posts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.texts...)
}

// alertTo sends the DLQ service's alerts to s.
func (s *slack) alertTo(window time.Duration) func(*app.Config) {
	return func(c *app.Config) {
		c.DLQ.Alerts.SlackURLEnv = "SLACK_URL"
		c.DLQ.Alerts.WebhookURLEnv = "WEBHOOK_URL"
		c.DLQ.Alerts.Window = window
		getenv := c.Getenv
		c.Getenv = func(k string) string {
			switch k {
			case "SLACK_URL":
				return s.srv.URL + "/services/T000/B000/XXXX"
			case "WEBHOOK_URL":
				return s.srv.URL + "/hooks/XXXX"
			}
			if getenv == nil {
				return ""
			}
			return getenv(k)
		}
	}
}

// withoutDocuments routes orders straight to email, so a test about
// failures does not first render a PDF per order.
func withoutDocuments(c *app.Config) {
	c.Router.Routes = []router.Route{{Event: "order.created", Template: "purchase_order", Channels: []event.Channel{event.ChannelEmail}}}
}

// fastRetries retries at once, on every provider: with the circuit
// breakers off, every try calls both providers.
func fastRetries(c *app.Config) {
	c.Email.RetryDelay, c.Breakers.Failures = 10*time.Millisecond, -1
}

func oneRecipientOrder(t *testing.T, n int) []byte {
	return sample(t, "order.created.json", func(m map[string]any) {
		m["id"] = fmt.Sprintf("evt-dlq-%d", n)
		data := m["data"].(map[string]any)
		data["order"].(map[string]any)["id"] = fmt.Sprintf("PO-DLQ-%03d", n)
		data["recipients"] = []any{map[string]any{"name": "Compras", "role": "buyer", "email": "compras@frutasdelsur.example", "channels": []any{"email"}}}
	})
}

func TestExhaustedDeliveriesLandInTheDLQAndAlertOnce(t *testing.T) {
	t.Parallel()
	f := fakeProviders(t)
	f.ses.Faults(func(int) sestest.Fault { return sestest.ServerError })
	f.sg.Faults(func(int) sendgridtest.Fault { return sendgridtest.ServerError })
	s := fakeSlack(t)
	p := startPipeline(t, f.configure, withoutDocuments, s.alertTo(time.Minute), fastRetries)
	p.publish(t, "orders.created", "evt-dlq-1", oneRecipientOrder(t, 1))

	require.Eventually(t, func() bool { return len(p.streamMessages(t, "DLQ")) == 1 }, 30*time.Second, 50*time.Millisecond)
	p.settle(t)
	entry := p.streamMessages(t, "DLQ")[0]
	require.Equal(t, "dlq.NOTIFY.email-normal", entry.Subject)
	require.Equal(t, "10", entry.Header.Get(deadletter.HeaderDeliveries), "MaxDeliver tries")
	require.Contains(t, entry.Header.Get(deadletter.HeaderReason), "gave up after 10 tries")
	require.Contains(t, entry.Header.Get(deadletter.HeaderReason), "sendgrid: HTTP 500")
	require.Equal(t, "acme", entry.Header.Get(deadletter.HeaderTenant))
	d, err := notification.Decode(entry.Data)
	require.NoError(t, err, "the entry keeps the delivery, byte for byte")
	require.Equal(t, "acme:PO-DLQ-001:1:purchase_order:email:compras@frutasdelsur.example", d.DedupeKey)
	require.Empty(t, p.streamMessages(t, "NOTIFY"), "the original is gone from its work queue")
	require.Equal(t, 10, f.ses.Calls())

	require.Eventually(t, func() bool { return len(s.posts()) == 1 }, 60*time.Second, 20*time.Millisecond)
	require.Contains(t, s.posts()[0], "NOTIFY")
	require.Contains(t, s.posts()[0], "HTTP 500")
	// Stopping flushes what the aggregator still holds: a second alert would
	// be out by the time Stop returns.
	require.NoError(t, p.dev.App.Stop(heraldtest.Context(t)))
	require.Len(t, s.posts(), 1, "one failure, one alert")
}

// Workers that die on every message (a poison message, a crash loop) never
// settle it: the server gives up after MaxDeliver and says so in an
// advisory, which waits in ADVISORIES until the DLQ service reads it.
func TestAdvisoriesWaitWhileTheDLQServiceIsDown(t *testing.T) {
	t.Parallel()
	p := startPipeline(t, withoutDocuments, func(c *app.Config) { c.Services = []string{"router"} })
	ctx := heraldtest.Context(t)
	// The tenant's consumer, as a fair delivery worker makes it from the
	// declared durable.
	declared, err := streams.Find("NOTIFY")
	require.NoError(t, err)
	template, err := declared.Consumer("email-normal")
	require.NoError(t, err)
	cfg := template.Config
	cfg.Durable, cfg.Name, cfg.FilterSubject, cfg.FilterSubjects = "", "email-normal_acme", "notify.email.normal.acme", nil
	cfg.MaxDeliver, cfg.AckWait = 2, 300*time.Millisecond
	cons, err := p.js.CreateConsumer(ctx, "NOTIFY", cfg)
	require.NoError(t, err)

	const n = 100
	for i := range n {
		p.publishAsync(t, "orders.created", fmt.Sprintf("evt-dlq-%d", i), oneRecipientOrder(t, i))
	}
	p.waitPublished(t)
	// A worker that takes every message and dies before settling it.
	require.Eventually(t, func() bool {
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(100*time.Millisecond))
		require.NoError(t, err)
		for range batch.Messages() {
		}
		return len(p.streamMessages(t, "ADVISORIES")) == n
	}, 60*time.Second, 10*time.Millisecond)
	require.Empty(t, p.streamMessages(t, "DLQ"))
	require.Len(t, p.streamMessages(t, "NOTIFY"), n, "exhausted messages stay in their stream…")

	p.startApp(t, "dlq")
	require.Eventually(t, func() bool { return len(p.streamMessages(t, "NOTIFY")) == 0 }, 60*time.Second, 50*time.Millisecond,
		"…until the DLQ service, started late, moves them")
	entries := p.streamMessages(t, "DLQ")
	require.Len(t, entries, n)
	seen := map[string]bool{}
	for _, e := range entries {
		seq := e.Header.Get(deadletter.HeaderSequence)
		require.False(t, seen[seq], "no duplicates")
		seen[seq] = true
		require.Equal(t, "2", e.Header.Get(deadletter.HeaderDeliveries))
		require.Contains(t, e.Header.Get(deadletter.HeaderReason), "exhausted 2 deliveries to NOTIFY > email-normal_acme without being settled")
		require.Equal(t, "dlq.NOTIFY.email-normal", e.Subject, "filed under the durable the tenant's consumer was made from")
	}
}

func TestRedriveAfterRecoverySendsOnceEvenWhenRedrivenTwice(t *testing.T) {
	t.Parallel()
	f := fakeProviders(t)
	f.ses.Faults(func(int) sestest.Fault { return sestest.ServerError })
	f.sg.Faults(func(int) sendgridtest.Fault { return sendgridtest.ServerError })
	// Three tries, not the default ten: a retried message waits for the
	// fair loop's next discovery (a second), and what is tested is what
	// redriving does, not how many tries came before.
	p := startPipeline(t, f.configure, withoutDocuments, fastRetries, func(c *app.Config) { c.Email.MaxTries = 3 })
	const n = 5
	for i := range n {
		p.publish(t, "orders.created", fmt.Sprintf("evt-dlq-%d", i), oneRecipientOrder(t, i))
	}
	require.Eventually(t, func() bool { return len(p.streamMessages(t, "DLQ")) == n }, 60*time.Second, 50*time.Millisecond)
	p.settle(t)
	require.Empty(t, f.sent(t))

	f.ses.Faults(nil) // SES recovers
	ctx := heraldtest.Context(t)
	entries, err := dlq.OpenEntries(ctx, p.js)
	require.NoError(t, err)
	redriveAll := func() {
		var list []dlq.Entry
		require.NoError(t, entries.Each(ctx, dlq.Filter{Stream: "NOTIFY"}, func(e dlq.Entry) error { list = append(list, e); return nil }))
		require.Len(t, list, n)
		for _, e := range list {
			_, err := entries.Redrive(ctx, e)
			require.NoError(t, err)
		}
	}
	redriveAll()
	p.settle(t)
	redriveAll()
	p.settle(t)

	sent := f.sent(t)
	require.Len(t, sent, n)
	for id, count := range sent {
		require.Equal(t, 1, count, id)
	}
	var list []dlq.Entry
	require.NoError(t, entries.Each(ctx, dlq.Filter{}, func(e dlq.Entry) error { list = append(list, e); return nil }))
	for _, e := range list {
		require.NotNil(t, e.Redriven)
		require.Equal(t, 2, e.Redriven.Count)
	}
}

func TestABurstOfFailuresSendsABoundedNumberOfAlerts(t *testing.T) {
	if testing.Short() {
		t.Skip("3,000 failures")
	}
	t.Parallel()
	s := fakeSlack(t)
	// A burst that spans several windows: 3,000 failures take seconds to
	// dead-letter, more under -race (10,000 in 2 s windows cost a minute of
	// CPU there).
	window := time.Second
	p := startPipeline(t, s.alertTo(window))
	p.startApp(t, "dlq") // a second replica: still one alert stream, not one per replica
	const n = 3_000
	for i := range n {
		p.publishAsync(t, "orders.created", "bad-"+strconv.Itoa(i), []byte(`{"specversion":"1.0","id":"bad-`+strconv.Itoa(i)+`"}`))
	}
	p.waitPublished(t)
	require.Eventually(t, func() bool { return len(p.streamMessages(t, "DLQ")) == n }, 2*time.Minute, 200*time.Millisecond)
	// The last alert comes when the window open at the end of the burst ends.
	require.Eventually(t, func() bool {
		webhookTotal := 0
		for _, a := range s.webhookAlerts() {
			webhookTotal += a.Count
		}
		return alerted(t, s.posts()) >= n && webhookTotal >= n
	}, 2*time.Minute, 100*time.Millisecond)
	require.Equal(t, n, alerted(t, s.posts()), "every failure is counted in one alert")

	// The aggregator's own cut times, not arrival times, show the bound: a
	// burst of D makes at most 1 + D/window alerts because each comes a
	// window after the one before. Two replicas alerting would not.
	alerts := s.webhookAlerts()
	for i := 1; i < len(alerts); i++ {
		require.GreaterOrEqual(t, alerts[i].Until.Sub(alerts[i-1].Until), window, "at most one alert per window, plus the first")
	}
	t.Logf("%d failures over %s: %d alerts", n, alerts[len(alerts)-1].Until.Sub(alerts[0].Until), len(alerts))
}

// alerted sums the failures the alerts counted.
func alerted(t *testing.T, posts []string) int {
	t.Helper()
	total := 0
	for _, text := range posts {
		m := regexp.MustCompile(`gave up on ([\d,]+) message`).FindStringSubmatch(text)
		require.NotNil(t, m, text)
		c, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		require.NoError(t, err)
		total += c
	}
	return total
}

// One DLQ replica at a time aggregates alerts (the alerts consumer pins a
// client); when it stops, another takes over and nothing goes unalerted.
func TestAlertingMovesToAnotherReplicaWhenOneStops(t *testing.T) {
	t.Parallel()
	s := fakeSlack(t)
	p := startPipeline(t, s.alertTo(200*time.Millisecond), func(c *app.Config) { c.Services = []string{"router"} })
	ctx := heraldtest.Context(t)
	c, err := p.js.Consumer(ctx, dlq.Stream, dlq.AlertsDurable)
	require.NoError(t, err)
	cfg := c.CachedInfo().Config
	require.Equal(t, jetstream.PriorityPolicyPinned, cfg.PriorityPolicy, "as declared")
	cfg.PinnedTTL = 2 * time.Second // production: 1 min
	_, err = p.js.UpdateConsumer(ctx, dlq.Stream, cfg)
	require.NoError(t, err)

	replicas := []*app.App{p.startApp(t, "dlq"), p.startApp(t, "dlq")}
	sent := 0
	burst := func(n int) {
		for range n {
			sent++
			p.publish(t, "orders.created", fmt.Sprintf("bad-%d", sent), []byte(fmt.Sprintf(`{"specversion":"1.0","id":"bad-%d"}`, sent)))
		}
		require.Eventually(t, func() bool { return alerted(t, s.posts()) == sent }, 30*time.Second, 50*time.Millisecond,
			"every failure alerted, once")
	}
	burst(20)
	// Stop one replica, then the other, with a third started between: one
	// of the stops is the pinned replica's, whichever it was.
	require.NoError(t, replicas[0].Stop(ctx))
	burst(20)
	last := p.startApp(t, "dlq")
	require.NoError(t, replicas[1].Stop(ctx))
	burst(20)
	// Stopping the last replica flushes what it holds: a failure alerted
	// twice would be out by the time Stop returns.
	require.NoError(t, last.Stop(ctx))
	require.Equal(t, sent, alerted(t, s.posts()), "no failure alerted twice")
}
