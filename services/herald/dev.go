package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/examples"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/event"
)

func devCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole pipeline in one process on embedded servers",
		Long: `Run every Herald service in one process with an embedded NATS server
(JetStream on disk under --data), an embedded Redis-protocol server unless
REDIS_URL is set, and a mail sink that writes one .eml file per email under
<data>/mail (unless the configuration names email providers).

The embedded NATS server listens on --nats-listen, so the stock nats CLI works
against it. Ctrl-C finishes in-flight messages, then stops.`,
		Args: cobra.NoArgs,
		RunE: runDev,
	}
	cmd.Flags().String("data", ".herald", "data directory: JetStream store and mail sink")
	cmd.Flags().String("nats-listen", "127.0.0.1:4222", "embedded NATS client address")
	listenFlags(cmd)
	cmd.Flags().Duration("shutdown-timeout", 30*time.Second, "how long a shutdown may spend finishing in-flight messages")
	return cmd
}

func runDev(cmd *cobra.Command, _ []string) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	// Every service — chosen by the App once dev has given it its index,
	// so the history service is among them.
	cfg.Services = nil
	data, _ := cmd.Flags().GetString("data")
	natsListen, _ := cmd.Flags().GetString("nats-listen")
	logger := newLogger(cfg, cmd.ErrOrStderr())
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dev, err := app.StartDev(ctx, app.DevConfig{DataDir: data, NATSListen: natsListen, RedisURL: cfg.Redis.URL, Config: cfg}, logger)
	if err != nil {
		return err
	}
	printBanner(cmd.OutOrStdout(), dev)
	<-ctx.Done()
	stop()
	timeout, _ := cmd.Flags().GetDuration("shutdown-timeout")
	fmt.Fprintln(cmd.OutOrStdout(), "\nStopping: finishing in-flight messages (Ctrl-C again to force)…")
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return dev.Stop(sctx)
}

func printBanner(w io.Writer, dev *app.Dev) {
	redis := dev.App.RedisURL() + " (embedded)"
	if dev.Redis == nil {
		redis = dev.App.RedisURL() + " (REDIS_URL)"
	}
	fmt.Fprintf(w, "\nHerald dev is running.\n\n")
	fmt.Fprintf(w, "  NATS    %s   (JetStream store %s/nats)\n", dev.NATS.URL(), dev.DataDir)
	fmt.Fprintf(w, "  Redis   %s\n", redis)
	fmt.Fprintf(w, "  Ops     http://%s/healthz  /readyz  /metrics   (--http-listen: keep private)\n", dev.App.HTTPAddr())
	fmt.Fprintf(w, "  Public  http://%s/v1/   (--api-listen: the HTTP API, /v1/openapi.json; document links)\n", dev.App.APIAddr())
	if dev.MailDir != "" {
		fmt.Fprintf(w, "  Mail    %s   (one .eml file per email; open it with any mail client)\n", dev.MailDir)
	} else {
		fmt.Fprintf(w, "  Mail    sent through the configured email providers\n")
	}
	if dev.TextDir != "" {
		fmt.Fprintf(w, "  SMS     %s   (one .json file per SMS or WhatsApp message)\n", dev.TextDir)
	}
	fmt.Fprintf(w, "  History %s   (the index GET /v1/notifications lists from)\n", dev.App.HistoryURL())
	fmt.Fprintf(w, "  Tenant  %s (registered; herald tenants list)\n", app.SampleTenant)
	if dev.MasterKey != "" {
		fmt.Fprintf(w, "  Vault   master key %s   (herald providers … --master-key-file %s)\n", dev.MasterKey, dev.MasterKey)
	}
	fmt.Fprintf(w, "\nSend the sample order event, from the repository root:\n\n")
	fmt.Fprintf(w, "  NATS_URL=%s go run ./services/herald publish examples/events/order.created.json\n", dev.NATS.URL())
	if sample, err := examples.Events.ReadFile("events/order.created.json"); err == nil {
		var compact bytes.Buffer
		if json.Compact(&compact, sample) == nil {
			fmt.Fprintf(w, "\nor with the stock nats CLI (go install github.com/nats-io/natscli/nats@v0.5.0):\n\n")
			// The message id Herald's own publishers give these bytes: one
			// no other tenant can guess (event.MsgID).
			id := event.MsgID(app.SampleTenant, "evt-2026-11-30-0001", compact.Bytes())
			fmt.Fprintf(w, "  nats --server %s pub orders.created --header Nats-Msg-Id:%s '%s'\n", dev.NATS.URL(), id, compact.String())
		}
	}
	fmt.Fprintf(w, "\nCtrl-C stops Herald after finishing in-flight messages.\n\n")
}
