package e2e

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// Event dedupe is per tenant, and no tenant can reach into another's: acme
// and globex publish an event with the same id, each with its own NATS
// credentials, and both are delivered — though acme, first, sent copies
// under every message id a guess could give globex's (the bare id, and
// globex's prefix) and one naming globex in its body.
func TestATenantCannotSwallowAnothersEvent(t *testing.T) {
	t.Parallel()
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: heraldtest.StoreDir(t), Options: tenantUsers("acme", "globex")})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	admin := runHeraldAs(t, srv, "admin", "acme", "globex")
	acme, globex := connectAs(t, srv, "acme"), connectAs(t, srv, "globex")
	ctx := heraldtest.Context(t)
	const id = "evt-2026-11-30-0001"

	asAcme := sample(t, "order.created.json", nil)
	for _, squat := range []string{id, "globex:" + id} {
		_, err := acme.js.PublishMsg(ctx, &nats.Msg{Subject: "orders.created.acme", Data: asAcme,
			Header: nats.Header{jetstream.MsgIDHeader: {squat}}})
		require.NoError(t, err)
	}
	asGlobex := sample(t, "order.created.json", func(m map[string]any) { m["tenant"] = "globex" })
	_, err = acme.js.Publish(ctx, "orders.created.acme", asGlobex)
	require.NoError(t, err, "permissions cannot see the body")
	require.Eventually(t, func() bool {
		return admin.mails(t) == 2 && len(heraldtest.StreamMessages(t, admin.js, "DLQ")) == 1
	}, 60*time.Second, 50*time.Millisecond, "acme's order: two emails; the one naming globex on acme's subject: a dead letter")

	receipt, err := client.NewNATS(globex.js).Publish(ctx, client.FromJSON(asGlobex, true))
	require.NoError(t, err)
	require.False(t, receipt.Duplicate, "globex's event is stored")
	// Over raw NATS, under the id README.md shows, as a publisher without
	// Herald's client would.
	_, err = globex.js.PublishMsg(ctx, &nats.Msg{Subject: "orders.created.globex", Data: asGlobex,
		Header: nats.Header{jetstream.MsgIDHeader: {event.MsgID("globex", id, asGlobex)}}})
	require.NoError(t, err)

	require.Eventually(t, func() bool { return admin.mails(t) == 4 }, 60*time.Second, 50*time.Millisecond,
		"globex's order: two emails more")
	require.Len(t, heraldtest.StreamMessages(t, admin.js, "DLQ"), 1)
}

// The same event sent over NATS, over HTTP and through the outbox — its
// bytes differing each way, so the stream keeps every copy — is one event:
// the router routes it once, and counts the others as duplicates.
func TestTheSameEventOverNATSHTTPAndTheOutboxIsOneEvent(t *testing.T) {
	t.Parallel()
	p := startPipeline(t, withoutDocuments)
	ctx := heraldtest.Context(t)
	order := sample(t, "order.created.json", nil)

	_, err := client.NewNATS(p.js).Publish(ctx, client.FromJSON(order, false))
	require.NoError(t, err)
	p.settle(t)
	require.Len(t, p.mail(t), 2, "one email per recipient")

	send, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send}})
	overHTTP := p.postEvent(t, send, "", []byte(strings.Replace(string(order), "\n  \"tenant\": \"acme\",", "", 1)))
	require.Equal(t, http.StatusAccepted, overHTTP.status, "%s", overHTTP.body)

	path := filepath.Join(t.TempDir(), "service.db")
	db, err := outbox.Open(ctx, "sqlite:"+path)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	require.NoError(t, db.Init(ctx))
	service, err := sql.Open("sqlite", path+"?_txlock=immediate&_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	t.Cleanup(func() { _ = service.Close() })
	// A row as README.md's SQL inserts it, the event re-encoded.
	_, err = service.Exec(`INSERT INTO herald_outbox (subject, headers, payload) VALUES ($1, $2, $3)`,
		"orders.created", `{"Nats-Msg-Id": "evt-2026-11-30-0001"}`, sample(t, "order.created.json", func(map[string]any) {}))
	require.NoError(t, err)
	relay, err := outbox.NewRelay(db, p.js, outbox.RelayConfig{Poll: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, relay.Start(ctx))
	t.Cleanup(func() { require.NoError(t, relay.Stop(context.Background())) })

	require.Eventually(t, func() bool { return len(p.streamMessages(t, "ORDERS")) == 3 }, 30*time.Second, 20*time.Millisecond,
		"three copies, three Nats-Msg-Ids: the stream keeps each")
	p.settle(t)
	require.Len(t, p.mail(t), 2, "nothing sent twice")
	status, metrics := p.get(t, "/metrics")
	require.Equal(t, 200, status)
	require.Regexp(t, `herald_router_events_total\{outcome="routed",tenant="acme",type="order.created"\} 1\n`, metrics)
	require.Regexp(t, `herald_router_events_total\{outcome="duplicate",tenant="acme",type="order.created"\} 2\n`, metrics)
}
