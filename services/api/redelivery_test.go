package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/webhooks"
)

// sentWebhooks registers an endpoint for tenant and records n webhooks
// delivered to it in the ledger, as the webhook workers would; it returns
// the endpoint and the webhooks' notification ids.
func sentWebhooks(t *testing.T, b *bundle, tenant string, n int) (string, []string) {
	t.Helper()
	ctx := heraldtest.Context(t)
	store, err := webhooks.Open(ctx, b.nats.JS, keyring(t))
	require.NoError(t, err)
	e, _, err := store.Create(ctx, tenant, webhooks.New{URL: "https://erp." + tenant + ".example/hook"})
	require.NoError(t, err)
	l, err := ledger.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	ids := make([]string, n)
	for i := range ids {
		key := fmt.Sprintf("%s:hook-%d", tenant, i)
		d := notification.Delivery{ID: notification.ID(key), DedupeKey: key, Tenant: tenant, Channel: event.ChannelWebhook,
			Priority: notification.PriorityNormal, Recipient: notification.Recipient{Address: e.ID}, Template: notification.FeedTemplate,
			Locale: "en", Payload: json.RawMessage(`{"type":"notification.delivered","timestamp":"2026-12-01T08:00:00Z","data":{}}`),
			Event: notification.EventRef{ID: "evt-1", Type: "notification.delivered"}, CreatedAt: time.Now()}
		raw, err := json.Marshal(d)
		require.NoError(t, err)
		require.NoError(t, l.Put(ctx, &ledger.Entry{DedupeKey: key, NotificationID: d.ID, Tenant: tenant, Channel: "webhook",
			State: ledger.Delivered, Delivery: raw}))
		ids[i] = d.ID
	}
	return e.ID, ids
}

// redeliver asks for the endpoint's webhooks of the last hour again, or
// only message when given.
func (b *bundle) redeliver(t *testing.T, key, endpoint, message string) answer {
	t.Helper()
	body := fmt.Sprintf(`{"since":%q}`, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	if message != "" {
		body = fmt.Sprintf(`{"message":%q}`, message)
	}
	return b.sendJSON(t, http.MethodPost, "/v1/webhooks/endpoints/"+endpoint+"/redeliver?tenant=acme", key, body)
}

// A redelivery costs its tenant's key one request of its plan's rate per
// webhook it sends: of a free plan's five a minute, a redelivery of three
// leaves two requests, not four. One of more webhooks than the burst can
// never pass, and is refused as such.
func TestARedeliveryCostsOneRequestPerWebhook(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{Registry: plans{"acme": "free", "globex": "free"}, Limiter: redisLimiter(t, heraldtest.RedisURL(t))})
	endpoint, _ := sentWebhooks(t, b, "acme", 3)

	got := b.redeliver(t, acmeSend, endpoint, "")
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	require.Regexp(t, `^"free";r=2;t=\d+$`, got.header.Get("RateLimit"), "three of five taken")
	msgs, _ := published(t, b)
	require.Len(t, msgs, 3)
	for i := range 2 {
		got = b.do(t, http.MethodPost, "/v1/events", acmeSend, sampleOrder(t))
		require.Equal(t, http.StatusAccepted, got.status, "request %d: %s", i+1, got.body)
	}
	got = b.do(t, http.MethodPost, "/v1/events", acmeSend, sampleOrder(t))
	require.Equal(t, http.StatusTooManyRequests, got.status, "the redelivery took three: %s", got.body)

	globexEndpoint, _ := sentWebhooks(t, b, "globex", 6)
	got = b.sendJSON(t, http.MethodPost, "/v1/webhooks/endpoints/"+globexEndpoint+"/redeliver", globexSend,
		fmt.Sprintf(`{"since":%q}`, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)))
	require.Equal(t, http.StatusUnprocessableEntity, got.status, got.body)
	require.Contains(t, got.body, "6 webhooks to redeliver, more than plan free's burst of 5 requests (a redelivery costs one request per webhook); narrow the range")
	msgs, _ = published(t, b)
	require.Len(t, msgs, 3, "nothing more was sent")
}

