package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/tenant"
)

// providers are fake SES and SendGrid APIs; Herald's real SDK clients talk
// to them over HTTP.
type providers struct {
	ses *sestest.Server
	sg  *sendgridtest.Server
}

func fakeProviders(t *testing.T) providers {
	return providers{ses: sestest.New(t), sg: sendgridtest.New(t, "SG.e2e-secret")}
}

// configure points Herald at the fakes, as a config file would, with the
// secrets in (fake) environment variables.
func (f providers) configure(c *app.Config) {
	c.Email.From = "Orders <orders@acme.example>"
	c.Email.Providers = []app.ProviderConfig{
		{Type: "ses", Region: "eu-west-1", Endpoint: f.ses.URL(), AccessKeyIDEnv: "SES_ID", SecretAccessKeyEnv: "SES_SECRET"},
		{Type: "sendgrid", Endpoint: f.sg.URL(), APIKeyEnv: "SG_KEY"},
	}
	c.Email.RetryDelay = 100 * time.Millisecond
	c.Email.Timeout = time.Second
	env := map[string]string{"SES_ID": "AKIAE2E", "SES_SECRET": "e2e-secret-key", "SG_KEY": "SG.e2e-secret"}
	c.Getenv = func(k string) string { return env[k] }
}

// sent counts, per notification id, the emails the providers accepted.
func (f providers) sent(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, r := range f.ses.Received() {
		m, err := mail.ReadMessage(bytes.NewReader(r.Raw))
		require.NoError(t, err)
		out[m.Header.Get("X-Herald-Notification-Id")]++
	}
	for _, r := range f.sg.Received() {
		out[r.Headers["X-Herald-Notification-Id"]]++
	}
	return out
}

func (p *pipeline) ledgerEntry(t *testing.T, dedupeKey string) ledger.Entry {
	t.Helper()
	ctx := heraldtest.Context(t)
	l, err := ledger.Open(ctx, p.js)
	require.NoError(t, err)
	e, err := l.Get(ctx, "acme", dedupeKey)
	require.NoError(t, err)
	return e
}

const (
	olgaKey    = "acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example"
	comprasKey = "acme:PO-2026-0042:1:purchase_order:email:compras@frutasdelsur.example"
)

func TestSESFailuresFallBackToSendGridOnce(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		fault     sestest.Fault
		ambiguous int // SES may have taken it: counted, and the residual window
		sesKept   int // SES took it without saying so: the recipient gets it twice
	}{
		"SES answers 500":               {sestest.ServerError, 0, 0},
		"SES answers without MessageId": {sestest.NoMessageID, 2, 1},
		"SES times out":                 {sestest.Timeout(5 * time.Second), 2, 0},
		"SES is throttling":             {sestest.Throttle(time.Second), 0, 0},
		"SES account suspended":         {sestest.AccountSuspended, 0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := fakeProviders(t)
			f.ses.Faults(func(int) sestest.Fault { return tc.fault })
			p := startPipeline(t, f.configure)
			p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
			p.settle(t)

			require.Equal(t, map[string]int{notification.ID(olgaKey): 1 + tc.sesKept, notification.ID(comprasKey): 1 + tc.sesKept}, f.sent(t))
			require.Len(t, f.sg.Received(), 2, "both went out through SendGrid")
			require.Equal(t, 2, f.ses.Calls(), "SES was tried once per email, no SDK retries")
			e := p.ledgerEntry(t, olgaKey)
			require.Equal(t, ledger.Delivered, e.State)
			require.Equal(t, "sendgrid", e.Provider)
			require.Equal(t, 1, e.Tries, "one try: SES failed, SendGrid accepted, in one pass")
			require.Equal(t, tc.ambiguous > 0, e.Attempts[0].Ambiguous)
			_, metrics := p.get(t, "/metrics")
			if tc.ambiguous > 0 {
				require.Contains(t, metrics, fmt.Sprintf(`herald_delivery_ambiguous_total{channel="email",tenant="acme"} %d`, tc.ambiguous))
			} else {
				require.NotContains(t, metrics, "herald_delivery_ambiguous_total{")
			}
		})
	}
}

func TestBothProvidersDownThenBackDeliversOnceWithTheAttemptsRecorded(t *testing.T) {
	t.Parallel()
	f := fakeProviders(t)
	f.ses.Faults(emailtest.FailFirst(6, sestest.ServerError))
	f.sg.Faults(emailtest.FailFirst(6, sendgridtest.ServerError))
	p := startPipeline(t, f.configure)
	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
	p.settle(t)

	require.Equal(t, map[string]int{notification.ID(olgaKey): 1, notification.ID(comprasKey): 1}, f.sent(t))
	for _, key := range []string{olgaKey, comprasKey} {
		e := p.ledgerEntry(t, key)
		require.Equal(t, ledger.Delivered, e.State)
		require.Greater(t, e.Tries, 1)
		require.Len(t, e.Attempts, e.Tries)
		for _, a := range e.Attempts[:len(e.Attempts)-1] {
			require.Contains(t, a.Error, "ses: ")
			require.Contains(t, a.Error, "sendgrid: ")
		}
	}
}

