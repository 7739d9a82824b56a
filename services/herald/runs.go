package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/vault"
)

// runCommands open the workflow runs.
var runCommands = resourceCommands[*workflow.Runs]{
	open: func(ctx context.Context, _ app.Config, js jetstream.JetStream, _ *vault.Keyring) (*workflow.Runs, error) {
		return workflow.OpenRuns(ctx, js)
	},
}

func runsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show and cancel workflow runs",
		Long: `A run is one recipient's way through the steps of a route that has them
(docs/workflows.md): what it sent, where it waits and until when, what ended it.`,
	}
	cmd.AddCommand(runsListCommand(), runsShowCommand(), runsCancelCommand())
	return cmd
}

func runsListCommand() *cobra.Command {
	return runCommands.command(resourceCommand[*workflow.Runs]{
		use: "list --tenant T [--order ID] [--subscriber ID] [--state S] [--json]", short: "List a tenant's runs, an order's together",
		flags: func(cmd *cobra.Command) {
			cmd.Flags().String("order", "", "only the runs about this order")
			cmd.Flags().String("subscriber", "", "only the runs for this subscriber")
			cmd.Flags().String("state", "", "only the runs in this state: running, waiting, done, cancelled, failed or skipped")
			cmd.Flags().Bool("json", false, "print JSON")
		},
		run: func(cmd *cobra.Command, ctx context.Context, runs *workflow.Runs, tenant, _ string) error {
			f := workflow.Filter{Limit: 100}
			f.Subject, _ = cmd.Flags().GetString("order")
			f.Subscriber, _ = cmd.Flags().GetString("subscriber")
			state, _ := cmd.Flags().GetString("state")
			f.State = workflow.State(state)
			var all []workflow.Run
			for {
				page, err := runs.List(ctx, tenant, f)
				if err != nil {
					return err
				}
				all = append(all, page.Runs...)
				if page.Next == "" {
					break
				}
				f.Cursor = page.Next
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				if all == nil {
					all = []workflow.Run{}
				}
				return json.NewEncoder(cmd.OutOrStdout()).Encode(all)
			}
			w := newTable(cmd.OutOrStdout(), "RUN", "ORDER", "RECIPIENT", "STEP", "STATE", "UNTIL")
			for _, r := range all {
				w.row(r.ID, r.Subject, r.For(), fmt.Sprint(r.Step+1), string(r.State), until(r))
			}
			return w.flush()
		},
	})
}

func runsShowCommand() *cobra.Command {
	return runCommands.command(resourceCommand[*workflow.Runs]{
		use: "show RUN --tenant T [--json]", short: "Show a run and its timeline",
		args:  cobra.ExactArgs(1),
		flags: func(cmd *cobra.Command) { cmd.Flags().Bool("json", false, "print JSON") },
		run: func(cmd *cobra.Command, ctx context.Context, runs *workflow.Runs, tenant, id string) error {
			r, err := runs.Get(ctx, tenant, id)
			if err != nil {
				return fmt.Errorf("tenant %s, run %s: %w", tenant, id, err)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
			}
			out := cmd.OutOrStdout()
			// Steps are numbered from 1, as the console numbers them.
			fmt.Fprintf(out, "%s: %s, step %d of %d, for %s, about %s\n", r.ID, r.State, r.Step+1, len(r.Route.Steps), r.For(), r.Subject)
			for i, step := range r.Route.Steps {
				mark := " "
				if i == r.Step && !r.State.Ended() {
					mark = ">"
				}
				fmt.Fprintf(out, "%s %d. %s\n", mark, i+1, step.Describe())
			}
			w := newTable(out, "AT", "STEP", "WHAT", "DETAIL")
			for _, e := range r.Timeline {
				w.row(e.At.Format(time.RFC3339), fmt.Sprint(e.Step+1), e.What, dash(e.Detail))
			}
			return w.flush()
		},
	})
}

func runsCancelCommand() *cobra.Command {
	return runCommands.command(resourceCommand[*workflow.Runs]{
		use: "cancel RUN --tenant T", short: "Cancel a run: nothing more is sent",
		args: cobra.ExactArgs(1),
		run: func(cmd *cobra.Command, ctx context.Context, runs *workflow.Runs, tenant, id string) error {
			r, err := runs.Cancel(ctx, tenant, id, cliActor())
			if err != nil {
				return fmt.Errorf("tenant %s, run %s: %w", tenant, id, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cancelled run %s of tenant %s at step %d\n", r.ID, tenant, r.Step+1)
			return nil
		},
	})
}

func until(r workflow.Run) string {
	if r.Until.IsZero() {
		return "-"
	}
	return r.Until.Format(time.RFC3339)
}
