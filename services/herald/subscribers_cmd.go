package main

import "github.com/spf13/cobra"

// subscribersCommand holds the commands on a tenant's subscribers.
func subscribersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "subscribers",
		Short: "List, search, delete and erase tenants' subscribers",
		Long: `A tenant's subscribers are its people under the publisher's own ids, with
their addresses, language and time zone. Their records are kept in NATS; the
listing is read from the subscriber index (history.url), which the history
service keeps up to date.`,
	}
	cmd.AddCommand(subscribersListCommand())
	cmd.AddCommand(subscribersErasureCommands()...)
	return cmd
}
