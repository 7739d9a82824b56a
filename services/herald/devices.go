package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/shared/recipient"
)

// subscribersDevicesCommand holds the commands on a subscriber's push
// devices. It writes the bucket directly, as an operator's tool: the
// API's refusal of a Web Push endpoint in a private network is not made
// here (the push channel's dialer still refuses to connect to one).
func subscribersDevicesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "devices",
		Short: "List, set and remove a subscriber's push devices",
		Long: `A push device is an FCM registration token, an APNs device token (hex) or a
browser's Web Push subscription, under the publisher's own id for it; a
subscriber has at most 20. Listings show a token's last 8 characters and an
endpoint's origin only: either whole can push to the device.`,
	}
	cmd.AddCommand(devicesListCommand(), devicesSetCommand(), devicesRemoveCommand())
	return cmd
}

func devicesListCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use: "list SUBSCRIBER --tenant T [--json]", short: "List a subscriber's push devices, masked",
		args:  cobra.ExactArgs(1),
		flags: func(cmd *cobra.Command) { cmd.Flags().Bool("json", false, "print JSON (masked as the table is)") },
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, subscriber string) error {
			if _, _, err := d.Subscribers.Get(ctx, recipient.SubscriberKey(tenant, subscriber)); err != nil {
				return fmt.Errorf("tenant %s, subscriber %q: %w", tenant, subscriber, err)
			}
			list, err := d.Devices(ctx, tenant, subscriber)
			if err != nil {
				return fmt.Errorf("tenant %s, subscriber %q: %w", tenant, subscriber, err)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(maskedDevices(list))
			}
			w := newTable(cmd.OutOrStdout(), "ID", "KIND", "ADDRESS", "LOCALE", "UPDATED")
			for _, dev := range list {
				w.row(dev.ID, string(dev.Kind), dev.Masked(), dash(dev.Locale), dev.UpdatedAt.Format(time.RFC3339))
			}
			return w.flush()
		},
	})
}

// maskedDevice is a device as the CLI prints it in JSON.
type maskedDevice struct {
	ID        string               `json:"id"`
	Kind      recipient.DeviceKind `json:"kind"`
	Address   string               `json:"address"`
	Locale    string               `json:"locale,omitempty"`
	UpdatedAt time.Time            `json:"updated_at"`
}

func maskedDevices(list []recipient.Device) []maskedDevice {
	out := make([]maskedDevice, len(list))
	for i, d := range list {
		out[i] = maskedDevice{ID: d.ID, Kind: d.Kind, Address: d.Masked(), Locale: d.Locale, UpdatedAt: d.UpdatedAt}
	}
	return out
}

func devicesSetCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use:   "set SUBSCRIBER DEVICE --tenant T --kind fcm|apns|webpush (--token X | --subscription JSON) [--locale L]",
		short: "Add or replace a subscriber's push device",
		example: `  herald subscribers devices set u-olga iphone --tenant acme --kind apns --token 740f47…
  herald subscribers devices set u-olga firefox --tenant acme --kind webpush --subscription "$(cat sub.json)"`,
		args: cobra.ExactArgs(2),
		flags: func(cmd *cobra.Command) {
			cmd.Flags().String("kind", "", "fcm, apns or webpush")
			cmd.Flags().String("token", "", "the FCM registration token or APNs device token")
			cmd.Flags().String("subscription", "", "the browser's PushSubscription JSON (webpush)")
			cmd.Flags().String("locale", "", "the device's language, before the subscriber's")
		},
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, subscriber string) error {
			dev, err := deviceOfFlags(cmd, tenant, subscriber, cmd.Flags().Arg(1))
			if err != nil {
				return err
			}
			_, created, err := d.PutDevice(ctx, dev)
			if err != nil {
				return fmt.Errorf("tenant %s, subscriber %q: %w", tenant, subscriber, err)
			}
			verb := "replaced"
			if created {
				verb = "added"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s device %q (%s %s) of subscriber %q, tenant %s\n", verb, dev.ID, dev.Kind, dev.Masked(), subscriber, tenant)
			return nil
		},
	})
}

func deviceOfFlags(cmd *cobra.Command, tenant, subscriber, id string) (recipient.Device, error) {
	kind, _ := cmd.Flags().GetString("kind")
	token, _ := cmd.Flags().GetString("token")
	sub, _ := cmd.Flags().GetString("subscription")
	locale, _ := cmd.Flags().GetString("locale")
	dev := recipient.Device{Tenant: tenant, Subscriber: subscriber, ID: id, Kind: recipient.DeviceKind(kind), Token: token, Locale: locale}
	if sub != "" {
		dev.Subscription = &recipient.WebPushSubscription{}
		if err := json.Unmarshal([]byte(sub), dev.Subscription); err != nil {
			return dev, fmt.Errorf("--subscription: not a PushSubscription's JSON: %w", err)
		}
	}
	return dev, nil
}

func devicesRemoveCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use: "remove SUBSCRIBER DEVICE --tenant T", short: "Remove a subscriber's push device",
		args: cobra.ExactArgs(2),
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, subscriber string) error {
			id := cmd.Flags().Arg(1)
			if err := d.RemoveDevice(ctx, tenant, subscriber, id); err != nil {
				return fmt.Errorf("tenant %s, subscriber %q, device %q: %w", tenant, subscriber, id, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed device %q of subscriber %q, tenant %s\n", id, subscriber, tenant)
			return nil
		},
	})
}
