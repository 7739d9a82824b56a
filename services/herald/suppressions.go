package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/suppression"
)

func suppressionsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "suppressions",
		Short: "List, add and remove tenants' suppressed addresses",
		Long: `Herald sends a tenant's notifications to none of its suppressed addresses:
each is recorded as suppressed, not tried. Addresses are suppressed after a
hard bounce or a complaint (on the channel that bounced), or by hand;
removing one sends to it again.`,
	}
	cmd.AddCommand(suppressionsListCommand(), suppressionsAddCommand(), suppressionsRemoveCommand())
	return cmd
}

func suppressionsListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list --tenant ID [--json]",
		Short: "List a tenant's suppressed addresses, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tenant, _ := cmd.Flags().GetString("tenant")
			asJSON, _ := cmd.Flags().GetBool("json")
			return withSuppressions(cmd, func(ctx context.Context, s *suppression.Store) error {
				list, err := s.List(ctx, tenant)
				if err != nil {
					return err
				}
				if asJSON {
					if list == nil {
						list = []suppression.Entry{} // none is an empty list, not null
					}
					return json.NewEncoder(cmd.OutOrStdout()).Encode(list)
				}
				w := newTable(cmd.OutOrStdout(), "ADDRESS", "CHANNEL", "CATEGORY", "REASON", "SOURCE", "SINCE", "DETAIL")
				for _, e := range list {
					w.row(e.Address, cmp.Or(string(e.Channel), "(all)"), cmp.Or(e.Category, "(all)"), e.Reason, dash(e.Source),
						e.CreatedAt.Format(time.RFC3339), dash(e.Detail))
				}
				return w.flush()
			})
		},
	}
	cmd.Flags().String("tenant", "", "the tenant (required)")
	cmd.Flags().Bool("json", false, "print JSON")
	_ = cmd.MarkFlagRequired("tenant")
	return cmd
}

// orDash is s, or a dash for a table's empty cell.
func suppressionsAddCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "add --tenant ID --address A [--channel C] [--reason manual] [--detail TEXT]",
		Short: "Suppress an address: the tenant's notifications are not sent to it",
		Example: `  herald suppressions add --tenant acme --address jane@example.com --detail 'asked by phone'
  herald suppressions add --tenant acme --address +34600111222 --channel sms`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			var e suppression.Entry
			e.Tenant, _ = f.GetString("tenant")
			e.Address, _ = f.GetString("address")
			channel, _ := f.GetString("channel")
			e.Channel = event.Channel(channel)
			e.Reason, _ = f.GetString("reason")
			e.Detail, _ = f.GetString("detail")
			e.Category, _ = f.GetString("category")
			e.Source = "cli"
			return withSuppressions(cmd, func(ctx context.Context, s *suppression.Store) error {
				e, err := s.Add(ctx, e)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "suppressed %s for tenant %s (%s)\n", e.Address, e.Tenant, e.Reason)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.String("tenant", "", "the tenant (required)")
	f.String("address", "", "the email address or phone number, E.164 (required)")
	f.String("channel", "", "email, sms or whatsapp: only that channel's notifications; default every channel")
	f.String("reason", suppression.Manual, "hard_bounce, complaint, manual or unsubscribed")
	f.String("detail", "", "why, for people")
	f.String("category", "", "only the notifications of this category (a route's, e.g. alerts); default all")
	_ = cmd.MarkFlagRequired("tenant")
	_ = cmd.MarkFlagRequired("address")
	return cmd
}

func suppressionsRemoveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove --tenant ID --address A [--channel C]",
		Short: "Lift an address's suppression: it is sent to again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tenant, _ := cmd.Flags().GetString("tenant")
			address, _ := cmd.Flags().GetString("address")
			channel, _ := cmd.Flags().GetString("channel")
			category, _ := cmd.Flags().GetString("category")
			return withSuppressions(cmd, func(ctx context.Context, s *suppression.Store) error {
				if err := s.Remove(ctx, tenant, event.Channel(channel), address, category); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed suppression of %s for tenant %s\n", suppression.Normalize(address), tenant)
				return nil
			})
		},
	}
	cmd.Flags().String("tenant", "", "the tenant (required)")
	cmd.Flags().String("address", "", "the address (required)")
	cmd.Flags().String("channel", "", "the channel it was limited to; default the one for every channel")
	cmd.Flags().String("category", "", "the category it was limited to (an unsubscribe); default the one for all")
	_ = cmd.MarkFlagRequired("tenant")
	_ = cmd.MarkFlagRequired("address")
	return cmd
}

func withSuppressions(cmd *cobra.Command, fn func(context.Context, *suppression.Store) error) error {
	return withNATS(cmd, func(ctx context.Context, _ app.Config, js jetstream.JetStream) error {
		s, err := suppression.Open(ctx, js)
		if err != nil {
			return err
		}
		return fn(ctx, s)
	})
}
