package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
)

func webhooksCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhooks",
		Short: "Register, list, rotate and remove tenants' webhook endpoints",
		Long: `A tenant's endpoints receive its notifications' status events (and the
notifications of routes on the webhook channel) as POSTs signed per the
Standard Webhooks spec. A signing secret is generated when an endpoint is
added or rotated, shown that once, and stored sealed under the master key.`,
	}
	cmd.AddCommand(webhooksAddCommand(), webhooksListCommand(), webhooksRotateCommand(), webhooksEnableCommand(),
		webhooksRedeliverCommand(), webhooksRemoveCommand())
	return cmd
}

// endpoints is the endpoint registry, and the JetStream a redelivery
// publishes on.
type endpoints struct {
	*webhooks.Store
	js jetstream.JetStream
}

// webhookCommands reach the endpoint registry; a command that makes a
// secret opens it with the master key.
var webhookCommands = resourceCommands[endpoints]{
	open: func(ctx context.Context, _ app.Config, js jetstream.JetStream, keys *vault.Keyring) (endpoints, error) {
		s, err := webhooks.Open(ctx, js, keys)
		return endpoints{Store: s, js: js}, err
	},
}

func webhooksAddCommand() *cobra.Command {
	return webhookCommands.command(resourceCommand[endpoints]{
		use:     "add --tenant ID --url URL [--events 'notification.*'] [--json]",
		short:   "Register an endpoint; its signing secret is shown this once",
		example: `  herald webhooks add --tenant acme --url https://erp.acme.example/herald --events 'notification.failed'`,
		flags: func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.String("url", "", "the endpoint, https (required)")
			f.StringSlice("events", nil, "event types, as patterns (default notification.*,report.*,webhook.*,tenant.*)")
			f.String("description", "", "what the endpoint is, for people")
			f.Bool("json", false, "print the endpoint and its secret as JSON")
		},
		required: []string{"url"},
		seals:    true,
		run: func(cmd *cobra.Command, ctx context.Context, s endpoints, tenant, _ string) error {
			f := cmd.Flags()
			var n webhooks.New
			n.URL, _ = f.GetString("url")
			n.Events, _ = f.GetStringSlice("events")
			n.Description, _ = f.GetString("description")
			e, secret, err := s.Create(ctx, tenant, n)
			if err != nil {
				return err
			}
			if asJSON, _ := f.GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(struct {
					webhooks.Endpoint
					Secret string `json:"secret"`
				}{e, secret})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added endpoint %s for tenant %s (events %s)\nsigning secret, shown this once: %s\n",
				e.ID, tenant, strings.Join(e.Events, ","), secret)
			return nil
		},
	})
}

func webhooksListCommand() *cobra.Command {
	return listCommand(webhookCommands, "List a tenant's endpoints and their health; never a secret", endpoints.List,
		[]any{"ID", "URL", "EVENTS", "STATUS", "FAILING SINCE"},
		func(e webhooks.Endpoint) []any {
			status, failing := string(e.Status), "-"
			if e.DisabledReason != "" {
				status += ": " + e.DisabledReason
			}
			if !e.FailingSince.IsZero() {
				failing = e.FailingSince.Format(time.RFC3339)
			}
			return []any{e.ID, e.URL, strings.Join(e.Events, ","), status, failing}
		})
}

func webhooksRotateCommand() *cobra.Command {
	return webhookCommands.command(resourceCommand[endpoints]{
		use:   "rotate --tenant ID --id we_…",
		short: "Give an endpoint a new signing secret; the old one keeps signing beside it for --grace",
		key:   "id", keyUsage: "the endpoint (required)",
		flags: func(cmd *cobra.Command) {
			cmd.Flags().Duration("grace", 24*time.Hour, "how long the old secret keeps signing")
		},
		seals: true,
		run: func(cmd *cobra.Command, ctx context.Context, s endpoints, tenant, id string) error {
			grace, _ := cmd.Flags().GetDuration("grace")
			secret, err := s.Rotate(ctx, tenant, id, grace)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rotated %s; the old secret signs too until %s\nnew signing secret, shown this once: %s\n",
				id, time.Now().Add(grace).UTC().Format(time.RFC3339), secret)
			return nil
		},
	})
}

func webhooksRemoveCommand() *cobra.Command {
	return endpointCommand("rm", "Remove an endpoint: nothing more is sent to it", "",
		func(ctx context.Context, s endpoints, tenant, id string) (string, error) {
			return "removed", s.Delete(ctx, tenant, id)
		})
}

func webhooksEnableCommand() *cobra.Command {
	return endpointCommand("enable", "Send to a disabled endpoint again, its failures forgotten",
		`Herald disables an endpoint that answers 410 Gone or keeps failing for
webhooks.disable_after. Once it is fixed, enable it, then redeliver what it
missed, a day at most each time:
herald webhooks redeliver --tenant ID --endpoint we_… --since T [--until T] --failed`,
		func(ctx context.Context, s endpoints, tenant, id string) (string, error) {
			return "enabled", s.Enable(ctx, tenant, id)
		})
}

