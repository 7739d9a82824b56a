package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/erasure"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/resource"
)

// subscribersErasureCommands are `herald subscribers erase` and `delete`.
func subscribersErasureCommands() []*cobra.Command {
	return []*cobra.Command{subscribersEraseCommand(), subscribersDeleteCommand()}
}

func subscribersDeleteCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete ID --tenant T",
		Short: "Delete a subscriber's profile and push devices only",
		Long: `Deletes the subscriber's profile and her push devices. Her preferences, topic memberships and
place in accounts stay, as do the profile's earlier versions in the bucket's
history and her address in notifications and suppressions: ` + "`erase`" + ` removes those.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tenant, _ := cmd.Flags().GetString("tenant")
			return withNATS(cmd, func(ctx context.Context, _ app.Config, js jetstream.JetStream) error {
				dir, err := recipient.Open(ctx, js)
				if err != nil {
					return err
				}
				err = dir.DeleteSubscriber(resource.WithActor(ctx, cliActor()), tenant, args[0])
				if errors.Is(err, resource.ErrNotFound) {
					return fmt.Errorf("tenant %s has no subscriber %q", tenant, args[0])
				}
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "deleted subscriber %q of tenant %s (her profile and push devices only)\n", args[0], tenant)
				return err
			})
		},
	}
	tenantFlag(cmd)
	return cmd
}

func subscribersEraseCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "erase ID --tenant T [--json]",
		Short: "Erase a subscriber: her records, and her addresses from notifications and suppressions",
		Long: `Erases the subscriber: her profile, preferences, topic memberships and place
in accounts go with every version their buckets keep; her notifications stay,
in their state and counted, with each of her addresses replaced by
erased:<keyed hash>; suppressions of her addresses keep blocking them but no
longer say them. Prints what was erased. Needs the link secret
(documents.link_secret_env) the services use, which keys the hashes —
beside a ` + "`herald dev`" + ` run from the working directory, dev's
.herald/link.key — and reads the notification index (history.url) when one
is configured.
Erasing again, or a subscriber never known, erases nothing and is no error.`,
		Example: "  herald subscribers erase u-olga --tenant acme",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tenant, _ := cmd.Flags().GetString("tenant")
			return withNATS(cmd, func(ctx context.Context, cfg app.Config, js jetstream.JetStream) error {
				useDevLinkKey(cmd, &cfg.Documents)
				r, err := erase(resource.WithActor(ctx, cliActor()), cfg, js, tenant, args[0])
				if err != nil {
					return err
				}
				return printReceipt(cmd, r)
			})
		},
	}
	tenantFlag(cmd)
	cmd.Flags().Bool("json", false, "print the receipt as JSON")
	return cmd
}

// useDevLinkKey gives a configuration naming no link secret the one a
// `herald dev` run from the working directory keeps, so that erasing
// beside dev needs no setting, as the commands needing the master key.
func useDevLinkKey(cmd *cobra.Command, docs *app.DocumentsConfig) {
	if docs.LinkSecretEnv == "" && docs.LinkSecretFile == "" {
		docs.LinkSecretFile = devFile(cmd, app.DevLinkKeyFile(app.DevDataDir), "no documents.link_secret_env: using herald dev's link secret")
	}
}

func tenantFlag(cmd *cobra.Command) {
	cmd.Flags().String("tenant", "", "the tenant (required)")
	_ = cmd.MarkFlagRequired("tenant")
}

// erase runs the erasure as the API does: with the link secret and the
// notification index the configuration names.
func erase(ctx context.Context, cfg app.Config, js jetstream.JetStream, tenant, id string) (erasure.Receipt, error) {
	secret, err := app.LinkSecret(cfg)
	if err != nil {
		return erasure.Receipt{}, err
	}
	if secret == nil {
		return erasure.Receipt{}, erasure.ErrNoSecret
	}
	c := erasure.Config{Secret: secret}
	if cfg.History.URL != "" {
		store, err := history.Open(ctx, cfg.History.URL)
		if err != nil {
			return erasure.Receipt{}, err
		}
		defer func() { _ = store.Close() }()
		c.History = store
	}
	eraser, err := erasure.Open(ctx, js, c)
	if err != nil {
		return erasure.Receipt{}, err
	}
	return eraser.Erase(ctx, tenant, id)
}

// printReceipt prints what r counts, a line each, or r as JSON.
func printReceipt(cmd *cobra.Command, r erasure.Receipt) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
	}
	w := newTable(cmd.OutOrStdout(), "ERASED", "COUNT")
	for _, row := range [][2]any{{"profile", r.Profile}, {"preferences", r.Preferences}, {"topic memberships", r.TopicMemberships},
		{"accounts", r.Accounts}, {"addresses", r.Addresses}, {"history rows", r.HistoryRows}, {"ledger entries", r.LedgerEntries},
		{"suppressions concealed", r.Suppressions}, {"still being sent", r.InFlight}} {
		w.row(row[0], row[1])
	}
	if err := w.flush(); err != nil {
		return err
	}
	if !r.Complete {
		_, err := fmt.Fprintln(cmd.OutOrStdout(), "not complete: "+strconv.Itoa(r.InFlight)+" of her notifications are still being sent; erase her again once they settle")
		return err
	}
	return nil
}
