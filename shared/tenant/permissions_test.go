package tenant_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/streams"
)

// readTenants is what a service that only reads tenants (Watch, Admit)
// must be allowed to publish: binding the bucket, creating and deleting the
// watch's ordered consumer, and answering its flow control — without that
// last one, a registry of a few megabytes stalls the watch half-loaded.
var readTenants = []string{
	"$JS.API.STREAM.INFO.KV_tenants",
	"$JS.API.CONSUMER.CREATE.KV_tenants.>",
	"$JS.API.CONSUMER.DELETE.KV_tenants.>",
	"$JS.FC.KV_tenants.>",
}

// writeTenants is what a service that changes tenants (the admin API, the
// herald tenants commands) must be allowed to publish: reading as above
// (List watches), reading one key directly, writing keys, and the ledger
// stream's info, whose max age bounds a tenant's history retention.
var writeTenants = append([]string{"$KV.tenants.>", "$JS.API.DIRECT.GET.KV_tenants.>", "$JS.API.STREAM.INFO.KV_deliveries"},
	readTenants...)

type violations struct {
	mu    sync.Mutex
	lines []string
}

func (v *violations) Enabled(context.Context, slog.Level) bool { return true }
func (v *violations) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "Violation") {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.lines = append(v.lines, r.Message)
	}
	return nil
}
func (v *violations) WithAttrs([]slog.Attr) slog.Handler { return v }
func (v *violations) WithGroup(string) slog.Handler      { return v }
func (v *violations) list() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.lines...)
}

// A service with only readTenants loads a registry large enough for the
// server to ask for flow control and follows it; one with writeTenants
// creates, reads, lists and updates it; neither is denied anything.
func TestRegistryAndCacheNeedOnlyTheirPermissions(t *testing.T) {
	t.Parallel()
	denied := &violations{}
	user := func(name string, publish []string) *server.User {
		return &server.User{Username: name, Password: name, Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: publish},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
		}}
	}
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: heraldtest.StoreDir(t), Logger: slog.New(denied),
		Options: func(o *server.Options) {
			o.Users = []*server.User{{Username: "admin", Password: "admin"},
				user("reader", readTenants), user("writer", writeTenants)}
		}})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	connect := func(user string) jetstream.JetStream {
		nc, err := nats.Connect(srv.URL(), nats.UserInfo(user, user))
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		return js
	}
	ctx := heraldtest.Context(t)
	report, err := streams.Apply(ctx, connect("admin"), streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())

	reg, err := tenant.Open(ctx, connect("writer"), tenant.BuiltinPlans())
	require.NoError(t, err)
	const many = 300 // 3 MB: past the point where the server asks for flow control
	for i := range many {
		x := valid()
		x.ID, x.Name = fmt.Sprintf("t%04d", i), strings.Repeat("n", 10_000)
		_, err := reg.Create(ctx, x)
		require.NoError(t, err)
	}
	list, err := reg.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, many)

	c, err := tenant.Watch(ctx, connect("reader"))
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	_, ok := c.Lookup(fmt.Sprintf("t%04d", many-1))
	require.True(t, ok, "the whole registry is loaded")
	_, err = reg.Update(ctx, "t0000", func(x *tenant.Tenant) error { x.Status = tenant.Suspended; return nil })
	require.NoError(t, err)
	eventually(t, func() bool { return c.Admit("t0000", true) != nil }, "changes are followed")
	require.Empty(t, denied.list())
}
