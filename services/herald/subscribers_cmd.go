package main

import "github.com/spf13/cobra"

// subscribersCommand holds the commands on a tenant's subscribers.
func subscribersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "subscribers",
		Short: "Manage tenants' subscribers: delete or erase one",
	}
	cmd.AddCommand(subscribersErasureCommands()...)
	return cmd
}
