package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/deadletter"
)

func dlqCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List, show, redrive and purge dead letters",
		Long: `Dead letters are messages Herald gave up on, kept in the DLQ stream with
their reason (nats stream view DLQ shows them raw). These commands read them
with filters, send them back to their original subject, or delete them.`,
	}
	cmd.AddCommand(dlqListCommand(), dlqShowCommand(), dlqRedriveCommand(), dlqPurgeCommand())
	return cmd
}

func filterFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("stream", "", "only entries from this stream (ORDERS, DOCS, NOTIFY…)")
	f.String("consumer", "", "only entries from this consumer (router, pdf, email-normal…)")
	f.String("tenant", "", "only this tenant's entries")
	f.String("reason", "", "only entries whose reason contains this text (case-insensitive)")
	f.Duration("older-than", 0, "only entries at least this old, e.g. 1h")
	f.Duration("newer-than", 0, "only entries at most this old, e.g. 30m")
}

func readFilter(cmd *cobra.Command, args []string) (dlq.Filter, error) {
	var f dlq.Filter
	f.Stream, _ = cmd.Flags().GetString("stream")
	f.Consumer, _ = cmd.Flags().GetString("consumer")
	f.Tenant, _ = cmd.Flags().GetString("tenant")
	f.Reason, _ = cmd.Flags().GetString("reason")
	f.OlderThan, _ = cmd.Flags().GetDuration("older-than")
	f.NewerThan, _ = cmd.Flags().GetDuration("newer-than")
	if f.Consumer != "" && f.Stream == "" {
		return f, errors.New("--consumer needs --stream")
	}
	for _, a := range args {
		seq, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return f, fmt.Errorf("%q is not an entry sequence number", a)
		}
		f.Seqs = append(f.Seqs, seq)
	}
	return f, nil
}

// selected says whether the command names what it acts on.
func selected(cmd *cobra.Command, f dlq.Filter) bool {
	all, _ := cmd.Flags().GetBool("all")
	return all || len(f.Seqs) > 0 || f.Stream != "" || f.Tenant != "" || f.Reason != "" || f.OlderThan > 0 || f.NewerThan > 0
}

// withEntries connects and opens the DLQ for a command.
func withEntries(cmd *cobra.Command, fn func(ctx context.Context, x *dlq.Entries) error) error {
	return withNATS(cmd, func(ctx context.Context, _ app.Config, js jetstream.JetStream) error {
		x, err := dlq.OpenEntries(ctx, js)
		if err != nil {
			return err
		}
		return fn(ctx, x)
	})
}

func dlqListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [SEQ...]",
		Short: "List dead letters, oldest first",
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := readFilter(cmd, args)
			if err != nil {
				return err
			}
			limit, _ := cmd.Flags().GetInt("limit")
			asJSON, _ := cmd.Flags().GetBool("json")
			return withEntries(cmd, func(ctx context.Context, x *dlq.Entries) error {
				list, total, err := x.List(ctx, f, max(limit, 0))
				if err != nil {
					return err
				}
				if asJSON {
					if list == nil {
						list = []dlq.Entry{} // [], not null: a script iterates it
					}
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					return enc.Encode(list)
				}
				printEntries(cmd.OutOrStdout(), list, total)
				return nil
			})
		},
	}
	filterFlags(cmd)
	cmd.Flags().Int("limit", 100, "list at most this many (0: all)")
	cmd.Flags().Bool("json", false, "print JSON")
	return cmd
}

// printEntries prints a table of entries, then how many there are: "100 of
// 2,319 entries" when the list stops short of what the filter selects.
func printEntries(w io.Writer, list []dlq.Entry, total int) {
	tw := newTable(w, "SEQ", "AGE", "FROM", "SUBJECT", "TRIES", "TENANT", "REDRIVEN", "REASON")
	for _, e := range list {
		redriven := "-"
		if e.Redriven != nil {
			redriven = fmt.Sprintf("%d× %s ago", e.Redriven.Count, time.Since(e.Redriven.Time).Round(time.Second))
		}
		tw.row(e.Seq, time.Since(e.Time).Round(time.Second), e.Stream+" > "+e.Consumer, e.Subject, e.Deliveries,
			dash(e.Tenant), redriven, shorten(e.Reason, 80))
	}
	_ = tw.flush()
	if total > len(list) {
		fmt.Fprintf(w, "%s of %s entries (--limit 0 lists all)\n", thousands(len(list)), thousands(total))
		return
	}
	fmt.Fprintf(w, "%s entries\n", thousands(total))
}

