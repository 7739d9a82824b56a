package main

import (
	"cmp"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/telemetry"
)

// loadConfig is the one place configuration is read: the YAML file
// (--config or HERALD_CONFIG), then the environment (NATS_URL, REDIS_URL, HISTORY_URL,
// OUTBOX_URL), then the command's own flags (--http-listen, --api-listen, --postgres).
func loadConfig(cmd *cobra.Command) (app.Config, error) {
	cfg, err := app.Load(configPath(cmd))
	if err != nil {
		return cfg, err
	}
	cfg.NATS.URL = cmp.Or(os.Getenv("NATS_URL"), cfg.NATS.URL)
	cfg.Redis.URL = cmp.Or(os.Getenv("REDIS_URL"), cfg.Redis.URL)
	cfg.History.URL = cmp.Or(os.Getenv("HISTORY_URL"), cfg.History.URL)
	cfg.Outbox.URL = cmp.Or(os.Getenv("OUTBOX_URL"), cfg.Outbox.URL)
	cfg.Getenv = os.Getenv
	if f := cmd.Flags().Lookup("http-listen"); f != nil && f.Changed {
		cfg.HTTP.Listen = f.Value.String()
	}
	if f := cmd.Flags().Lookup("api-listen"); f != nil && f.Changed {
		cfg.API.Listen = f.Value.String()
	}
	if f := cmd.Flags().Lookup("postgres"); f != nil && f.Changed {
		cfg.Outbox.URL = f.Value.String()
	}
	return cfg.WithDefaults(), nil
}

// configPath is the config file a command reads: --config, else
// HERALD_CONFIG; "" for none.
func configPath(cmd *cobra.Command) string {
	path, _ := cmd.Flags().GetString("config")
	return cmp.Or(path, os.Getenv("HERALD_CONFIG"))
}

// newLogger logs to w: the command's stderr.
func newLogger(cfg app.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(telemetry.LogHandler(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(telemetry.LogHandler(slog.NewTextHandler(w, opts)))
}
