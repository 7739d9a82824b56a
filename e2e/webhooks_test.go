package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
)

// receiver is a tenant's webhook endpoint that verifies every request as
// the Standard Webhooks library does, and keeps what verified.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	got    []notification.Status
	bad    []string
	// hooks is every webhook that verified, of any type.
	hooks []hook
	// answer, when set, is the status to answer with instead of 204.
	answer int
}

// hook is one webhook as received.
type hook struct {
	ID   string // webhook-id
	Type string
	Data json.RawMessage
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(r.secret)
		if err == nil {
			err = wh.Verify(body, req.Header)
		}
		var b struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err == nil {
			err = json.Unmarshal(body, &b)
		}
		if err != nil {
			r.bad = append(r.bad, err.Error())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.hooks = append(r.hooks, hook{ID: req.Header.Get("webhook-id"), Type: b.Type, Data: b.Data})
		if strings.HasPrefix(b.Type, "notification.") {
			var st notification.Status
			if err := json.Unmarshal(b.Data, &st); err != nil {
				r.bad = append(r.bad, err.Error())
			}
			r.got = append(r.got, st)
		}
		w.WriteHeader(cmp.Or(r.answer, http.StatusNoContent))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) received() ([]notification.Status, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got), slices.Clone(r.bad)
}

// of is the webhooks received of one type.
func (r *receiver) of(typ string) []hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(r.hooks), func(h hook) bool { return h.Type != typ })
}

// register creates the endpoint through the API, as a tenant would, and
// keeps the secret it is shown once.
func (r *receiver) register(t *testing.T, p *pipeline) string {
	t.Helper()
	return r.registerFor(t, p, "notification.*")
}

// registerFor registers the endpoint for these events; none means the
// default.
func (r *receiver) registerFor(t *testing.T, p *pipeline, events ...string) string {
	t.Helper()
	key, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send, apikey.Read}})
	endpoint := map[string]any{"url": r.srv.URL + "/hooks/herald?token=t0ps3cret"}
	if len(events) > 0 {
		endpoint["events"] = events
	}
	body, err := json.Marshal(endpoint)
	require.NoError(t, err)
	a := p.call(t, http.MethodPost, "/v1/webhooks/endpoints", key, body, http.Header{"Content-Type": {"application/json"}})
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	var created struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	require.NoError(t, json.Unmarshal(a.body, &created))
	require.Regexp(t, `^whsec_[A-Za-z0-9+/]{40,}={0,2}$`, created.Secret)
	r.mu.Lock()
	r.secret = created.Secret
	r.mu.Unlock()

	list := p.call(t, http.MethodGet, "/v1/webhooks/endpoints", key, nil, nil)
	require.Equal(t, http.StatusOK, list.status)
	require.NotContains(t, string(list.body), created.Secret, "a secret is shown once")
	return created.ID
}

// The sample order's two emails are delivered; the tenant's endpoint gets
// each one's delivered event once, signed, verified by the spec's library.
func TestAWebhookEndpointReceivesEveryStatusEventOnceSigned(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	p := startPipeline(t)
	r.register(t, p)
	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
	p.settle(t)

	require.Eventually(t, func() bool { got, _ := r.received(); return len(got) >= 2 }, 30*time.Second, 20*time.Millisecond)
	p.settle(t)
	got, bad := r.received()
	require.Empty(t, bad, "every request verifies")
	byNotification := map[string]int{}
	for _, st := range got {
		require.Equal(t, "delivered", st.State)
		require.Equal(t, "acme", st.Tenant)
		// Told from the ledger's write, with what a status event said.
		require.Equal(t, "notification.delivered", st.Type)
		require.Equal(t, "purchase_order", st.Template)
		require.Equal(t, "evt-2026-11-30-0001", st.EventID)
		require.NotEmpty(t, st.Provider)
		require.NotEmpty(t, st.ProviderMessageID)
		require.Equal(t, 1, st.Tries)
		byNotification[st.NotificationID]++
	}
	require.Equal(t, map[string]int{notification.ID(olgaKey): 1, notification.ID(comprasKey): 1}, byNotification)
	// The webhooks themselves are notifications, in the ledger, whose own
	// outcomes feed nothing.
	e := p.ledgerEntry(t, "acme:"+notification.ID(olgaKey)+":0:status_delivered:webhook:"+mustEndpointID(t, got, p))
	require.Equal(t, ledger.Delivered, e.State)
}

