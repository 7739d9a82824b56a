package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/vault"
)

// answer is one HTTP answer of the API.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// problem is an error answer (RFC 9457).
type problem struct {
	Status int    `json:"status"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

// call sends a request to the public listener, with key as the bearer
// credentials unless empty.
func (p *pipeline) call(t *testing.T, method, path, key string, body []byte, header http.Header) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(heraldtest.Context(t), method, "http://"+p.dev.App.APIAddr()+path, bytes.NewReader(body))
	require.NoError(t, err)
	for name, values := range header {
		req.Header[name] = values
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/cloudevents+json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := heraldtest.HTTPClient(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// postEvent publishes an event under an Idempotency-Key.
func (p *pipeline) postEvent(t *testing.T, key, idempotencyKey string, body []byte) answer {
	t.Helper()
	return p.call(t, http.MethodPost, "/v1/events", key, body, http.Header{"Idempotency-Key": {idempotencyKey}})
}

// requireProblem checks an error answer is problem+json with its status,
// and that it does not repeat the key sent.
func requireProblem(t *testing.T, a answer, status int, key string) problem {
	t.Helper()
	require.Equal(t, status, a.status, "%s", a.body)
	require.Equal(t, "application/problem+json", a.header.Get("Content-Type"))
	var pr problem
	require.NoError(t, json.Unmarshal(a.body, &pr))
	require.Equal(t, status, pr.Status)
	require.NotEmpty(t, pr.Title)
	if key != "" {
		heraldtest.RequireNoSecret(t, string(a.body), "the answer", key)
	}
	return pr
}

// createKey makes an API key and waits until the API knows it: the
// Authenticator learns of new keys by watch, so at first it answers 401.
func (p *pipeline) createKey(t *testing.T, keys *apikey.Keys, spec apikey.Spec) (string, apikey.Key) {
	t.Helper()
	plain, key, err := keys.Create(heraldtest.Context(t), spec)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return p.call(t, http.MethodGet, "/v1/notifications/ntf_none", plain, nil, nil).status != http.StatusUnauthorized
	}, 10*time.Second, 20*time.Millisecond, "the API did not learn of the key")
	return plain, key
}

func openKeys(t *testing.T, p *pipeline) *apikey.Keys {
	t.Helper()
	keys, err := apikey.Open(heraldtest.Context(t), p.js)
	require.NoError(t, err)
	return keys
}

// The sample order sent over HTTP reaches both recipients once; sending
// the same request again answers as the first time and sends nothing.
func TestHTTPEventIsDeliveredOnceAndReplayedAfter(t *testing.T) {
	t.Parallel()
	p := startPipeline(t)
	send, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send}})
	order := sample(t, "order.created.json", nil)

	first := p.postEvent(t, send, "po-2026-0042-created", order)
	require.Equal(t, http.StatusAccepted, first.status, "%s", first.body)
	require.Empty(t, first.header.Get("Idempotent-Replayed"))
	var accepted struct {
		ID, Tenant, Subject, Stream string
		Duplicate                   bool
	}
	require.NoError(t, json.Unmarshal(first.body, &accepted))
	require.Equal(t, "evt-2026-11-30-0001", accepted.ID)
	require.Equal(t, "acme", accepted.Tenant)
	require.Equal(t, "orders.created.acme", accepted.Subject)
	require.False(t, accepted.Duplicate)
	p.settle(t)
	got := byRecipient(p.mail(t))
	require.Len(t, got, 2, "one email per recipient with the email channel")
	require.Len(t, got["olga@zarya.example"], 1)
	require.Len(t, got["compras@frutasdelsur.example"], 1)

	// Listed, from the notification index the history service follows
	// the ledger into: both delivered, newest first.
	read, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Read}})
	var listed struct {
		Notifications []struct{ ID, Order, Recipient, State string }
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		a := p.call(t, http.MethodGet, "/v1/notifications?order=PO-2026-0042&state=delivered", read, nil, nil)
		require.Equal(c, http.StatusOK, a.status, "%s", a.body)
		require.NoError(c, json.Unmarshal(a.body, &listed))
		require.Len(c, listed.Notifications, 2)
	}, 10*time.Second, 20*time.Millisecond)
	for _, n := range listed.Notifications {
		require.Contains(t, got, n.Recipient)
		require.Equal(t, "PO-2026-0042", n.Order)
	}

	again := p.postEvent(t, send, "po-2026-0042-created", order)
	require.Equal(t, first.status, again.status)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(first.body), string(again.body), "the recorded answer, stream sequence included")
	p.settle(t)
	require.Len(t, p.mail(t), 2, "a replayed request sends nothing new")

	edited := sample(t, "order.created.json", func(m map[string]any) { m["id"] = "evt-2026-11-30-0001-edited" })
	pr := requireProblem(t, p.postEvent(t, send, "po-2026-0042-created", edited), http.StatusUnprocessableEntity, send)
	require.Contains(t, pr.Detail, "Idempotency-Key")
}

// Without a key, with a revoked key, or reading another tenant's
// notification, the API answers as if there were nothing to see.
func TestHTTPRefusesMissingAndRevokedKeysAndOtherTenants(t *testing.T) {
	t.Parallel()
	p := startPipeline(t)
	heraldtest.RegisterTenants(t, p.js, "globex")
	keys := openKeys(t, p)
	both := []apikey.Scope{apikey.Send, apikey.Read}
	acme, acmeKey := p.createKey(t, keys, apikey.Spec{Tenant: "acme", Scopes: both})
	globex, _ := p.createKey(t, keys, apikey.Spec{Tenant: "globex", Scopes: both})

	order := sample(t, "order.created.json", nil)
	requireProblem(t, p.postEvent(t, "", "no-key", order), http.StatusUnauthorized, "")
	require.Equal(t, http.StatusAccepted, p.postEvent(t, acme, "po-2026-0042", order).status)
	p.settle(t)

	id := notification.ID("acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example")
	sent, err := filepath.Glob(filepath.Join(p.dev.MailDir, "*-"+id+"-*.eml"))
	require.NoError(t, err)
	require.Len(t, sent, 1, "the sink names the file by the notification id")

	own := p.call(t, http.MethodGet, "/v1/notifications/"+id, acme, nil, nil)
	require.Equal(t, http.StatusOK, own.status, "%s", own.body)
	var n struct{ ID, Tenant, State string }
	require.NoError(t, json.Unmarshal(own.body, &n))
	require.Equal(t, id, n.ID)
	require.Equal(t, "acme", n.Tenant)
	require.Equal(t, "delivered", n.State)

	for _, path := range []string{"/v1/notifications/" + id, "/v1/notifications/" + id + "?tenant=acme"} {
		other := requireProblem(t, p.call(t, http.MethodGet, path, globex, nil, nil), http.StatusNotFound, globex)
		require.Equal(t, "no notification "+id, other.Detail, "as for an id that does not exist")
	}

	require.NoError(t, keys.Revoke(heraldtest.Context(t), acmeKey.ID))
	require.Eventually(t, func() bool {
		return p.call(t, http.MethodGet, "/v1/notifications/"+id, acme, nil, nil).status == http.StatusUnauthorized
	}, 10*time.Second, 20*time.Millisecond, "a revoked key still opens the API")
	requireProblem(t, p.postEvent(t, acme, "after-revocation", order), http.StatusUnauthorized, acme)
}

// After an API key sends an order over HTTP and a provider's secret is
// stored and read back, neither secret — nor the vault's master key — is
// anywhere in JetStream's files, and neither is in any log line, at every
// level.
func TestSecretsAreNeitherStoredNorLoggedInTheClear(t *testing.T) {
	t.Parallel()
	var logs heraldtest.Buffer
	p := startPipelineLogging(t, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ctx := heraldtest.Context(t)
	send, sendKey := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send}})
	// hk_<id>_<secret>: the id is public, and stored.
	sendSecret := strings.TrimPrefix(send, "hk_"+sendKey.ID+"_")
	require.NotEqual(t, send, sendSecret)
	require.Equal(t, http.StatusAccepted, p.postEvent(t, send, "po-2026-0042", sample(t, "order.created.json", nil)).status)

	master, err := vault.ReadKeyFile(p.dev.MasterKey)
	require.NoError(t, err)
	keyring, err := vault.NewKeyring(master)
	require.NoError(t, err)
	store, err := vault.Open(ctx, p.js, keyring)
	require.NoError(t, err)
	// Random: a readable secret's 8-byte runs ("01234567") could be
	// anywhere by chance.
	providerSecret := "SG." + rand.Text() + "." + rand.Text()
	require.NoError(t, store.Put(ctx, "acme", vault.Credential{Name: "sendgrid", Type: vault.TypeSendGrid,
		APIKey: vault.NewSecret(providerSecret)}))
	read, err := store.Get(ctx, "acme", "sendgrid")
	require.NoError(t, err)
	require.True(t, read.APIKey.Reveal() == providerSecret, "the secret reads back")
	p.settle(t)
	require.Len(t, p.mail(t), 2)

	stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.dev.Stop(stop)) // everything on disk, nothing only in memory
	masterFile, err := os.ReadFile(p.dev.MasterKey)
	require.NoError(t, err)

	stored := heraldtest.StoredBytes(t, filepath.Join(p.dev.DataDir, "nats"))
	require.True(t, strings.Contains(stored, "acme.sendgrid"), "the scan reads where the vault is kept")
	require.True(t, strings.Contains(stored, "PO-2026-0042"), "the scan reads where events are kept")
	heraldtest.RequireNoSecret(t, stored, "JetStream's store", sendSecret, providerSecret, strings.TrimSpace(string(masterFile)))
	logged := logs.String()
	require.True(t, strings.Contains(logged, "component=nats-server"), "the logs were captured")
	heraldtest.RequireNoSecret(t, logged, "the logs", sendSecret, providerSecret, strings.TrimSpace(string(masterFile)))
}
