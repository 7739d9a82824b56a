package bench_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/bench"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// The inbox run measures a running Herald: every stream opens, and every
// item written reaches its subscriber's stream.
func TestRunInboxTimesEveryItemToItsStream(t *testing.T) {
	t.Parallel()
	var cfg app.Config
	cfg.HTTP.Listen, cfg.API.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Redis.Prefix = heraldtest.Prefix()
	dev, err := app.StartDev(context.Background(), app.DevConfig{DataDir: heraldtest.StoreDir(t), NATSListen: "127.0.0.1:0",
		RedisURL: heraldtest.RedisURL(t), Config: cfg}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dev.Stop(context.Background())) })
	nc, err := nats.Connect(dev.NATS.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	keys, err := apikey.Open(heraldtest.Context(t), js)
	require.NoError(t, err)
	key, _, err := keys.Create(heraldtest.Context(t), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send}})
	require.NoError(t, err)

	cfgRun := bench.InboxConfig{APIURL: "http://" + dev.App.APIAddr(), MetricsURL: "http://" + dev.App.HTTPAddr() + "/metrics",
		NATSURL: dev.NATS.URL(), Key: key, Connections: 20, Items: 40, Rate: 400, Idle: time.Second}
	var report bench.InboxReport
	for deadline := time.Now().Add(30 * time.Second); ; { // the API learns of a new key by watch
		if report, err = bench.RunInbox(heraldtest.Context(t), cfgRun, nil); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err)
	require.NoError(t, report.Check())
	require.Equal(t, 40, report.Received)
	require.Positive(t, report.P99ms)
	require.Positive(t, report.IdleSeconds)
}

func TestInboxReportCheckSaysWhatWasLost(t *testing.T) {
	t.Parallel()
	require.EqualError(t, bench.InboxReport{Items: 10, Received: 7}.Check(), "3 of 10 items never reached their subscriber's stream")
	require.NoError(t, bench.InboxReport{Items: 10, Received: 10}.Check())
}
