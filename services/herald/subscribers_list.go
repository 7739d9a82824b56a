package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/recipient"
)

// subscribersListCommand reads the subscriber index as the history service
// and the api do, from history.url (HISTORY_URL): the listing and the
// searches live there, not in NATS, and the command line needs no API key
// to read them — whoever has the configuration reaches the database anyway.
func subscribersListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list --tenant ID [--email E] [--phone P] [--limit N] [--json]",
		Short: "List a tenant's subscribers by id, or those with an email address or a phone number",
		Example: `  herald subscribers list --tenant acme
  herald subscribers list --tenant acme --email Olga@Zarya.example --json
  herald subscribers list --tenant acme --phone +34600111222`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			tenant, _ := f.GetString("tenant")
			email, _ := f.GetString("email")
			phone, _ := f.GetString("phone")
			limit, _ := f.GetInt("limit")
			if limit < 1 {
				return fmt.Errorf("--limit: %d is not a positive number", limit)
			}
			q := history.SubscriberQuery{Tenant: tenant, Email: email, Phone: phone}
			return withIndex(cmd, func(ctx context.Context, index *history.Store) error {
				list, more, err := listSubscribers(ctx, index, q, limit)
				if err != nil {
					return err
				}
				if more {
					defer fmt.Fprintf(cmd.ErrOrStderr(), "(the first %d; --limit shows more)\n", limit)
				}
				return printSubscribers(cmd, list)
			})
		},
	}
	f := cmd.Flags()
	f.String("tenant", "", "the tenant (required)")
	f.String("email", "", "only those with this email address, in any case")
	f.String("phone", "", "only those with this E.164 number as their SMS or WhatsApp number")
	f.Int("limit", 100, "the most to list")
	f.Bool("json", false, "print JSON")
	_ = cmd.MarkFlagRequired("tenant")
	return cmd
}

// withIndex opens the index the configuration names and runs fn on it.
func withIndex(cmd *cobra.Command, fn func(context.Context, *history.Store) error) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	if cfg.History.URL == "" {
		return errors.New("the subscriber index is not configured: set history.url or HISTORY_URL (postgres://… or sqlite:PATH), as for the history service")
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
	defer cancel()
	index, err := history.Open(ctx, cfg.History.URL)
	if err != nil {
		return err
	}
	return errors.Join(fn(ctx, index), index.Close())
}

// listSubscribers reads up to limit subscribers, a page at a time, and
// whether there are more.
func listSubscribers(ctx context.Context, index *history.Store, q history.SubscriberQuery, limit int) ([]history.Subscriber, bool, error) {
	var list []history.Subscriber
	for {
		q.Limit = min(limit-len(list), history.MaxLimit)
		page, err := index.Subscribers(ctx, q)
		if err != nil {
			return nil, false, err
		}
		list = append(list, page.Subscribers...)
		if page.Next == "" || len(list) == limit {
			return list, page.Next != "", nil
		}
		q.Cursor = page.Next
	}
}

// printSubscribers prints list as a table or, with --json, as the records
// the API shows (without their data, which the index does not keep).
func printSubscribers(cmd *cobra.Command, list []history.Subscriber) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		out := make([]recipient.Subscriber, len(list)) // none is an empty list, not null
		for i, s := range list {
			out[i] = recipient.Subscriber{Tenant: s.Tenant, ID: s.ID, Name: s.Name, Email: s.Email, Phone: s.Phone,
				WhatsApp: s.WhatsApp, Locale: s.Locale, Timezone: s.Timezone, UpdatedAt: s.UpdatedAt}
		}
		return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
	}
	w := newTable(cmd.OutOrStdout(), "ID", "NAME", "EMAIL", "PHONE", "WHATSAPP", "LOCALE", "TIMEZONE", "UPDATED")
	for _, s := range list {
		w.row(s.ID, dash(s.Name), dash(s.Email), dash(s.Phone), dash(s.WhatsApp), dash(s.Locale), dash(s.Timezone),
			s.UpdatedAt.Format(time.RFC3339))
	}
	return w.flush()
}