func mustEndpointID(t *testing.T, _ []notification.Status, p *pipeline) string {
	t.Helper()
	key, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Read}})
	var list struct {
		Endpoints []struct {
			ID string `json:"id"`
		} `json:"endpoints"`
	}
	require.NoError(t, json.Unmarshal(p.call(t, http.MethodGet, "/v1/webhooks/endpoints", key, nil, nil).body, &list))
	require.Len(t, list.Endpoints, 1)
	return list.Endpoints[0].ID
}

// Outside dev mode, an endpoint on 127.0.0.1 is refused when dialled: its
// webhooks fail permanently, saying why, and nothing reaches it.
func TestAWebhookEndpointOnLoopbackIsRefusedOutsideDevMode(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	p := startPipeline(t, func(c *app.Config) {
		c.Services = slices.DeleteFunc(slices.Clone(app.Targets), func(s string) bool { return s == "history" || s == "outbox-relay" || s == "webhook" })
	})
	p.cfg.Vault.MasterKeyFile = p.dev.MasterKey // dev's, to open the secrets dev sealed
	p.startApp(t, "webhook")                    // as in production: allow_private_networks off
	r.register(t, p)
	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))

	require.Eventually(t, func() bool { return len(p.streamMessages(t, "DLQ")) == 2 }, 30*time.Second, 20*time.Millisecond)
	for _, m := range p.streamMessages(t, "DLQ") {
		require.Equal(t, "dlq.NOTIFY.webhook-normal", m.Subject)
		reason := m.Header.Get("Herald-Reason")
		require.Contains(t, reason, "private network")
		require.NotContains(t, reason, "t0ps3cret", "the URL's token is never quoted")
	}
	got, bad := r.received()
	require.Empty(t, got)
	require.Empty(t, bad)
}

// An endpoint that answers 410 Gone is disabled, and the tenant is told:
// a webhook.endpoint_disabled event on its status stream, sent once to its
// other endpoint (registered with the default events), naming the
// endpoint, its host and why — never its token; the endpoint lists as
// disabled, since when and why; and the webhook that disabled it is
// dead-lettered, which is what alerts the operators.
func TestADisabledEndpointIsToldToTheTenant(t *testing.T) {
	t.Parallel()
	gone, other := newReceiver(t), newReceiver(t)
	gone.answer = http.StatusGone
	p := startPipeline(t)
	goneID := gone.register(t, p)
	otherID := other.registerFor(t, p)
	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))

	require.Eventually(t, func() bool { return len(other.of(notification.EndpointDisabledType)) > 0 }, 30*time.Second, 20*time.Millisecond)
	p.settle(t)
	told := other.of(notification.EndpointDisabledType)
	require.Len(t, told, 1, "told once, however many webhooks were on their way to it")
	var ev notification.EndpointDisabled
	require.NoError(t, json.Unmarshal(told[0].Data, &ev))
	require.Equal(t, notification.EndpointDisabledType, ev.Type)
	require.Equal(t, "acme", ev.Tenant)
	require.Equal(t, goneID, ev.EndpointID)
	require.Equal(t, gone.srv.URL+"/…", ev.URL, "scheme and host only")
	require.Contains(t, ev.Reason, "410 Gone")
	require.NotContains(t, string(told[0].Data), "t0ps3cret")
	_, bad := other.received()
	require.Empty(t, bad)
	require.Len(t, other.of("notification.delivered"), 2, "the other endpoint still gets its outcomes")

	// On the tenant's status stream, beside its outcomes.
	var onStream int
	for _, m := range p.streamMessages(t, "STATUS") {
		if m.Subject == "notify.status.acme" && strings.Contains(string(m.Data), notification.EndpointDisabledType) {
			onStream++
		}
	}
	require.Equal(t, 1, onStream)

	// The API lists the endpoint as disabled, and the webhook that told the
	// other endpoint as a notification, delivered.
	key, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Read}})
	var list struct {
		Endpoints []struct {
			ID             string    `json:"id"`
			Status         string    `json:"status"`
			DisabledReason string    `json:"disabled_reason"`
			DisabledAt     time.Time `json:"disabled_at"`
		} `json:"endpoints"`
	}
	require.NoError(t, json.Unmarshal(p.call(t, http.MethodGet, "/v1/webhooks/endpoints", key, nil, nil).body, &list))
	for _, e := range list.Endpoints {
		switch e.ID {
		case goneID:
			require.Equal(t, "disabled", e.Status)
			require.Equal(t, "the endpoint answered 410 Gone", e.DisabledReason)
			require.True(t, e.DisabledAt.Equal(ev.Time))
		case otherID:
			require.Equal(t, "active", e.Status)
		}
	}
	a := p.call(t, http.MethodGet, "/v1/notifications/"+told[0].ID, key, nil, nil)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Contains(t, string(a.body), `"state":"delivered"`)

	// The webhook that disabled it is a dead letter — with any other that
	// met a 410 at the same time — which is the operators' alert.
	var disabling int
	for _, m := range p.streamMessages(t, "DLQ") {
		reason := m.Header.Get("Herald-Reason")
		require.NotContains(t, reason, "t0ps3cret")
		if m.Subject == "dlq.NOTIFY.webhook-normal" && strings.Contains(reason, "endpoint "+goneID+" disabled: the endpoint answered 410 Gone") {
			disabling++
		}
	}
	require.NotZero(t, disabling)
}

