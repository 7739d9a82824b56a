package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/recipient"
)

func preferencesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "preferences",
		Short: "Show and set subscribers' preferences, and tenants' defaults",
		Long: `Preferences are category × channel: alerts.sms=false keeps alerts off SMS. A
subscriber's choices lie over the tenant's defaults; a channel nobody chose is
on. Categories a route marks required (documents) cannot be switched off.
--subscriber names whose; without it, the tenant's defaults.`,
	}
	cmd.AddCommand(preferencesGetCommand(), preferencesSetCommand())
	return cmd
}

func subscriberFlag(cmd *cobra.Command) {
	cmd.Flags().String("subscriber", "", "the subscriber's id; none: the tenant's defaults")
}

func preferencesGetCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use: "get --tenant T [--subscriber ID] [--json]", short: "Show a subscriber's choices and the tenant's defaults",
		flags: func(cmd *cobra.Command) {
			subscriberFlag(cmd)
			cmd.Flags().Bool("json", false, "print JSON")
		},
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, _ string) error {
			subscriber, _ := cmd.Flags().GetString("subscriber")
			if subscriber != "" {
				if _, _, err := d.Subscribers.Get(ctx, recipient.SubscriberKey(tenant, subscriber)); err != nil {
					return fmt.Errorf("tenant %s, subscriber %q: %w", tenant, subscriber, err)
				}
			}
			own, defaults, err := d.Choices(ctx, tenant, subscriber)
			if err != nil {
				return err
			}
			if subscriber == "" {
				own = nil
			}
			return printPreferences(cmd, own, defaults, d.required)
		},
	})
}

func printPreferences(cmd *cobra.Command, own, defaults recipient.Choices, required []string) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(struct {
			Categories recipient.Choices `json:"categories,omitempty"`
			Defaults   recipient.Choices `json:"defaults"`
			Required   []string          `json:"required"`
		}{own, orNone(defaults), append([]string{}, required...)})
	}
	out := cmd.OutOrStdout()
	if subscriber, _ := cmd.Flags().GetString("subscriber"); subscriber != "" {
		fmt.Fprintf(out, "chosen:   %s\n", dash(own.String()))
	}
	fmt.Fprintf(out, "defaults: %s\nrequired: %s\n", dash(defaults.String()), dash(strings.Join(required, ", ")))
	return nil
}

func orNone(c recipient.Choices) recipient.Choices {
	if c == nil {
		return recipient.Choices{}
	}
	return c
}

func preferencesSetCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use:   "set CATEGORY.CHANNEL=true|false… --tenant T [--subscriber ID] [--replace]",
		short: "Set choices: laid over those kept, or replacing them with --replace",
		example: `  herald preferences set alerts.sms=false --tenant acme --subscriber u-olga
  herald preferences set digest.email=false --tenant acme`,
		args: cobra.MinimumNArgs(1),
		flags: func(cmd *cobra.Command) {
			subscriberFlag(cmd)
			cmd.Flags().Bool("replace", false, "replace every choice kept by those given")
		},
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, _ string) error {
			c, err := choicesOf(cmd.Flags().Args())
			if err != nil {
				return err
			}
			subscriber, _ := cmd.Flags().GetString("subscriber")
			replace, _ := cmd.Flags().GetBool("replace")
			p, err := d.SetPreferences(ctx, tenant, subscriber, c, d.required, !replace)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "preferences of %s, tenant %s: %s\n", whose(subscriber), tenant, dash(p.Categories.String()))
			return nil
		},
	})
}

func whose(subscriber string) string {
	if subscriber == "" {
		return "every subscriber (the defaults)"
	}
	return strconv.Quote(subscriber)
}

// choicesOf reads "alerts.sms=false" arguments.
func choicesOf(args []string) (recipient.Choices, error) {
	c := recipient.Choices{}
	for _, arg := range args {
		key, value, ok := strings.Cut(arg, "=")
		category, channel, dotted := strings.Cut(key, ".")
		on, err := strconv.ParseBool(value)
		if !ok || !dotted || err != nil {
			return nil, fmt.Errorf("%q: want CATEGORY.CHANNEL=true or =false, as alerts.sms=false", arg)
		}
		if c[category] == nil {
			c[category] = map[event.Channel]bool{}
		}
		c[category][event.Channel(channel)] = on
	}
	return c, nil
}