func TestProviderRefusalsAreFinal(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		fault  sestest.Fault
		reason string
	}{
		"400 invalid address": {sestest.InvalidAddress, "Illegal address"},
		"401 unauthorized":    {sestest.Unauthorized, "authentication rejected"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := fakeProviders(t)
			f.ses.Faults(func(int) sestest.Fault { return tc.fault })
			p := startPipeline(t, f.configure)
			p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
			p.settle(t)

			require.Empty(t, f.sent(t))
			require.Equal(t, 2, f.ses.Calls(), "no retry")
			require.Zero(t, f.sg.Calls(), "a permanent refusal ends the pass")
			e := p.ledgerEntry(t, olgaKey)
			require.Equal(t, ledger.Failed, e.State)
			require.False(t, e.Retryable)
			require.Contains(t, e.Reason, tc.reason)
			dlq := p.streamMessages(t, "DLQ")
			require.Len(t, dlq, 2)
			for _, m := range dlq {
				require.Equal(t, "dlq.NOTIFY.email-normal", m.Subject)
				require.Contains(t, m.Header.Get(deadletter.HeaderReason), tc.reason)
				require.NotContains(t, m.Header.Get(deadletter.HeaderReason), "e2e-secret")
			}
		})
	}
}

// 500 orders × 5 recipients; 10% of events published twice — half right
// away, half after the duplicate windows have passed — and 20% of provider
// calls failing transiently. Every (order, recipient) gets exactly one email.
func TestLoadWithDuplicatesAndFaultsSendsEachEmailOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	t.Parallel()
	const orders, recipients = 500, 5
	f := fakeProviders(t)
	f.ses.Faults(emailtest.FailEvery(5, sestest.ServerError))
	f.sg.Faults(emailtest.FailEvery(5, sendgridtest.ServerError))
	// Notifications without a document: this run is about delivery, not
	// about rendering a thousand PDFs under the race detector.
	// Nor about the listing: the history service's SQLite, pure Go, is slow
	// under the race detector and would only compete for the CPU.
	p := startPipeline(t, f.configure, func(c *app.Config) {
		c.Router.Routes = []router.Route{{Event: "order.created", Template: "purchase_order", Channels: []event.Channel{event.ChannelEmail}}}
		c.Services = slices.DeleteFunc(slices.Clone(app.Targets), func(s string) bool { return s == "history" || s == "outbox-relay" })
		// The faults are answers, never silences: a provider call cut
		// short by a loaded machine would leave a send ambiguous (the one
		// duplicate Herald allows), and under -race on two cores SES calls
		// outlast a one-second timeout.
		c.Email.Timeout = 10 * time.Second
	})
	shrinkDuplicateWindows(t, p, time.Second)

	want := map[string]int{}
	events := make([][]byte, orders)
	for i := range orders {
		id := fmt.Sprintf("PO-LOAD-%04d", i)
		events[i] = sample(t, "order.created.json", func(m map[string]any) {
			m["id"] = "evt-" + id
			data := m["data"].(map[string]any)
			data["order"].(map[string]any)["id"] = id
			var rs []any
			for r := range recipients {
				addr := fmt.Sprintf("buyer%d@customer%d.example", r, i%7)
				rs = append(rs, map[string]any{"name": fmt.Sprintf("Buyer %d", r), "role": "buyer", "email": addr, "channels": []any{"email"}})
				want[notification.ID(fmt.Sprintf("acme:%s:1:purchase_order:email:%s", id, addr))] = 1
			}
			data["recipients"] = rs
		})
	}
	for i, e := range events {
		p.publishAsync(t, "orders.created", fmt.Sprintf("evt-%d", i), e)
		if i%20 == 0 { // 5%: again at once, inside the window
			p.publishAsync(t, "orders.created", fmt.Sprintf("evt-%d", i), e)
		}
	}
	p.waitPublished(t)
	time.Sleep(1500 * time.Millisecond) // past the (shrunken) duplicate windows
	for i := 10; i < orders; i += 20 {  // 5%: again, outside the window
		p.publishAsync(t, "orders.created", fmt.Sprintf("evt-%d", i), events[i])
	}
	p.waitPublished(t)
	p.settle(t)

	got := f.sent(t)
	require.Len(t, got, orders*recipients)
	var twice []string
	for id, n := range got {
		if n != 1 {
			twice = append(twice, fmt.Sprintf("%s×%d", id, n))
		}
	}
	require.Empty(t, twice, "emails sent more than once")
	require.Equal(t, want, got)
	_, metrics := p.get(t, "/metrics")
	// A copy past the windows is stopped by the router's events bucket, or,
	// when it came while its original was still being routed, by the ledger.
	require.Regexp(t, `herald_router_events_total\{outcome="duplicate",tenant="acme",type="order.created"\} \d+|`+
		`herald_deliveries_total\{channel="email",outcome="duplicate",provider="[a-z]+",tenant="acme"\} \d+`, metrics,
		"copies past the duplicate windows were stopped by the router or the ledger")
	require.False(t, strings.Contains(metrics, `outcome="duplicate_sent"`))
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "herald_deliveries_total") || strings.HasPrefix(line, "herald_router_events_total") ||
			strings.HasPrefix(line, "herald_delivery_lock_contention_total") {
			t.Log(line)
		}
	}
	t.Logf("provider calls: ses %d, sendgrid %d", f.ses.Calls(), f.sg.Calls())
}

