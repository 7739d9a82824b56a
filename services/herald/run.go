package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
)

func runCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run [service...]",
		Short: "Run Herald services against NATS_URL (and REDIS_URL)",
		Long: `Run the named services in this process: router, pdf, delivery, dlq, api,
history, outbox-relay… With no names, all of them run (history and
outbox-relay only when their database is configured). Each process serves
/healthz, /readyz and /metrics on --http-listen (operations: keep it
private). A process running api also serves the HTTP API, signed document
and unsubscribe links, the providers' webhooks and the console on
--api-listen (public: put this one behind your ingress); a process of
workers alone does not open it. SIGINT or SIGTERM drains in-flight
messages, then exits.

Traces are exported over OTLP when the standard variables ask for them
(OTEL_EXPORTER_OTLP_ENDPOINT, or OTEL_TRACES_EXPORTER=otlp; see docs/deploying.md, "Traces").`,
		ValidArgs: app.Targets,
		Args:      cobra.OnlyValidArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			cfg.Services = args
			logger := newLogger(cfg.WithDefaults(), cmd.ErrOrStderr())
			a, err := app.New(cfg, logger)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := a.Start(ctx); err != nil {
				return err
			}
			listening := []any{"services", cfg.WithDefaults().Services, "http", a.HTTPAddr()}
			if addr := a.APIAddr(); addr != "" {
				listening = append(listening, "api", addr)
			}
			logger.Info("herald running", listening...)
			<-ctx.Done()
			stop()
			timeout, _ := cmd.Flags().GetDuration("shutdown-timeout")
			logger.Info("stopping: finishing in-flight messages", "timeout", timeout)
			sctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			return a.Stop(sctx)
		},
	}
	listenFlags(cmd)
	cmd.Flags().Duration("shutdown-timeout", 30*time.Second, "how long a shutdown may spend finishing in-flight messages")
	cmd.Flags().String("postgres", "", "outbox-relay: the database of the outbox it publishes, postgres://… (sets outbox.url; OUTBOX_URL)")
	return cmd
}

// listenFlags are the two HTTP addresses, for run and dev.
func listenFlags(cmd *cobra.Command) {
	cmd.Flags().String("http-listen", "127.0.0.1:8080", "operations address: /healthz, /readyz and /metrics (keep it private)")
	cmd.Flags().String("api-listen", "127.0.0.1:8081", "public address, opened when api runs: the HTTP API (/v1) and signed document links")
}
