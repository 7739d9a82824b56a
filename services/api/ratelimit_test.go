package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ratelimit"
	"github.com/heraldhq/herald/shared/tenant"
)

// plans is a registry where every tenant is on the built-in plan named.
type plans map[string]string

func (p plans) Plan(id string, all tenant.Plans) (string, tenant.Plan) { return p[id], all[p[id]] }

func redisLimiter(t *testing.T, url string) *ratelimit.Limiter {
	t.Helper()
	return ratelimit.New(heraldtest.RedisClient(t, url), heraldtest.Prefix())
}

// A free tenant's sixth request in a minute is refused with 429, saying
// when to come back, in the IETF RateLimit fields too; other tenants, and
// operators' admin keys, are not held by its limit.
func TestAFreeTenantsSixthRequestInAMinuteIs429(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{Registry: plans{"acme": "free", "globex": "startup"}, Limiter: redisLimiter(t, heraldtest.RedisURL(t))})
	body := sampleOrder(t)
	for i := range 5 {
		got := b.do(t, http.MethodPost, "/v1/events", acmeSend, body)
		require.Equal(t, http.StatusAccepted, got.status, "request %d: %s", i+1, got.body)
		require.Equal(t, `"free";q=5;w=60`, got.header.Get("RateLimit-Policy"))
	}
	got := b.do(t, http.MethodPost, "/v1/events", acmeSend, body)
	require.Equal(t, http.StatusTooManyRequests, got.status, got.body)
	require.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
	require.Contains(t, []string{"11", "12"}, got.header.Get("Retry-After"))
	require.Regexp(t, `^"free";r=0;t=\d+$`, got.header.Get("RateLimit"))
	require.Contains(t, got.body, "rate limit exceeded: plan free allows 5 requests a minute (burst 5)")
	require.Len(t, heraldtest.StreamMessages(t, b.nats.JS, "ORDERS"), 1, "the refused request published nothing")

	got = b.do(t, http.MethodPost, "/v1/events", globexSend, []byte(`{}`))
	require.NotEqual(t, http.StatusTooManyRequests, got.status, "another tenant has its own allowance")
	require.Equal(t, `"startup";q=200;w=60`, got.header.Get("RateLimit-Policy"))
	got = b.do(t, http.MethodGet, "/v1/notifications/ntf_0", acmeRead, nil)
	require.NotEqual(t, http.StatusTooManyRequests, got.status, "reads are not intake")
	require.Empty(t, got.header.Get("RateLimit-Policy"))
}

// Redis down: intake goes on unchecked (the delivery workers still hold
// the rate on what providers see), and says nothing of a limit.
func TestRedisDownLetsIntakeThrough(t *testing.T) {
	t.Parallel()
	srv := heraldtest.StartRedisServer(t)
	b := setup(t, api.Config{Registry: plans{"acme": "free"}, Limiter: redisLimiter(t, srv.URL())})
	srv.Stop()
	for range 7 {
		got := b.do(t, http.MethodPost, "/v1/events", acmeSend, sampleOrder(t))
		require.Equal(t, http.StatusAccepted, got.status, got.body)
		require.Empty(t, got.header.Get("RateLimit"))
	}
}

// A free tenant's critical job is sent as low: its plan's max_priority.
func TestAJobsPriorityIsCappedByThePlan(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{Registry: plans{"acme": "free"}})
	storeDocument(t, b, "acme/terms/2026.pdf")
	got := b.post(t, acmeSend, job, "Idempotency-Key", "terms-olga")
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	_, msgs := published(t, b)
	require.Len(t, msgs, 1)
	require.Equal(t, "notify.email.low.acme", msgs[0].Subject)
}
