package main

import "github.com/spf13/cobra"

// subscribersCommand holds the commands on a tenant's subscribers.
func subscribersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "subscribers",
		Short: "Set, show and import tenants' subscribers",
		Long: `A subscriber is one of a tenant's people, under the publisher's own id (any
printable text up to 128 bytes): email, phone, WhatsApp number, locale, IANA
time zone and free data. Events name them instead of carrying their contacts.`,
	}
	cmd.AddCommand(subscribersEditCommands()...)
	return cmd
}
