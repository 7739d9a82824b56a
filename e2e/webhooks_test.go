package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
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
			Type string              `json:"type"`
			Data notification.Status `json:"data"`
		}
		if err == nil {
			err = json.Unmarshal(body, &b)
		}
		if err != nil {
			r.bad = append(r.bad, err.Error())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.got = append(r.got, b.Data)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) received() ([]notification.Status, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got), slices.Clone(r.bad)
}

// register creates the endpoint through the API, as a tenant would, and
// keeps the secret it is shown once.
func (r *receiver) register(t *testing.T, p *pipeline) string {
	t.Helper()
	key, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send, apikey.Read}})
	body, err := json.Marshal(map[string]any{"url": r.srv.URL + "/hooks/herald?token=t0ps3cret", "events": []string{"notification.*"}})
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
		c.Services = slices.DeleteFunc(slices.Clone(app.Targets), func(s string) bool { return s == "history" || s == "webhook" })
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
