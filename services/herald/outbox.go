package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/shared/redact"
)

func outboxCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "outbox",
		Short: "Create and inspect a service's transactional outbox",
		Long: `A service writes its events to the herald_outbox table in the same
transaction as its business change; the outbox-relay service
(herald run outbox-relay --postgres URL) publishes them. The database is
--postgres URL, --sqlite PATH, OUTBOX_URL or outbox.url in the config.`,
	}
	cmd.AddCommand(outboxInitCommand(), outboxStatusCommand())
	return cmd
}

func outboxInitCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init (--postgres URL | --sqlite PATH)",
		Short: "Create the herald_outbox table (running it again changes nothing)",
		Long: "Create the herald_outbox table, its indexes and, on PostgreSQL, the trigger\n" +
			"that wakes relays. The DDL is in docs/publishing.md (\"Through a transactional outbox\").",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withOutbox(cmd, func(ctx context.Context, db *outbox.DB, where string) error {
				if err := db.Init(ctx); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "herald_outbox is ready in %s\n", where)
				return nil
			})
		},
	}
	outboxFlags(cmd)
	return cmd
}

func outboxStatusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status (--postgres URL | --sqlite PATH) [--json] [--watch]",
		Short: "Show the outbox's backlog, its oldest row's age and its failures",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, _ := cmd.Flags().GetBool("json")
			watch, _ := cmd.Flags().GetDuration("watch")
			return withOutbox(cmd, func(ctx context.Context, db *outbox.DB, _ string) error {
				for {
					st, err := db.Status(ctx)
					if err != nil {
						return err
					}
					if err := printOutboxStatus(cmd, st, asJSON); err != nil {
						return err
					}
					if watch <= 0 {
						return nil
					}
					select {
					case <-ctx.Done():
						return nil
					case <-time.After(watch):
					}
				}
			})
		},
	}
	outboxFlags(cmd)
	cmd.Flags().Bool("json", false, "print JSON")
	cmd.Flags().Duration("watch", 0, "print again at this interval until interrupted, e.g. 2s")
	return cmd
}

func printOutboxStatus(cmd *cobra.Command, st outbox.Status, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(struct {
			outbox.Status
			AgeSeconds float64 `json:"oldest_age_seconds"`
		}{st, st.Age(time.Now()).Seconds()})
	}
	w := newTable(cmd.OutOrStdout(), "BACKLOG", "OLDEST AGE", "RETRYING", "FAILED", "PUBLISHED (KEPT)", "LAST ERROR")
	w.row(st.Backlog, st.Age(time.Now()).Round(time.Millisecond), st.Retrying, st.Failed, st.Published, dash(st.LastError))
	return w.flush()
}

func outboxFlags(cmd *cobra.Command) {
	cmd.Flags().String("postgres", "", "the service's PostgreSQL database, postgres://user:password@host/db")
	cmd.Flags().String("sqlite", "", "the service's SQLite file")
}

// withOutbox opens the database the flags, OUTBOX_URL or the config name.
func withOutbox(cmd *cobra.Command, fn func(context.Context, *outbox.DB, string) error) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	url := cfg.Outbox.URL
	if path, _ := cmd.Flags().GetString("sqlite"); path != "" {
		if cmd.Flags().Changed("postgres") {
			return errors.New("outbox: --postgres and --sqlite name two databases: give one")
		}
		url = "sqlite:" + path
	}
	if url == "" {
		return errors.New("outbox: which database? --postgres URL, --sqlite PATH, OUTBOX_URL or outbox.url")
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	db, err := outbox.Open(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(ctx, db, redact.URL(url))
}
