package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/tenant"
)

// The sample tenant's plan allows 10 emails a month, and 15 orders come,
// each with one email: 10 are sent, 5 are dead-lettered unsent with the
// quota as their reason; the tenant's endpoint is told once at 8 (80 %) and
// once at 10; GET /v1/usage says so, and POST /v1/notifications is then
// answered 429. The month's counts are in NATS: wiping this deployment's
// Redis keys changes none of it.
func TestAMonthlyQuotaSendsUpToItAndDeadLettersTheRest(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	p := startPipeline(t, func(c *app.Config) {
		c.Plans = tenant.Plans{"enterprise": {MonthlyQuota: map[event.Channel]int64{event.ChannelEmail: 10}}}
	})
	r.registerFor(t, p) // the default events: tenant.* among them
	for i := range 15 {
		p.publish(t, "orders.created", fmt.Sprintf("evt-quota-%02d", i), sample(t, "order.created.json", func(m map[string]any) {
			m["id"] = fmt.Sprintf("evt-quota-%02d", i)
			data := m["data"].(map[string]any)
			data["order"].(map[string]any)["id"] = fmt.Sprintf("PO-Q-%02d", i)
			data["recipients"] = data["recipients"].([]any)[1:] // the buyer's copy only
		}))
	}
	require.Eventually(t, func() bool { return len(p.mail(t)) == 10 && len(p.streamMessages(t, "DLQ")) == 5 },
		60*time.Second, 50*time.Millisecond)
	p.settle(t)
	require.Eventually(t, func() bool { return len(r.of(quota.ExceededType)) > 0 }, 30*time.Second, 20*time.Millisecond)
	p.settle(t)

	require.Len(t, p.mail(t), 10)
	month := quota.Month(time.Now())
	reason := fmt.Sprintf("quota exceeded: email 10/10 (%s)", month)
	for _, e := range p.streamMessages(t, "DLQ") {
		require.Equal(t, reason, e.Header.Get(deadletter.HeaderReason))
		require.Equal(t, "notify.email.normal.acme", e.Header.Get(deadletter.HeaderSubject))
	}

	told := func(typ string) []quota.Event {
		var out []quota.Event
		for _, h := range r.of(typ) {
			var ev quota.Event
			require.NoError(t, json.Unmarshal(h.Data, &ev))
			out = append(out, ev)
		}
		return out
	}
	warnings, exceeded := told(quota.WarningType), told(quota.ExceededType)
	require.Len(t, warnings, 1, "one warning, at 80 %%")
	require.EqualValues(t, 8, warnings[0].Used)
	require.Equal(t, 80, warnings[0].Threshold)
	require.Len(t, exceeded, 1, "one exceeded, at 100 %%")
	require.EqualValues(t, 10, exceeded[0].Used)
	require.Equal(t, "acme", exceeded[0].Tenant)
	require.Equal(t, month, exceeded[0].Month)
	_, bad := r.received()
	require.Empty(t, bad)

	key, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send, apikey.Read}})
	usage := func() string {
		a := p.call(t, http.MethodGet, "/v1/usage", key, nil, nil)
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		return string(a.body)
	}
	want := fmt.Sprintf(`{"tenant":"acme","plan":"enterprise","month":%q,"channels":[
		{"channel":"email","used":10,"quota":10,"refused":5},
		{"channel":"sms","used":0,"quota":null,"refused":0},
		{"channel":"whatsapp","used":0,"quota":null,"refused":0},
		{"channel":"webhook","used":0,"quota":null,"refused":0},
		{"channel":"inbox","used":0,"quota":null,"refused":0},
		{"channel":"push","used":0,"quota":null,"refused":0}]}`, month)
	require.JSONEq(t, want, usage(), "the status webhooks are Herald's own: not counted")

	send := func() answer {
		job := []byte(`{"channel":"email","recipient":{"address":"olga@zarya.example"},"subject":"One more","text":"Over quota"}`)
		return p.call(t, http.MethodPost, "/v1/notifications", key, job, http.Header{"Content-Type": {"application/json"}})
	}
	refused := func() {
		a := send()
		pr := requireProblem(t, a, http.StatusTooManyRequests, key)
		require.Equal(t, reason, pr.Detail)
		var typed struct {
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal(a.body, &typed))
		require.Equal(t, "https://herald.dev/problems/quota-exceeded", typed.Type)
	}
	refused()

	// Redis forgets everything of this deployment: the month stays.
	opts, err := redis.ParseURL(p.redis)
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := heraldtest.Context(t)
	keys, err := rdb.Keys(ctx, p.cfg.Redis.Prefix+"*").Result()
	require.NoError(t, err)
	if len(keys) > 0 {
		require.NoError(t, rdb.Del(ctx, keys...).Err())
	}
	require.JSONEq(t, want, usage())
	refused()
}

