// Command herald is Herald's one binary: it runs any set of Herald's
// services (`herald run router delivery`), the whole pipeline on embedded
// servers for development (`herald dev`), and the operator tools
// (`herald streams`, `herald publish`).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := rootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "herald:", err)
		os.Exit(1)
	}
}

func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "herald",
		Short:         "Event-driven notifications for supply-chain software, on NATS JetStream",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().String("config", "", "YAML configuration file (env HERALD_CONFIG)")
	root.AddCommand(devCommand(), runCommand(), streamsCommand(), publishCommand(), dlqCommand(), benchCommand(),
		tenantsCommand(), keysCommand(), vaultCommand(), providersCommand(), webhooksCommand(), suppressionsCommand(), domainsCommand(),
		outboxCommand(), subscribersCommand(), accountsCommand(), topicsCommand(), preferencesCommand(), runsCommand(), workflowsCommand())
	return root
}
