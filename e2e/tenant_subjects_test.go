package e2e

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/streams"
)

// tenantUsers are the NATS users README.md ("NATS permissions") gives
// tenants' publishers: each may publish events only on its own subjects,
// orders.*.<tenant> and inventory.*.<tenant>, and read the streams'
// acknowledgements only on an inbox prefix of its own. admin runs Herald.
func tenantUsers(tenants ...string) func(*server.Options) {
	return func(opts *server.Options) {
		opts.Users = []*server.User{{Username: "admin", Password: "admin"}}
		for _, tenant := range tenants {
			opts.Users = append(opts.Users, &server.User{Username: tenant, Password: tenant, Permissions: &server.Permissions{
				Publish:   &server.SubjectPermission{Allow: []string{"orders.*." + tenant, "inventory.*." + tenant}},
				Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX_" + tenant + ".>"}},
			}})
		}
	}
}

// tenantPublisher is a publisher connected with one tenant's credentials,
// and the permission violations the server reported to it.
type tenantPublisher struct {
	js      jetstream.JetStream
	refused chan error
}

func connectAs(t *testing.T, srv *embedded.NATS, tenant string) *tenantPublisher {
	t.Helper()
	p := &tenantPublisher{refused: make(chan error, 10)}
	url := strings.Replace(srv.URL(), "nats://", "nats://"+tenant+":"+tenant+"@", 1)
	nc, err := nats.Connect(url, nats.CustomInboxPrefix("_INBOX_"+tenant),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case p.refused <- err:
			default:
			}
		}))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	p.js, err = jetstream.New(nc)
	require.NoError(t, err)
	return p
}

// refusedOn publishes as a JetStream publisher does and expects no
// acknowledgement: the server refuses the publish, so the stream never
// sees it and nobody answers.
func (p *tenantPublisher) refusedOn(t *testing.T, subject string, payload []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(heraldtest.Context(t), time.Second)
	defer cancel()
	_, err := p.js.Publish(ctx, subject, payload)
	require.ErrorIs(t, err, context.DeadlineExceeded, "no acknowledgement for %s", subject)
	select {
	case err := <-p.refused:
		require.True(t, errors.Is(err, nats.ErrPermissionViolation), "%v", err)
		require.Contains(t, err.Error(), `"`+subject+`"`)
	case <-heraldtest.Context(t).Done():
		t.Fatalf("the server did not refuse %s", subject)
	}
}

// Per-tenant NATS credentials confine a publisher to its tenant: acme
// cannot publish on globex's subjects, nor on the trusted internal ones;
// on its own subject its order goes through; and an event it writes naming
// globex, on its own subject, is dead-lettered as a tenant mismatch.
func TestATenantsCredentialsPublishOnlyAsThatTenant(t *testing.T) {
	t.Parallel()
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: heraldtest.StoreDir(t), Options: tenantUsers("acme", "globex")})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	admin := runHeraldAs(t, srv, "admin", "acme", "globex")
	acme := connectAs(t, srv, "acme")
	order := sample(t, "order.created.json", nil)

	acme.refusedOn(t, "orders.created.globex", order)
	acme.refusedOn(t, "orders.created", order)
	acme.refusedOn(t, "inventory.low_stock.globex", sample(t, "inventory.low_stock.json", nil))
	require.Empty(t, heraldtest.StreamMessages(t, admin.js, "ORDERS"), "nothing stored")
	require.Empty(t, heraldtest.StreamMessages(t, admin.js, "INVENTORY"), "nothing stored")

	ctx := heraldtest.Context(t)
	_, err = acme.js.Publish(ctx, "orders.created.acme", order)
	require.NoError(t, err, "acme publishes on its own subject")
	asGlobex := sample(t, "order.created.json", func(m map[string]any) {
		m["id"], m["tenant"] = "evt-acme-as-globex", "globex"
	})
	_, err = acme.js.Publish(ctx, "orders.created.acme", asGlobex)
	require.NoError(t, err, "permissions cannot see the body")

	require.Eventually(t, func() bool {
		return admin.mails(t) == 2 && len(heraldtest.StreamMessages(t, admin.js, "DLQ")) == 1
	}, 60*time.Second, 50*time.Millisecond, "acme's order: two emails; the forged one: a dead letter")
	entry := heraldtest.StreamMessages(t, admin.js, "DLQ")[0]
	require.Equal(t, "orders.created.acme", entry.Header.Get(deadletter.HeaderSubject))
	require.Equal(t, `tenant mismatch: event for tenant "globex" published on orders.created.acme, tenant "acme"'s subject`,
		entry.Header.Get(deadletter.HeaderReason))
}

// herald is every Herald service running as one NATS user, with the
// emails it sends in mailDir.
type herald struct {
	js      jetstream.JetStream
	mailDir string
}

// runHeraldAs applies the streams, registers the tenants (as `herald
// tenants create` does) and starts every service, all as user.
func runHeraldAs(t *testing.T, srv *embedded.NATS, user string, tenants ...string) *herald {
	t.Helper()
	url := strings.Replace(srv.URL(), "nats://", "nats://"+user+":"+user+"@", 1)
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	h := &herald{mailDir: t.TempDir()}
	h.js, err = jetstream.New(nc)
	require.NoError(t, err)
	report, err := streams.Apply(heraldtest.Context(t), h.js, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	heraldtest.RegisterTenants(t, h.js, tenants...)

	var cfg app.Config
	cfg.NATS.URL, cfg.Redis.URL, cfg.Redis.Prefix = url, heraldtest.RedisURL(t), heraldtest.Prefix()
	cfg.HTTP.Listen, cfg.API.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Streams.SkipApply = true
	cfg.Email.From = "Orders <orders@acme.example>"
	cfg.Email.Providers = []app.ProviderConfig{{Type: "maildir", Dir: h.mailDir}}
	a, err := app.New(cfg, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, err)
	require.NoError(t, a.Start(heraldtest.Context(t)))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, a.Stop(ctx))
	})
	return h
}

func (h *herald) mails(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(h.mailDir, "*.eml"))
	require.NoError(t, err)
	return len(files)
}