// thousands writes a count as people read it: 2,319.
func thousands(n int) string { return english.Sprintf("%d", n) }

// count is n things, "1 tenant", "2,319 tenants".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return thousands(n) + " " + thing + "s"
}

var english = message.NewPrinter(language.English)

func dlqShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show SEQ",
		Short: "Show one dead letter: where it came from, why, and its payload",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil {
				return fmt.Errorf("%q is not an entry sequence number", args[0])
			}
			return withEntries(cmd, func(ctx context.Context, x *dlq.Entries) error {
				e, err := x.Get(ctx, seq)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				keys := make([]string, 0, len(e.Header))
				for k := range e.Header {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					fmt.Fprintf(out, "%s: %s\n", k, strings.Join(e.Header[k], ", "))
				}
				if e.Redriven != nil {
					fmt.Fprintf(out, "(redriven %d× — last at %s as %s)\n", e.Redriven.Count, e.Redriven.Time.Format(time.RFC3339), e.Redriven.MsgID)
				}
				data, err := x.Payload(ctx, e)
				if err != nil {
					return err
				}
				if e.PayloadObject != "" {
					fmt.Fprintf(out, "(payload of %s bytes, too large for the entry: read from object store %s as %s)\n",
						thousands(len(data)), deadletter.PayloadBucket, e.PayloadObject)
				}
				fmt.Fprintln(out)
				var pretty any
				if json.Unmarshal(data, &pretty) == nil {
					enc := json.NewEncoder(out)
					enc.SetIndent("", "  ")
					return enc.Encode(pretty)
				}
				fmt.Fprintf(out, "%q\n", data)
				return nil
			})
		},
	}
}

func dlqRedriveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "redrive [SEQ...]",
		Short: "Send dead letters back to their original subject",
		Long: `Republish the selected entries to their original subjects, with their
original headers and a fresh Nats-Msg-Id, and mark them redriven. A
notification that was delivered meanwhile is not sent again: the delivery
ledger stops it. Select entries by sequence, by filters, or --all.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return actOnEntries(cmd, args, "redriving", func(ctx context.Context, x *dlq.Entries, e dlq.Entry) error {
				_, err := x.Redrive(ctx, e)
				return err
			})
		},
	}
	filterFlags(cmd)
	cmd.Flags().Bool("all", false, "redrive every entry")
	return cmd
}

func dlqPurgeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "purge [SEQ...]",
		Short: "Delete dead letters for good",
		RunE: func(cmd *cobra.Command, args []string) error {
			if yes, _ := cmd.Flags().GetBool("yes"); !yes {
				return errors.New("purging deletes entries for good: add --yes")
			}
			return actOnEntries(cmd, args, "purging", func(ctx context.Context, x *dlq.Entries, e dlq.Entry) error {
				return x.Delete(ctx, e)
			})
		},
	}
	filterFlags(cmd)
	cmd.Flags().Bool("all", false, "purge every entry")
	cmd.Flags().Bool("yes", false, "confirm")
	return cmd
}

// actOnEntries selects entries, then applies act to each with a progress
// bar, and reports what it did.
func actOnEntries(cmd *cobra.Command, args []string, verb string, act func(context.Context, *dlq.Entries, dlq.Entry) error) error {
	f, err := readFilter(cmd, args)
	if err != nil {
		return err
	}
	if !selected(cmd, f) {
		return errors.New("say which entries: sequence numbers, filters (--stream, --tenant, --reason, --older-than…) or --all")
	}
	return withEntries(cmd, func(ctx context.Context, x *dlq.Entries) error {
		var list []dlq.Entry
		if err := x.Each(ctx, f, func(e dlq.Entry) error { list = append(list, e); return nil }); err != nil {
			return err
		}
		bar := progressbar.NewOptions(len(list), progressbar.OptionSetDescription(verb),
			progressbar.OptionSetWriter(cmd.ErrOrStderr()), progressbar.OptionShowCount(),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		done := 0
		var errs []error
		for _, e := range list {
			if err := act(ctx, x, e); err != nil {
				errs = append(errs, err)
			} else {
				done++
			}
			_ = bar.Add(1)
		}
		_ = bar.Finish()
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %d of %d entries done\n", verb, done, len(list))
		return errors.Join(errs...)
	})
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shorten(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
