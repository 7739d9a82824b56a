package app_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// Herald will not start on a nats-server without message schedules: the
// error names the version needed and the one found. (Every other test of
// the app starts on the embedded 2.15, which passes.)
func TestStartRefusesAServerWithoutMessageSchedules(t *testing.T) {
	t.Parallel()
	var cfg app.Config
	cfg.NATS.URL, cfg.Redis.URL, cfg.Redis.Prefix = heraldtest.ServerOfVersion(t, "2.12.4"), heraldtest.RedisURL(t), heraldtest.Prefix()
	cfg.Services = []string{"router"}
	cfg.HTTP.Listen = "127.0.0.1:0"
	a, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	err = a.Start(heraldtest.Context(t))
	require.ErrorContains(t, err, "nats-server 2.12.4 is too old: Herald needs nats-server 2.14.0 or newer")
}
