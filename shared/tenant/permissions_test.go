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
// server to ask for flow control, follows it, and is denied nothing.
func TestCacheNeedsOnlyReadPermissions(t *testing.T) {
	t.Parallel()
	denied := &violations{}
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: t.TempDir(), Logger: slog.New(denied),
		Options: func(o *server.Options) {
			o.Users = []*server.User{
				{Username: "admin", Password: "admin"},
				{Username: "reader", Password: "reader", Permissions: &server.Permissions{
					Publish:   &server.SubjectPermission{Allow: readTenants},
					Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
				}},
			}
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
	admin := connect("admin")
	report, err := streams.Apply(ctx, admin, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	reg, err := tenant.Open(ctx, admin, tenant.BuiltinPlans())
	require.NoError(t, err)
	const many = 300 // 3 MB: past the point where the server asks for flow control
	kv, err := admin.KeyValue(ctx, tenant.Bucket)
	require.NoError(t, err)
	for i := range many {
		x := valid()
		x.ID, x.Name = fmt.Sprintf("t%04d", i), strings.Repeat("n", 10_000)
		_, err := reg.Create(ctx, x)
		require.NoError(t, err)
	}

	c, err := tenant.Watch(ctx, connect("reader"))
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	_, ok := c.Lookup(fmt.Sprintf("t%04d", many-1))
	require.True(t, ok, "the whole registry is loaded")
	require.NoError(t, kv.Delete(ctx, "t0000"))
	eventually(t, func() bool { _, ok := c.Lookup("t0000"); return !ok }, "changes are followed")
	require.Empty(t, denied.list())
}
