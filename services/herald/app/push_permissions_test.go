package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push/fcm/fcmtest"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/inbox"
	ledgers "github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/streams"
)

// Low-stock alerts reach a subscriber's phone by push and her inbox with
// the NATS permissions the docs give the router, the push and the inbox
// services, each running as its own user: the router plans push for her
// because it follows her devices; the push service reads them, sends
// through FCM, records the outcome and deletes the device FCM says is
// gone; the inbox service writes her feed, the second alert pushing the
// first out of a feed of one (its contents purged). Fair scheduling or
// not, no service is denied anything.
func TestPushAndInboxRunWithTheDocumentedNATSPermissions(t *testing.T) {
	t.Parallel()
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) {
			t.Parallel()
			pushWithPermissions(t, fair)
		})
	}
}

func pushWithPermissions(t *testing.T, fair bool) {
	denied := &violations{}
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: heraldtest.StoreDir(t), Options: natsUsers(fair), Logger: slog.New(denied)})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	as := func(user string) string { return strings.Replace(srv.URL(), "nats://", "nats://"+user+":"+user+"@", 1) }
	nc, err := nats.Connect(as("admin"))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	admin, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := heraldtest.Context(t)
	report, err := streams.Apply(ctx, admin, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	heraldtest.RegisterTenants(t, admin, "acme")

	fcm := fcmtest.New(t)
	fcm.Refuse("olga-old-phone", "UNREGISTERED", 0)
	dir, err := recipient.Open(ctx, admin)
	require.NoError(t, err)
	_, err = dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u-olga", Phone: "+34600111222"})
	require.NoError(t, err)
	for id, token := range map[string]string{"phone": "olga-phone", "old-phone": "olga-old-phone"} {
		_, _, err = dir.PutDevice(ctx, recipient.Device{Tenant: "acme", Subscriber: "u-olga", ID: id, Kind: recipient.DeviceFCM, Token: token})
		require.NoError(t, err)
	}

	routes := router.DefaultRoutes()
	for i, r := range routes {
		if r.Event == "inventory.low_stock" {
			routes[i].Channels = []event.Channel{event.ChannelPush, event.ChannelInbox}
		}
	}
	for _, name := range []string{"router", "push", "inbox"} {
		var cfg app.Config
		cfg.NATS.URL, cfg.Redis.URL, cfg.Redis.Prefix = as(name), heraldtest.RedisURL(t), heraldtest.Prefix()
		cfg.HTTP.Listen, cfg.Streams.SkipApply, cfg.Services = "127.0.0.1:0", true, []string{name}
		cfg.Scheduling.Fair = &fair
		cfg.Router.Routes = routes
		cfg.Inbox.MaxItems = 1
		cfg.Push.FCM = &app.FCMConfig{CredentialsEnv: "FCM_CREDENTIALS", ProjectID: fcmtest.Project, Endpoint: fcm.Endpoint()}
		cfg.Getenv = func(k string) string {
			return map[string]string{"FCM_CREDENTIALS": string(fcm.ServiceAccountJSON())}[k]
		}
		a, err := app.New(cfg, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		require.NoError(t, a.Start(ctx), name)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, a.Stop(ctx))
		})
	}

	alert, err := os.ReadFile("../../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(alert, &m))
	m["data"].(map[string]any)["recipients"] = []any{map[string]any{"role": "warehouse", "subscriber": "u-olga"}}
	l, err := ledgers.Open(ctx, admin)
	require.NoError(t, err)
	delivered := func(keys ...string) bool {
		for _, key := range keys {
			if e, err := l.Get(ctx, "acme", key); err != nil || e.State != ledgers.Delivered {
				return false
			}
		}
		return true
	}
	for _, id := range []string{"evt-1", "evt-2"} {
		m["id"] = id
		alert, err = json.Marshal(m)
		require.NoError(t, err)
		_, err = admin.Publish(ctx, "inventory.low_stock", alert)
		require.NoError(t, err)
		push, item := "acme:"+id+":0:low_stock:push:u-olga", "acme:"+id+":0:low_stock:inbox:u-olga"
		require.Eventually(t, func() bool { return delivered(push, item) || len(denied.list()) > 0 }, 60*time.Second, 20*time.Millisecond)
		require.Empty(t, denied.list(), "the server denied a service")
	}
	require.Len(t, fcm.Messages(), 2, "her phone's pushes")
	feed, err := inbox.Open(ctx, admin)
	require.NoError(t, err)
	page, err := feed.List(ctx, "acme", "u-olga", inbox.Query{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1, "a feed of one")
	require.Equal(t, notification.ID("acme:evt-2:0:low_stock:inbox:u-olga"), page.Items[0].ID)
	devices, err := dir.Devices(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Len(t, devices, 1, "the phone FCM says is gone is deleted")
	require.Equal(t, "phone", devices[0].ID)
}