// A redelivery that needs more of the rate than is left is refused whole:
// nothing is sent, nothing counted in the hour, and the answer says when
// to ask again — for the webhooks and the request itself.
func TestARedeliveryBeyondTheRateIsRefusedWhole(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{Registry: plans{"acme": "free"}, Limiter: redisLimiter(t, heraldtest.RedisURL(t))})
	endpoint, _ := sentWebhooks(t, b, "acme", 3)
	for range 3 {
		got := b.do(t, http.MethodPost, "/v1/events", acmeSend, sampleOrder(t))
		require.Equal(t, http.StatusAccepted, got.status, got.body)
	}

	got := b.redeliver(t, acmeSend, endpoint, "")
	require.Equal(t, http.StatusTooManyRequests, got.status, got.body)
	require.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
	require.Contains(t, got.body, "rate limit exceeded: plan free allows 5 requests a minute (burst 5), "+
		"and a redelivery costs one request per webhook: this one's 3 are more than remain; retry after")
	wait, err := strconv.Atoi(got.header.Get("Retry-After"))
	require.NoError(t, err)
	require.Greater(t, wait, 12, "two more for the webhooks, and one for the request asked again")
	msgs, _ := published(t, b)
	require.Empty(t, msgs)
	counted, err := quota.New(b.nats.JS).Get(heraldtest.Context(t), "quota.acme.redelivered."+quota.Hour(time.Now()))
	require.NoError(t, err)
	require.Zero(t, counted, "the hour's count was given back")
}

// awayFromTheHour waits out the last seconds of a clock hour, whose end
// resets the hourly cap under a test's feet.
func awayFromTheHour(t *testing.T) {
	t.Helper()
	if left := time.Until(time.Now().Truncate(time.Hour).Add(time.Hour)); left < 30*time.Second {
		time.Sleep(left + time.Second)
	}
}

// A tenant's redeliveries are capped an hour across replicas: of four,
// three through one replica leave one for the other, which refuses three
// more whole with 429, saying how many remain and when the hour ends, and
// then takes one. Admin keys are operators: not held. Neither is a range
// of more than a day read.
func TestRedeliveriesAreCappedPerTenantAnHourAcrossReplicas(t *testing.T) {
	t.Parallel()
	awayFromTheHour(t)
	n := heraldtest.StartNATSWithStreams(t)
	cfg := api.Config{RedeliveriesPerHour: 4, Registry: plans{"acme": "enterprise"}, Limiter: redisLimiter(t, heraldtest.RedisURL(t))}
	one, other := serve(t, n, cfg), serve(t, n, cfg)
	endpoint, ids := sentWebhooks(t, one, "acme", 3)

	got := one.redeliver(t, acmeSend, endpoint, "")
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	got = other.redeliver(t, acmeSend, endpoint, "")
	require.Equal(t, http.StatusTooManyRequests, got.status, got.body)
	require.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
	reset := time.Now().UTC().Truncate(time.Hour).Add(time.Hour).Format(time.RFC3339)
	var problem struct{ Type, Detail string }
	require.NoError(t, json.Unmarshal([]byte(got.body), &problem))
	require.Equal(t, api.RedeliveryCapType, problem.Type)
	require.Equal(t, "redelivery cap reached: tenant acme may redeliver 4 webhooks an hour; 1 remain until "+reset+
		", and this redelivery has 3. Narrow the range (since, until), or retry after "+reset, problem.Detail)
	require.Equal(t, `"redeliveries";q=4;w=3600`, got.header.Get("RateLimit-Policy"))
	wait, err := strconv.Atoi(got.header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, wait)
	require.LessOrEqual(t, wait, 3600)
	require.Equal(t, fmt.Sprintf(`"redeliveries";r=1;t=%d`, wait), got.header.Get("RateLimit"))
	msgs, _ := published(t, one)
	require.Len(t, msgs, 3, "the refused redelivery sent nothing")

	got = other.redeliver(t, acmeSend, endpoint, ids[0])
	require.Equal(t, http.StatusAccepted, got.status, "the one left: %s", got.body)
	got = one.redeliver(t, acmeSend, endpoint, ids[1])
	require.Equal(t, http.StatusTooManyRequests, got.status, got.body)
	require.Contains(t, got.body, "0 remain until "+reset)
	got = one.redeliver(t, adminKey, endpoint, "")
	require.Equal(t, http.StatusAccepted, got.status, "an operator is not held: %s", got.body)
	msgs, _ = published(t, one)
	require.Len(t, msgs, 7)

	got = one.sendJSON(t, http.MethodPost, "/v1/webhooks/endpoints/"+endpoint+"/redeliver", acmeSend,
		fmt.Sprintf(`{"since":%q}`, time.Now().Add(-25*time.Hour).UTC().Format(time.RFC3339)))
	require.Equal(t, http.StatusUnprocessableEntity, got.status, got.body)
	require.Contains(t, got.body, "more than the 24h0m0s one redelivery may read; narrow it (since, until)")
}