// With scheduling.fair, one tenant's backlog does not delay another's: a
// bulk tenant's 300 deliveries are queued, then acme's 5, and acme's are
// among the first delivered — where first come, first served would
// deliver them last. Ahead of acme's go the sends already in flight when
// they come — as many as the limit on sends in flight allows (36 on two
// cores, more while sends wait on the provider): bulk's pulls take what
// is stored, so its sends fill them — and the turns they take with
// bulk's after. Seen: 7 – 68.
func TestATenantsBacklogDoesNotDelayAnothers(t *testing.T) {
	t.Parallel()
	for _, fair := range []bool{true, false} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) {
			t.Parallel()
			p := startPipeline(t, func(c *app.Config) {
				c.Scheduling.Fair = &fair
				c.Services = []string{"delivery"}
			})
			job := func(tenant string, i int) { publishJob(t, p, tenant, i) }
			for i := range 300 {
				job("bulk", i)
			}
			p.waitPublished(t)
			for i := range 5 {
				job("acme", i)
			}
			p.waitPublished(t)
			p.settle(t)

			var order []string // tenants, in the order their deliveries were told
			for _, d := range delivered(t, p) {
				order = append(order, d.tenant)
			}
			require.Len(t, order, 305)
			lastAcme := 0
			for i, tenant := range order {
				if tenant == "acme" {
					lastAcme = i
				}
			}
			if fair {
				require.Less(t, lastAcme, 150, "acme's five were served in turn with bulk's backlog")
			} else {
				require.Greater(t, lastAcme, 250, "first come, first served: acme's five wait for bulk's backlog")
			}
		})
	}
}

// publishJob puts an email job of tenant's on NOTIFY, as the API would.
func publishJob(t *testing.T, p *pipeline, tenant string, i int) {
	t.Helper()
	key := fmt.Sprintf("%s:job:%04d", tenant, i)
	d := notification.Delivery{ID: notification.ID(key), DedupeKey: key, Tenant: tenant, Channel: event.ChannelEmail,
		Priority: notification.PriorityNormal, Recipient: notification.Recipient{Address: fmt.Sprintf("r%d@%s.example", i, tenant)},
		Locale: "en", Message: &notification.Message{Subject: "Hello", Text: "Hello.\n"},
		Event: notification.EventRef{ID: key, Type: "job"}, CreatedAt: time.Now()}
	b, err := json.Marshal(d)
	require.NoError(t, err)
	p.publishAsync(t, notification.Subject(d.Channel, d.Priority, tenant), key, b)
}

type told struct {
	tenant string
	at     time.Time
}

// delivered are the deliveries the ledger's writes told, in order.
func delivered(t *testing.T, p *pipeline) []told {
	t.Helper()
	var out []told
	for _, st := range heraldtest.Outcomes(t, p.js) {
		if st.State == "delivered" {
			out = append(out, told{st.Tenant, st.Time})
		}
	}
	return out
}

// A tenant's sends keep to its plan's rate (fair scheduling, the default) — its
// burst at once, then one a second at 60 a minute, the rest waiting
// unpulled, none lost — while another tenant's go at once.
func TestATenantsSendsKeepToItsPlansRate(t *testing.T) {
	t.Parallel()
	sixty, two := 60, 2
	plans := tenant.Plans{"metered": {RatePerMinute: &sixty, Burst: &two}}
	p := startPipeline(t, func(c *app.Config) {
		c.Services = []string{"delivery"}
		c.Plans = plans
	})
	reg, err := tenant.Open(heraldtest.Context(t), p.js, plans.WithDefaults())
	require.NoError(t, err)
	_, err = reg.Create(heraldtest.Context(t), tenant.Tenant{ID: "metered", Plan: "metered"})
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond) // the workers' registry watch sees it
	start := time.Now()
	for i := range 4 {
		publishJob(t, p, "metered", i)
	}
	for i := range 10 {
		publishJob(t, p, "acme", i)
	}
	p.waitPublished(t)
	p.settle(t)

	var metered []time.Time
	for _, d := range delivered(t, p) {
		if d.tenant == "metered" {
			metered = append(metered, d.at)
		}
	}
	require.Len(t, metered, 4, "every one delivered, none lost")
	require.Len(t, delivered(t, p), 14)
	// Two at once, then one a second: the fourth no sooner than 2 s after
	// the first could go.
	require.GreaterOrEqual(t, metered[3].Sub(start), 1900*time.Millisecond, "%v", metered)
	_, metrics := p.get(t, "/metrics")
	require.Regexp(t, `herald_delivery_rate_held_total\{channel="email",reason="over_rate",tenant="metered"\} [1-9]`, metrics)
}
