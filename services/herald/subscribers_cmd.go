package main

import "github.com/spf13/cobra"

// subscribersCommand holds the commands on a tenant's subscribers.
func subscribersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "subscribers",
		Short: "Set, show, import, list, delete and erase tenants' subscribers",
		Long: `A subscriber is one of a tenant's people, under the publisher's own id (any
printable text up to 128 bytes): email, phone, WhatsApp number, locale, IANA
time zone and free data. Events name them instead of carrying their contacts.
Their records are kept in NATS; the listing is read from the subscriber index
(history.url), which the history service keeps up to date.`,
	}
	cmd.AddCommand(subscribersEditCommands()...)
	cmd.AddCommand(subscribersListCommand(), subscribersDevicesCommand())
	cmd.AddCommand(subscribersErasureCommands()...)
	return cmd
}