// A webhook is sent again on demand — one by its id, or every one in a
// time range — as it was: the same webhook-id and body, verified again.
// Asking again under the same redelivery id sends nothing twice.
func TestWebhooksAreRedeliveredOnDemandAsTheyWere(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	p := startPipeline(t)
	since := time.Now().Add(-time.Minute)
	endpoint := r.register(t, p)
	key, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send}})
	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
	require.Eventually(t, func() bool { return len(r.of("notification.delivered")) == 2 }, 30*time.Second, 20*time.Millisecond)
	p.settle(t)
	first := r.of("notification.delivered")

	redeliver := func(body string) notificationRedelivered {
		t.Helper()
		a := p.call(t, http.MethodPost, "/v1/webhooks/endpoints/"+endpoint+"/redeliver", key, []byte(body),
			http.Header{"Content-Type": {"application/json"}})
		require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
		var out notificationRedelivered
		require.NoError(t, json.Unmarshal(a.body, &out))
		return out
	}
	webhookID := notification.ID("acme:" + notification.ID(olgaKey) + ":0:status_delivered:webhook:" + endpoint)
	one := fmt.Sprintf(`{"id":"rd_one","message":%q}`, webhookID)
	out := redeliver(one)
	require.Len(t, out.Sent, 1)
	require.Equal(t, webhookID, out.Sent[0].Of)
	require.Eventually(t, func() bool { return len(r.of("notification.delivered")) == 3 }, 30*time.Second, 20*time.Millisecond)
	again := r.of("notification.delivered")[2]
	i := slices.IndexFunc(first, func(h hook) bool { return h.ID == webhookID })
	require.GreaterOrEqual(t, i, 0, "the first webhook's webhook-id is its notification id")
	require.Equal(t, first[i], again, "the same webhook-id and body")
	e := p.ledgerEntry(t, "acme:redelivery:rd_one:"+webhookID)
	require.Equal(t, ledger.Delivered, e.State)
	require.Equal(t, webhookID, e.RedeliveryOf)

	redeliver(one) // the same redelivery: nothing more
	// A range holds both webhooks (and the redelivery, which is one of them).
	out = redeliver(fmt.Sprintf(`{"id":"rd_range","since":%q}`, since.Format(time.RFC3339)))
	require.Len(t, out.Sent, 2, "%+v", out)
	require.Eventually(t, func() bool { return len(r.of("notification.delivered")) == 5 }, 30*time.Second, 20*time.Millisecond)
	p.settle(t)
	hooks := r.of("notification.delivered")
	require.Len(t, hooks, 5, "the first two, one redelivered, then both")
	require.ElementsMatch(t, first, hooks[3:])
	_, bad := r.received()
	require.Empty(t, bad, "every request verifies")

	// Only failed ones: none failed.
	out = redeliver(fmt.Sprintf(`{"since":%q,"failed_only":true,"dry_run":true}`, since.Format(time.RFC3339)))
	require.Empty(t, out.Sent)
	// A message that is not a webhook is refused, saying why.
	a := p.call(t, http.MethodPost, "/v1/webhooks/endpoints/"+endpoint+"/redeliver", key,
		[]byte(fmt.Sprintf(`{"message":%q}`, notification.ID(olgaKey))), http.Header{"Content-Type": {"application/json"}})
	require.Equal(t, http.StatusUnprocessableEntity, a.status)
	require.Contains(t, string(a.body), "email channel, not a webhook")
}

type notificationRedelivered struct {
	ID   string `json:"id"`
	Sent []struct {
		Of             string `json:"of"`
		NotificationID string `json:"notification_id"`
	} `json:"sent"`
}
