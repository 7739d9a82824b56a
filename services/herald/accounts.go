package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/shared/recipient"
)

func accountsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "accounts",
		Short: "Set, show, list and remove tenants' accounts",
		Long: `An account is a company — a supplier, a customer, a warehouse — whose members
are the tenant's subscribers in roles (sales, accounts_payable…). An event
naming the account reaches its members in the roles the route or the event
names.`,
	}
	cmd.AddCommand(accountsSetCommand(), accountsGetCommand(), accountsListCommand(), accountsDeleteCommand())
	return cmd
}

func accountsSetCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use:   "set ID --tenant T [--name N] [--member SUBSCRIBER[:ROLE,ROLE…]]…",
		short: "Create or replace an account and its members",
		long: `Stores the account under ID with the members given, replacing the ones it had.
Each member is one of the tenant's subscribers; its roles follow the last ':'
(an id that holds a ':' is given with one more at its end: a:b:).`,
		example: `  herald accounts set zarya --tenant acme --name 'Zarya LLC' --member u-olga:sales,accounts_payable --member u-ivan:warehouse`,
		args:    cobra.ExactArgs(1),
		flags: func(cmd *cobra.Command) {
			cmd.Flags().String("name", "", "the company's name")
			cmd.Flags().StringArray("member", nil, "a member: the subscriber's id, then ':' and its roles, comma-separated (repeat for each)")
		},
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, id string) error {
			a := recipient.Account{Tenant: tenant, ID: id, Members: []recipient.Member{}, UpdatedAt: time.Now().UTC()}
			a.Name, _ = cmd.Flags().GetString("name")
			specs, _ := cmd.Flags().GetStringArray("member")
			for _, spec := range specs {
				a.Members = append(a.Members, memberOf(spec))
			}
			if _, err := d.PutAccount(ctx, a); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stored account %q for tenant %s with %d members\n", id, tenant, len(a.Members))
			return nil
		},
	})
}

// memberOf reads "u-olga:sales,accounts_payable": the roles after the
// last ':', when there is one.
func memberOf(spec string) recipient.Member {
	i := strings.LastIndex(spec, ":")
	if i < 0 {
		return recipient.Member{Subscriber: spec}
	}
	m := recipient.Member{Subscriber: spec[:i]}
	if roles := spec[i+1:]; roles != "" {
		m.Roles = strings.Split(roles, ",")
	}
	return m
}

func accountsGetCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use: "get ID --tenant T [--json]", short: "Show an account and its members",
		args:  cobra.ExactArgs(1),
		flags: func(cmd *cobra.Command) { cmd.Flags().Bool("json", false, "print JSON") },
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, id string) error {
			a, _, err := d.Accounts.Get(ctx, recipient.AccountKey(tenant, id))
			if err != nil {
				return fmt.Errorf("tenant %s, account %q: %w", tenant, id, err)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(a)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s (%s), updated %s\n", a.ID, dash(a.Name), a.UpdatedAt.Format(time.RFC3339))
			w := newTable(cmd.OutOrStdout(), "SUBSCRIBER", "ROLES")
			for _, m := range a.Members {
				w.row(m.Subscriber, dash(strings.Join(m.Roles, ",")))
			}
			return w.flush()
		},
	})
}

func accountsListCommand() *cobra.Command {
	return listCommand(recipientCommands, "List a tenant's accounts, by id",
		func(d recipients, ctx context.Context, tenant string) ([]recipient.Account, error) {
			all, err := d.Accounts.All(ctx, tenant)
			slices.SortFunc(all, func(a, b recipient.Account) int { return strings.Compare(a.ID, b.ID) })
			return all, err
		},
		[]any{"ID", "NAME", "MEMBERS"},
		func(a recipient.Account) []any { return []any{a.ID, dash(a.Name), len(a.Members)} })
}

func accountsDeleteCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use: "delete ID --tenant T", short: "Remove an account (its members stay subscribers)",
		args: cobra.ExactArgs(1),
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, id string) error {
			if err := d.Accounts.Delete(ctx, recipient.AccountKey(tenant, id)); err != nil {
				return fmt.Errorf("tenant %s, account %q: %w", tenant, id, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed account %q of tenant %s\n", id, tenant)
			return nil
		},
	})
}
