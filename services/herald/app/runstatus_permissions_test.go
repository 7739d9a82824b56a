package app_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/streams"
)

// A delivery service tells a workflow run that the notification its send
// made was delivered with the NATS permissions the docs give it: the sms
// service, running as its own user, delivers a run's notification and the
// run's message reaches RUNS; every channel's user may publish it.
func TestADeliveredRunNotificationIsToldWithTheDocumentedPermissions(t *testing.T) {
	t.Parallel()
	denied := &violations{}
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: heraldtest.StoreDir(t), Options: natsUsers(true), Logger: slog.New(denied)})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	as := func(user string) string { return strings.Replace(srv.URL(), "nats://", "nats://"+user+":"+user+"@", 1) }
	connect := func(user string) jetstream.JetStream {
		nc, err := nats.Connect(as(user))
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		return js
	}
	ctx, admin := heraldtest.Context(t), connect("admin")
	report, err := streams.Apply(ctx, admin, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	heraldtest.RegisterTenants(t, admin, "acme")

	var cfg app.Config
	cfg.NATS.URL, cfg.Redis.URL, cfg.Redis.Prefix = as("sms"), heraldtest.RedisURL(t), heraldtest.Prefix()
	cfg.HTTP.Listen, cfg.Streams.SkipApply, cfg.Services = "127.0.0.1:0", true, []string{"sms"}
	cfg.SMS.Providers = []app.ProviderConfig{{Type: "textdir", Dir: t.TempDir()}}
	a, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, a.Stop(ctx))
	})

	key := notification.Key{Tenant: "acme", Subject: "PO-1", Revision: 1, Document: "terms", Channel: event.ChannelSMS, Recipient: "+34600111222"}.String()
	d := notification.Delivery{ID: notification.ID(key), DedupeKey: key, Tenant: "acme", Channel: event.ChannelSMS,
		Priority: notification.PriorityNormal, Recipient: notification.Recipient{Address: "+34600111222"}, Locale: "en",
		Message: &notification.Message{Subject: "Terms", Text: "Our terms."}, Run: &notification.RunRef{Key: "acme.UE8tMQ.run_1", Step: 0}}
	_, err = notification.Publish(ctx, admin, []notification.Delivery{d})
	require.NoError(t, err)
	told := func() bool {
		for _, m := range heraldtest.StreamMessages(t, admin, "RUNS") {
			if m.Subject == "runs.in.acme" {
				return true
			}
		}
		return false
	}
	require.Eventually(t, func() bool { return told() || len(denied.list()) > 0 }, 30*time.Second, 20*time.Millisecond, "the run is told")
	require.Empty(t, denied.list(), "the server denied the sms service")

	for _, user := range []string{"delivery", "whatsapp", "webhook"} {
		d.ID = "ntf_" + user
		require.NoError(t, notification.PublishRunStatus(ctx, connect(user), d, "delivered", time.Now()), user)
	}
	require.Empty(t, denied.list())
}
