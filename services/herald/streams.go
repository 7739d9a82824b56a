package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/redact"
	"github.com/heraldhq/herald/streams"
)

func streamsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "streams",
		Short: "Apply or print the JetStream streams and consumers Herald declares",
	}
	cmd.AddCommand(streamsApplyCommand(), streamsCheckCommand(), streamsPrintCommand())
	return cmd
}

func streamsApplyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Create missing streams and consumers on NATS_URL, update those that differ",
		Long: `Make the server match the declarations under streams/: create what is
missing, update what differs, and report every change. A change the server
refuses (the retention of an existing stream, say) is reported with the fields
that differ, and the command exits non-zero. With --dry-run it changes nothing:
it reports what is missing, what differs (field: server → declared) and what
it would remove, and exits non-zero when anything has drifted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dry, _ := cmd.Flags().GetBool("dry-run")
			return runStreamsApply(cmd, dry)
		},
	}
	cmd.Flags().Int("replicas", 0, "override num_replicas of every stream (3 on a cluster)")
	cmd.Flags().Bool("dry-run", false, "change nothing: report what is missing, differs or would be removed")
	return cmd
}

func streamsCheckCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Report how the server differs from the declarations, changing nothing (apply --dry-run)",
		Long: `Report what herald streams apply would do, changing nothing: what is missing,
what differs (field: server → declared) and what it would remove — such as the
first-come consumers of a deployment switching to scheduling.fair, or the
tenants' consumers of one switching back. Exits non-zero when anything has
drifted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runStreamsApply(cmd, true) },
	}
	cmd.Flags().Int("replicas", 0, "override num_replicas of every stream (3 on a cluster)")
	return cmd
}

// runStreamsApply applies the declarations to NATS_URL, or with dry only
// reports what applying would change; it prints every result.
func runStreamsApply(cmd *cobra.Command, dry bool) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	// The retentions it applies are checked first: a mistyped
	// ledger.retention would otherwise expire the ledger at once.
	if err := cfg.Validate(); err != nil {
		return err
	}
	opts := cfg.StreamOptions()
	if cmd.Flags().Changed("replicas") {
		opts.Replicas, _ = cmd.Flags().GetInt("replicas")
	}
	js, closeNATS, err := connectJetStream(cfg.NATS.URL)
	if err != nil {
		return err
	}
	defer closeNATS()
	// RUNS allows message schedules: an older server cannot hold it.
	if err := streams.CheckServerVersion(js.Conn().ConnectedServerVersion()); err != nil {
		return fmt.Errorf("nats at %s: %w", js.Conn().ConnectedUrlRedacted(), err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
	defer cancel()
	apply := streams.Apply
	if dry {
		apply = streams.Check
	}
	report, err := apply(ctx, js, opts)
	for _, r := range report {
		fmt.Fprintln(cmd.OutOrStdout(), r)
	}
	if err != nil {
		return err
	}
	if drifted := report.Drifted(); drifted > 0 {
		return fmt.Errorf("%d declaration(s) drifted from the server (see above); herald streams apply makes them match", drifted)
	}
	if refused := report.Refused(); refused > 0 {
		return fmt.Errorf("%d declaration(s) refused by the server (see above)", refused)
	}
	return nil
}

func streamsPrintCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "print [STREAM [CONSUMER]]",
		Short: "Print the declarations, as the nats CLI accepts them",
		Long: `Without arguments, list every declaration file with its content.
With a stream name, print that stream's JSON; with a consumer name too, that
consumer's. The output is what the stock CLI takes:

  herald streams print ORDERS > orders.json && nats stream add --config orders.json
  herald streams print ORDERS router > router.json && nats consumer add ORDERS --config router.json`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if len(args) == 0 {
				all, err := streams.Load()
				if err != nil {
					return err
				}
				for _, s := range all {
					fmt.Fprintf(out, "# streams/%s\n%s\n", s.File, s.Raw)
					for _, c := range s.Consumers {
						fmt.Fprintf(out, "# streams/%s   (nats consumer add %s --config FILE)\n%s\n", c.File, c.Stream, c.Raw)
					}
				}
				return nil
			}
			s, err := streams.Find(args[0])
			if err != nil {
				return err
			}
			if len(args) == 1 {
				_, err = out.Write(s.Raw)
				return err
			}
			c, err := s.Consumer(args[1])
			if err != nil {
				return err
			}
			_, err = out.Write(c.Raw)
			return err
		},
	}
}

// withNATS runs fn on a JetStream connection to the NATS the command's
// configuration names (NATS_URL, nats.url), closed when fn returns.
func withNATS(cmd *cobra.Command, fn func(ctx context.Context, cfg app.Config, js jetstream.JetStream) error) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	js, closeNATS, err := connectJetStream(cfg.NATS.URL)
	if err != nil {
		return err
	}
	defer closeNATS()
	return fn(cmd.Context(), cfg, js)
}

// connectJetStream connects for a command-line tool: fail fast, with the
// address in the error.
func connectJetStream(url string) (jetstream.JetStream, func(), error) {
	nc, err := nats.Connect(url, nats.Name("herald cli"), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to NATS at %s: %w (set NATS_URL, or start `herald dev`)", redact.URL(url), redact.Error(err, url))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return js, func() {
		if err := nc.Drain(); err != nil {
			fmt.Fprintln(os.Stderr, "herald: closing NATS:", err)
		}
	}, nil
}