// endpointCommand is a command that does one thing to one endpoint
// (--tenant, --id) and says what it did.
func endpointCommand(name, short, long string, do func(ctx context.Context, s endpoints, tenant, id string) (string, error)) *cobra.Command {
	return webhookCommands.command(resourceCommand[endpoints]{
		use: name + " --tenant ID --id we_…", short: short, long: long,
		key: "id", keyUsage: "the endpoint (required)",
		run: func(cmd *cobra.Command, ctx context.Context, s endpoints, tenant, id string) error {
			done, err := do(ctx, s, tenant, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s endpoint %s of tenant %s\n", done, id, tenant)
			return nil
		},
	})
}

func webhooksRedeliverCommand() *cobra.Command {
	cmd := webhookCommands.command(resourceCommand[endpoints]{
		use:   "redeliver --tenant ID (--message ntf_… | --since T [--until T] [--failed]) [--endpoint we_…] [--id rd_…] [--dry-run] [--json]",
		short: "Send webhooks again: one, or every one told in a time range",
		long: fmt.Sprintf(`Each webhook is sent again as it was — the same webhook-id and body, signed
with the endpoint's current secrets — as a new notification whose ledger
entry names the original (redelivery_of). A range is read from the
ledger's writes by when each webhook's outcome was told: it spans at most
%d hours and %d of the tenant's ledger writes, and holds at most %d
webhooks. Running the same --id again sends nothing twice.`, int(webhooks.MaxRange.Hours()), webhooks.MaxLedgerReads, webhooks.MaxRedeliveries),
		example: `  herald webhooks redeliver --tenant acme --message ntf_3f…
  herald webhooks redeliver --tenant acme --endpoint we_… --since 2026-12-01T08:00:00Z --until 2026-12-01T12:00:00Z --failed`,
		flags: redeliveryFlags,
		check: func(cmd *cobra.Command) error {
			_, err := redelivery(cmd, "")
			return err
		},
		run: redeliver,
	})
	cmd.MarkFlagsMutuallyExclusive("message", "since")
	cmd.MarkFlagsOneRequired("message", "since")
	return cmd
}

func redeliveryFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("message", "", "one webhook's notification id")
	f.String("since", "", "the range's start, RFC 3339")
	f.String("until", "", "the range's end, RFC 3339 (default now)")
	f.String("endpoint", "", "only the webhooks to this endpoint")
	f.Bool("failed", false, "only the webhooks that failed")
	f.String("id", "", "this redelivery's id, rd_…: the same id never sends a webhook twice (default a new one)")
	f.Bool("dry-run", false, "list what would be sent; send nothing")
	f.Bool("json", false, "print JSON")
}

// redelivery is the redelivery the flags ask for.
func redelivery(cmd *cobra.Command, tenant string) (webhooks.Redelivery, error) {
	f := cmd.Flags()
	r := webhooks.Redelivery{Tenant: tenant}
	r.ID, _ = f.GetString("id")
	r.Message, _ = f.GetString("message")
	r.Endpoint, _ = f.GetString("endpoint")
	r.FailedOnly, _ = f.GetBool("failed")
	r.DryRun, _ = f.GetBool("dry-run")
	for name, t := range map[string]*time.Time{"since": &r.Since, "until": &r.Until} {
		if v, _ := f.GetString(name); v != "" {
			var err error
			if *t, err = time.Parse(time.RFC3339, v); err != nil {
				return r, fmt.Errorf("--%s: want a time such as 2026-12-01T08:00:00Z: %w", name, err)
			}
		}
	}
	return r, nil
}

// redeliver sends the webhooks the flags select again, reading the
// ledger's outcomes with a progress bar.
func redeliver(cmd *cobra.Command, ctx context.Context, s endpoints, tenant, _ string) error {
	r, err := redelivery(cmd, tenant)
	if err != nil {
		return err
	}
	l, err := ledger.Open(ctx, s.js)
	if err != nil {
		return err
	}
	b := progressBar(cmd, "reading outcomes")
	out, err := s.Redeliver(ctx, s.js, l, r, func(read int) { b.progress(read, read) })
	b.finish()
	if err != nil {
		return err
	}
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
	}
	printRedelivered(cmd, out)
	return nil
}

func printRedelivered(cmd *cobra.Command, out webhooks.Redelivered) {
	w := cmd.OutOrStdout()
	verb := "redelivering"
	if out.DryRun {
		verb = "would redeliver"
	}
	fmt.Fprintf(w, "%s %d webhook(s) of tenant %s as %s\n", verb, len(out.Sent), out.Tenant, out.ID)
	tw := newTable(w)
	if len(out.Sent) > 0 {
		tw.row("ORIGINAL", "WAS", "ENDPOINT", "REDELIVERY")
		for _, r := range out.Sent {
			tw.row(r.Of, r.State, r.Endpoint, r.NotificationID)
		}
	}
	for _, s := range out.Skipped {
		tw.row("skipped "+s.NotificationID, s.Reason)
	}
	_ = tw.flush()
}
