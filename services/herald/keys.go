package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/tenant"
)

func keysCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke the API keys of the HTTP API",
		Long: `An API key belongs to one tenant and holds scopes: send (events,
notifications), read (status, lists). An admin key belongs to no tenant and
reaches every one. Herald keeps only a SHA-256 of each key's secret: the key
is printed once, when it is created, and never again.`,
	}
	cmd.AddCommand(keysCreateCommand(), keysListCommand(), keysRevokeCommand())
	return cmd
}

// withKeys connects and opens the key store for a command.
func withKeys(cmd *cobra.Command, fn func(ctx context.Context, js jetstream.JetStream, keys *apikey.Keys) error) error {
	return withNATS(cmd, func(ctx context.Context, _ app.Config, js jetstream.JetStream) error {
		keys, err := apikey.Open(ctx, js)
		if err != nil {
			return err
		}
		return fn(ctx, js, keys)
	})
}

func keysCreateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create (--tenant ID | --admin | --observer)",
		Short: "Create a key and print it, the only time it is shown",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := readSpec(cmd)
			if err != nil {
				return err
			}
			asJSON, _ := cmd.Flags().GetBool("json")
			return withKeys(cmd, func(ctx context.Context, js jetstream.JetStream, keys *apikey.Keys) error {
				plain, key, err := createKey(ctx, js, keys, spec)
				if err != nil {
					return err
				}
				if asJSON {
					fmt.Fprintln(cmd.ErrOrStderr(), shownOnce)
					return printJSON(cmd.OutOrStdout(), struct {
						Plain string `json:"key"`
						apikey.Key
					}{plain, key})
				}
				printCreated(cmd.OutOrStdout(), plain, key)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.String("tenant", "", "the tenant the key belongs to")
	f.Bool("admin", false, "an operator key: every tenant, tenants, keys and the DLQ")
	f.Bool("observer", false, "an operator's read-only key for the console: it looks, changes nothing, and the API refuses it")
	f.String("name", "", "what the key is for, e.g. \"billing backend\"")
	f.String("scope", "", "scopes of a tenant key, comma-separated: send, read (default both)")
	f.Bool("json", false, "print JSON; the key is its \"key\" field")
	return cmd
}

const shownOnce = "This key will not be shown again: Herald keeps only a hash of it. Store it now."

func readSpec(cmd *cobra.Command) (apikey.Spec, error) {
	var spec apikey.Spec
	f := cmd.Flags()
	spec.Tenant, _ = f.GetString("tenant")
	spec.Admin, _ = f.GetBool("admin")
	spec.Observer, _ = f.GetBool("observer")
	spec.Name, _ = f.GetString("name")
	if scope, _ := f.GetString("scope"); scope != "" {
		scopes, err := apikey.ParseScopes(scope)
		if err != nil {
			return spec, fmt.Errorf("--scope: %w", err)
		}
		spec.Scopes = scopes
	}
	if spec.Tenant == "" && !spec.Admin && !spec.Observer {
		return spec, fmt.Errorf("say whose key it is: --tenant ID, --admin for an operator key, or --observer for the console's read-only one")
	}
	return spec, nil
}

// createKey is the one step of `keys create` between the flags and the
// store. The store checks the spec's form; what must hold of the tenant
// itself before it gets a key is asked of the server js reaches, here.
func createKey(ctx context.Context, js jetstream.JetStream, keys *apikey.Keys, spec apikey.Spec) (string, apikey.Key, error) {
	// A spec the store refuses anyway gets the store's words.
	if spec.Tenant != "" && !spec.Admin && event.ValidTenant(spec.Tenant) {
		reg, err := tenant.Open(ctx, js, nil)
		if err != nil {
			return "", apikey.Key{}, err
		}
		if _, err := reg.Get(ctx, spec.Tenant); err != nil {
			return "", apikey.Key{}, fmt.Errorf("%w (herald tenants create %s first)", err, spec.Tenant)
		}
	}
	return keys.Create(ctx, spec)
}

func printCreated(w io.Writer, plain string, key apikey.Key) {
	whose := "an admin key"
	switch {
	case slices.Contains(key.Scopes, apikey.Observe):
		whose = "an observer key (the console, read-only)"
	case key.Tenant != "":
		whose = "a key of tenant " + key.Tenant
	}
	fmt.Fprintf(w, "Created %s, id %s, scopes %s.\n\n    %s\n\n%s\n", whose, key.ID, scopeList(key.Scopes), plain, shownOnce)
}

func keysListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List keys, revoked ones too, oldest first (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tenant, _ := cmd.Flags().GetString("tenant")
			asJSON, _ := cmd.Flags().GetBool("json")
			return withKeys(cmd, func(ctx context.Context, _ jetstream.JetStream, keys *apikey.Keys) error {
				list, err := keys.List(ctx, tenant)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), list)
				}
				printKeys(cmd.OutOrStdout(), list)
				return nil
			})
		},
	}
	cmd.Flags().String("tenant", "", "only this tenant's keys")
	cmd.Flags().Bool("json", false, "print JSON")
	return cmd
}

func printKeys(w io.Writer, list []apikey.Key) {
	tw := newTable(w, "ID", "TENANT", "NAME", "SCOPES", "CREATED", "LAST USED", "REVOKED")
	for _, k := range list {
		tw.row(k.ID, dash(k.Tenant), dash(shorten(k.Name, 40)), scopeList(k.Scopes), when(k.Created), when(k.LastUsed), when(k.Revoked))
	}
	_ = tw.flush()
	if len(list) == 1 {
		fmt.Fprintln(w, "1 key")
		return
	}
	fmt.Fprintln(w, count(len(list), "key"))
}

func scopeList(scopes []apikey.Scope) string {
	words := make([]string, len(scopes))
	for i, s := range scopes {
		words[i] = string(s)
	}
	return strings.Join(words, ",")
}

// when is a time to the minute, in UTC, or "-" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04Z")
}

func keysRevokeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a key: every replica refuses it within seconds",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withKeys(cmd, func(ctx context.Context, _ jetstream.JetStream, keys *apikey.Keys) error {
				if err := keys.Revoke(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Revoked key %s: every replica refuses it within seconds.\n", args[0])
				return nil
			})
		},
	}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
