package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/examples"
	"github.com/heraldhq/herald/services/api/console"
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
<data>/mail (unless the configuration names email providers), and a webhook
sink on --hook-listen that answers each signed POST to /hook and writes it
under <data>/hooks: register it as an endpoint (herald webhooks add --tenant
acme --url http://127.0.0.1:8082/hook) to see the status events Herald sends.
Beside it is a push sink, a pretend browser whose push service is dev itself:
its subscription is <data>/push/subscription.json, the body PUT
/v1/subscribers/{id}/devices/{device_id} takes, and it writes each push to it
under <data>/push, decrypted, as the JSON a service worker gets.
Commands run from the same directory use dev's master key, <data>/master.key,
and its link secret, <data>/link.key (subscribers erase), when --data is the
default.

The embedded NATS server listens on --nats-listen, so the stock nats CLI works
against it. Ctrl-C finishes in-flight messages, then stops.`,
		Args: cobra.NoArgs,
		RunE: runDev,
	}
	cmd.Flags().String("data", ".herald", "data directory: JetStream store, master key, link secret, and the mail, SMS, webhook and push sinks")
	cmd.Flags().String("nats-listen", "127.0.0.1:4222", "embedded NATS client address")
	cmd.Flags().String("hook-listen", "127.0.0.1:8082", "webhook and push sinks' address: each delivery POSTed to /hook is written under <data>/hooks, each push to <data>/push/subscription.json's endpoint under <data>/push")
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
	hookListen, _ := cmd.Flags().GetString("hook-listen")
	logger := newLogger(cfg, cmd.ErrOrStderr())
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dev, err := app.StartDev(ctx, app.DevConfig{DataDir: data, NATSListen: natsListen, HookListen: hookListen, RedisURL: cfg.Redis.URL, Config: cfg}, logger)
	if err != nil {
		return err
	}
	printBanner(cmd.OutOrStdout(), dev, cfg.NATS.URL)
	<-ctx.Done()
	stop()
	timeout, _ := cmd.Flags().GetDuration("shutdown-timeout")
	fmt.Fprintln(cmd.OutOrStdout(), "\nStopping: finishing in-flight messages (Ctrl-C again to force)…")
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return dev.Stop(sctx)
}

// printBanner says where everything is, and prints the tour's commands as
// they run from the repository root in another shell: with NATS_URL and
// --master-key-file only when the CLI's defaults there (cliNATS, the
// working directory's dev key) would not reach this dev.
func printBanner(w io.Writer, dev *app.Dev, cliNATS string) {
	herald, keyFlag := devCLI(dev.NATS.URL(), dev.MasterKey, cliNATS)
	api := "http://" + dev.App.APIAddr()
	fmt.Fprintf(w, "\nHerald dev is running; its data is in %s.\n\n", dev.DataDir)
	fmt.Fprintf(w, "  Console   %s%s  sign in with an admin key, printed by:\n", api, console.Path)
	fmt.Fprintf(w, "              %s keys create --admin --name console\n", herald)
	fmt.Fprintf(w, "  HTTP API  %s/v1/  (%s/v1/openapi.json)  a key of %s, printed by:\n", api, api, app.SampleTenant)
	fmt.Fprintf(w, "              %s keys create --tenant %s --name demo\n", herald, app.SampleTenant)
	if dev.MailDir != "" {
		fmt.Fprintf(w, "  Mail      %s/  one .eml file per email\n", dev.MailDir)
	}
	if dev.TextDir != "" {
		fmt.Fprintf(w, "  SMS       %s/  one .json file per SMS or WhatsApp message\n", dev.TextDir)
	}
	fmt.Fprintf(w, "  Webhooks  %s  writes each delivery to %s/\n", dev.HookURL, dev.HookDir)
	if dev.VAPIDPublicKey != "" {
		fmt.Fprintf(w, "  Web Push  VAPID public key %s  (pushManager.subscribe's applicationServerKey)\n", dev.VAPIDPublicKey)
	}
	if dev.PushSubscription != "" {
		fmt.Fprintf(w, "  Push      %s  a browser's subscription, to PUT as a subscriber's device;\n", dev.PushSubscription)
		fmt.Fprintf(w, "              its pushes are written to %s/\n", dev.PushDir)
	}
	fmt.Fprintf(w, "  Tenant    %s, the sample events' (herald tenants list)\n", app.SampleTenant)
	printPlumbing(w, dev)
	fmt.Fprintf(w, "\nTry, from the repository root in another shell:\n\n")
	fmt.Fprintf(w, "  %s webhooks add --tenant %s --url %s%s\n", herald, app.SampleTenant, dev.HookURL, keyFlag)
	fmt.Fprintf(w, "  %s publish examples/events/order.created.json\n", herald)
	fmt.Fprintf(w, "  %s publish --no-validate examples/events/broken.order.created.json\n", herald)
	fmt.Fprintf(w, "  %s dlq list\n", herald)
	printNATSCommand(w, dev)
	fmt.Fprintf(w, "\nCtrl-C stops Herald after finishing in-flight messages.\n\n")
}

// devCLI is how the banner's commands call the CLI of a dev on natsURL
// whose key is masterKey, and the flag the commands that need the key add:
// nothing the CLI's own defaults there (cliNATS, the working directory's
// dev key) already give.
func devCLI(natsURL, masterKey, cliNATS string) (herald, keyFlag string) {
	herald = "go run ./services/herald"
	if cliNATS != natsURL {
		herald = "NATS_URL=" + natsURL + " " + herald
	}
	if here, err := filepath.Abs(app.DevMasterKeyFile(app.DevDataDir)); masterKey != "" && (err != nil || here != masterKey) {
		keyFlag = " --master-key-file " + masterKey
	}
	return herald, keyFlag
}

// printPlumbing lists the servers underneath, for those who look.
func printPlumbing(w io.Writer, dev *app.Dev) {
	redis := dev.App.RedisURL() + " (embedded)"
	if dev.Redis == nil {
		redis = dev.App.RedisURL() + " (REDIS_URL)"
	}
	fmt.Fprintf(w, "  NATS      %s  (JetStream store %s/nats)\n", dev.NATS.URL(), dev.DataDir)
	fmt.Fprintf(w, "  Redis     %s\n", redis)
	fmt.Fprintf(w, "  History   %s  (the index GET /v1/notifications lists from)\n", dev.App.HistoryURL())
	fmt.Fprintf(w, "  Ops       http://%s/healthz  /readyz  /metrics  (keep it private)\n", dev.App.HTTPAddr())
	if dev.MasterKey != "" {
		fmt.Fprintf(w, "  Vault     master key %s\n", dev.MasterKey)
	}
}

// printNATSCommand prints the sample order's publish with the stock nats
// CLI, with the message id Herald's own publishers give its bytes.
func printNATSCommand(w io.Writer, dev *app.Dev) {
	sample, err := examples.Events.ReadFile("events/order.created.json")
	var compact bytes.Buffer
	if err != nil || json.Compact(&compact, sample) != nil {
		return
	}
	// One no other tenant can guess (event.MsgID).
	id := event.MsgID(app.SampleTenant, "evt-2026-11-30-0001", compact.Bytes())
	fmt.Fprintf(w, "\nor publish the order with the stock nats CLI (go install github.com/nats-io/natscli/nats@v0.5.0):\n\n")
	fmt.Fprintf(w, "  nats --server %s pub orders.created --header Nats-Msg-Id:%s '%s'\n", dev.NATS.URL(), id, compact.String())
}
