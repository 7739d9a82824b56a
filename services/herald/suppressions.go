package main

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/suppression"
	"github.com/heraldhq/herald/shared/vault"
)

// suppressionCommands reach the suppression store.
var suppressionCommands = resourceCommands[*suppression.Store]{
	open: func(ctx context.Context, _ app.Config, js jetstream.JetStream, _ *vault.Keyring) (*suppression.Store, error) {
		return suppression.Open(ctx, js)
	},
}

func suppressionsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "suppressions",
		Short: "List, add and remove tenants' suppressed addresses",
		Long: `Herald sends a tenant's notifications to none of its suppressed addresses:
each is recorded as suppressed, not tried. Addresses are suppressed after a
hard bounce or a complaint (on the channel that bounced), or by hand;
removing one sends to it again.`,
	}
	cmd.AddCommand(suppressionsListCommand(), suppressionsAddCommand(), suppressionsRemoveCommand(), suppressionsChangesCommand())
	return cmd
}

func suppressionsListCommand() *cobra.Command {
	return listCommand(suppressionCommands, "List a tenant's suppressed addresses, newest first", (*suppression.Store).List,
		[]any{"ADDRESS", "CHANNEL", "CATEGORY", "REASON", "SOURCE", "SINCE", "DETAIL"},
		func(e suppression.Entry) []any {
			return []any{cmp.Or(e.Address, "(erased)"), cmp.Or(string(e.Channel), "(all)"), cmp.Or(e.Category, "(all)"), e.Reason, dash(e.Source),
				e.CreatedAt.Format(time.RFC3339), dash(e.Detail)}
		})
}

func suppressionsChangesCommand() *cobra.Command {
	return changesCommand(suppressionCommands, "an address's suppression", "address", "the address (required)",
		func(cmd *cobra.Command) {
			cmd.Flags().String("channel", "", "the channel it is limited to; default the one for every channel")
			cmd.Flags().String("category", "", "the category it is limited to; default the one for all")
		},
		func(s *suppression.Store, cmd *cobra.Command, ctx context.Context, tenant, address string) ([]resource.Change, error) {
			channel, _ := cmd.Flags().GetString("channel")
			category, _ := cmd.Flags().GetString("category")
			e := suppression.Entry{Tenant: tenant, Channel: event.Channel(channel), Address: address, Category: category}
			return s.Records().Changes(ctx, suppression.Suppressions.Key(e))
		})
}

func suppressionsAddCommand() *cobra.Command {
	return suppressionCommands.command(resourceCommand[*suppression.Store]{
		use:   "add --tenant ID --address A [--channel C] [--reason manual] [--detail TEXT]",
		short: "Suppress an address: the tenant's notifications are not sent to it",
		example: `  herald suppressions add --tenant acme --address jane@example.com --detail 'asked by phone'
  herald suppressions add --tenant acme --address +34600111222 --channel sms`,
		key: "address", keyUsage: "the email address or phone number, E.164 (required)",
		flags: func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.String("channel", "", "email, sms or whatsapp: only that channel's notifications; default every channel")
			f.String("reason", suppression.Manual, "hard_bounce, complaint, manual or unsubscribed")
			f.String("detail", "", "why, for people")
			f.String("category", "", "only the notifications of this category (a route's, e.g. alerts); default all")
		},
		run: func(cmd *cobra.Command, ctx context.Context, s *suppression.Store, tenant, address string) error {
			f := cmd.Flags()
			e := suppression.Entry{Tenant: tenant, Address: address, Source: "cli"}
			channel, _ := f.GetString("channel")
			e.Channel = event.Channel(channel)
			e.Reason, _ = f.GetString("reason")
			e.Detail, _ = f.GetString("detail")
			e.Category, _ = f.GetString("category")
			e, err := s.Add(ctx, e)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "suppressed %s for tenant %s (%s)\n", e.Address, e.Tenant, e.Reason)
			return nil
		},
	})
}

func suppressionsRemoveCommand() *cobra.Command {
	return suppressionCommands.command(resourceCommand[*suppression.Store]{
		use:   "remove --tenant ID --address A [--channel C]",
		short: "Lift an address's suppression: it is sent to again",
		key:   "address", keyUsage: "the address (required)",
		flags: func(cmd *cobra.Command) {
			cmd.Flags().String("channel", "", "the channel it was limited to; default the one for every channel")
			cmd.Flags().String("category", "", "the category it was limited to (an unsubscribe); default the one for all")
		},
		run: func(cmd *cobra.Command, ctx context.Context, s *suppression.Store, tenant, address string) error {
			channel, _ := cmd.Flags().GetString("channel")
			category, _ := cmd.Flags().GetString("category")
			if err := s.Remove(ctx, tenant, event.Channel(channel), address, category); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed suppression of %s for tenant %s\n", suppression.Normalize(address), tenant)
			return nil
		},
	})
}