// A free tenant's sixth event in a minute over HTTP is refused with 429,
// Retry-After and the IETF RateLimit fields; the five accepted are planned
// at low priority (the free plan's cap) and delivered. Upgraded, the
// tenant's next request is taken within seconds: every API process follows
// the registry.
func TestAFreeTenantIsHeldToItsPlanOverHTTP(t *testing.T) {
	t.Parallel()
	p := startPipeline(t)
	ctx := heraldtest.Context(t)
	reg, err := tenant.Open(ctx, p.js, tenant.BuiltinPlans())
	require.NoError(t, err)
	_, err = reg.Create(ctx, tenant.Tenant{ID: "indigo", Plan: "free"})
	require.NoError(t, err)
	key, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "indigo", Scopes: []apikey.Scope{apikey.Send, apikey.Read}})
	deliveries, err := p.nc.SubscribeSync("notify.email.*.indigo")
	require.NoError(t, err)

	order := func(i int) []byte {
		return sample(t, "order.created.json", func(m map[string]any) {
			m["id"], m["tenant"] = fmt.Sprintf("evt-indigo-%d", i), "indigo"
			data := m["data"].(map[string]any)
			data["order"].(map[string]any)["id"] = fmt.Sprintf("PO-INDIGO-%d", i)
			data["recipients"] = data["recipients"].([]any)[1:] // the buyer's copy only
		})
	}
	for i := range 5 {
		a := p.postEvent(t, key, fmt.Sprintf("indigo-%d", i), order(i))
		require.Equal(t, http.StatusAccepted, a.status, "request %d: %s", i+1, a.body)
		require.Equal(t, `"free";q=5;w=60`, a.header.Get("RateLimit-Policy"))
	}
	refused := p.postEvent(t, key, "indigo-5", order(5))
	pr := requireProblem(t, refused, http.StatusTooManyRequests, key)
	require.Contains(t, pr.Detail, "plan free allows 5 requests a minute")
	require.NotEmpty(t, refused.header.Get("Retry-After"))
	require.Regexp(t, `^"free";r=0;t=\d+$`, refused.header.Get("RateLimit"))

	// Planned at low priority, the free plan's cap: the refused request
	// planned nothing.
	for range 5 {
		m, err := deliveries.NextMsg(30 * time.Second)
		require.NoError(t, err)
		require.Equal(t, "notify.email.low.indigo", m.Subject, "a free tenant's traffic is low")
	}

	// Upgraded before its five are delivered: at the free plan's rate they
	// could take a minute and more (an allowance the fair loop is granted
	// and then finds nothing to pull for is not given back), and what is
	// tested here is that they are delivered, not how slowly.
	_, err = reg.Update(ctx, "indigo", func(x *tenant.Tenant) error { x.Plan = "startup"; return nil })
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return p.postEvent(t, key, "indigo-6", order(6)).status == http.StatusAccepted
	}, 10*time.Second, 100*time.Millisecond, "the upgrade is not seen")
	m, err := deliveries.NextMsg(30 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "notify.email.normal.indigo", m.Subject, "a startup tenant's traffic is not capped")
	require.Eventually(t, func() bool { return len(p.mail(t)) == 6 }, 90*time.Second, 50*time.Millisecond)
	p.settle(t)
	require.Len(t, p.mail(t), 6, "the five, the one after the upgrade, and nothing of the refused request")
}
