package bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldhq/herald/services/delivery/webhook"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
)

// startWebhooks is the webhook channel's far side: a loopback HTTP server
// (httptest) with one endpoint per recipient, each registered for the
// bench tenant in the real endpoint registry with a signing secret of its
// own. The server verifies every request as the Standard Webhooks library
// does, and counts what verified by webhook-id; the latency and fault rate
// apply to it (a fault is a 503). The channel posts through Herald's
// guarded client, allowed onto private networks for this run only: its
// endpoints are on 127.0.0.1.
func (e *env) startWebhooks(ctx context.Context, cfg Config, f *faults, r *receipts) (*farSide, error) {
	if cfg.Recipients > webhooks.MaxEndpoints {
		return nil, fmt.Errorf("bench: webhook: at most %d recipients, one endpoint each (a tenant's most)", webhooks.MaxEndpoints)
	}
	raw := make([]byte, vault.KeySize)
	_, _ = rand.Read(raw)
	key, err := vault.ParseKey(raw)
	if err != nil {
		return nil, err
	}
	keys, err := vault.NewKeyring(key)
	if err != nil {
		return nil, err
	}
	store, err := webhooks.Open(ctx, e.js, keys)
	if err != nil {
		return nil, err
	}
	var bad atomic.Int64
	verifiers := map[string]*standardwebhooks.Webhook{} // path → its endpoint's verifier; read-only once serving
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		fail, err := f.call(req.Context())
		if err != nil {
			return // the sender gave up
		}
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		wh := verifiers[req.URL.Path]
		if wh == nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		var b struct {
			Data webhook.NotificationData `json:"data"`
		}
		if err := wh.Verify(body, req.Header); err != nil {
			bad.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if err := json.Unmarshal(body, &b); err != nil || b.Data.Order == nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		r.accept(req.Header.Get(webhook.HeaderID), tenant, b.Data.Order.ID)
		w.WriteHeader(http.StatusNoContent)
	}))
	var created []string
	closeAll := func() {
		srv.Close()
		// Against a NATS_URL the registry outlives the run: leave it as
		// it was.
		for _, id := range created {
			_ = store.Delete(context.WithoutCancel(ctx), tenant, id)
		}
	}
	urls := make([]string, cfg.Recipients)
	for i := range urls {
		path := fmt.Sprintf("/hooks/r%d", i)
		urls[i] = "http://" + srv.Listener.Addr().String() + path
		ep, secret, err := store.Create(ctx, tenant, webhooks.New{URL: urls[i], Description: "herald bench"})
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("bench: registering a webhook endpoint: %w", err)
		}
		created = append(created, ep.ID)
		if verifiers[path], err = standardwebhooks.NewWebhook(secret); err != nil {
			closeAll()
			return nil, err
		}
	}
	srv.Start() // once verifiers is complete
	ch, err := webhook.NewChannel(webhook.ChannelConfig{Endpoints: store,
		Sender: &webhook.Sender{Client: webhook.NewClient(webhook.ClientOptions{AllowPrivateNetworks: true})}})
	if err != nil {
		closeAll()
		return nil, err
	}
	return &farSide{channel: ch, platform: []string{"webhook"}, close: closeAll,
		address:       func(_, r int) string { return urls[r] },
		badSignatures: func() int { return int(bad.Load()) }}, nil
}
