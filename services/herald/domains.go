package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/domains"
)

// providerTimeout bounds a command that asks an email provider.
const providerTimeout = time.Minute

func domainsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "domains",
		Short: "Register tenants' sending domains with their email provider, and check them",
		Long: `A tenant sends email from its own domain once its email provider has
verified it: the provider (the first of the tenant's email chain that
registers domains, ses or sendgrid) answers DNS records to publish at the
domain's DNS host — CNAMEs that delegate the domain's DKIM keys (and, for
SendGrid, its return path) to the provider — and checks them when asked.
Domains are kept in the KV bucket sending_domains.`,
	}
	cmd.AddCommand(domainsAddCommand(), domainsStatusCommand(), domainsListCommand(), domainsRemoveCommand())
	return cmd
}

func domainsAddCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "add --tenant ID --domain D",
		Short:   "Register a domain with the tenant's email provider, and print the DNS records to publish",
		Example: `  herald domains add --tenant acme --domain acme.example`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tenant, domain := domainFlags(cmd)
			return withRegistrar(cmd, tenant, func(ctx context.Context, s *domains.Store, registrar registrarFunc) error {
				name, r, err := registrar()
				if err != nil {
					return err
				}
				e, err := s.Register(ctx, tenant, domain, name, r)
				if err != nil {
					return err
				}
				return printDomain(cmd.OutOrStdout(), e)
			})
		},
	}
	requireDomainFlags(cmd)
	return cmd
}

func domainsStatusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status --tenant ID --domain D",
		Short: "Ask the provider where a domain stands now, and print it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tenant, domain := domainFlags(cmd)
			return withRegistrar(cmd, tenant, func(ctx context.Context, s *domains.Store, registrar registrarFunc) error {
				// An unknown domain is said so before any provider is set up.
				if _, err := s.Get(ctx, tenant, domain); err != nil {
					return fmt.Errorf("%s: %w", domains.Normalize(domain), err)
				}
				name, r, err := registrar()
				if err != nil {
					return err
				}
				e, err := s.Check(ctx, tenant, domain, name, r)
				if err != nil {
					return err
				}
				return printDomain(cmd.OutOrStdout(), e)
			})
		},
	}
	requireDomainFlags(cmd)
	return cmd
}

func domainsListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list --tenant ID [--json]",
		Short: "List a tenant's sending domains as the provider last described them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tenant, _ := cmd.Flags().GetString("tenant")
			asJSON, _ := cmd.Flags().GetBool("json")
			return withDomains(cmd, func(ctx context.Context, s *domains.Store) error {
				list, err := s.List(ctx, tenant)
				if err != nil {
					return err
				}
				if asJSON {
					if list == nil {
						list = []domains.Entry{} // none is an empty list, not null
					}
					return json.NewEncoder(cmd.OutOrStdout()).Encode(list)
				}
				w := newTable(cmd.OutOrStdout(), "DOMAIN", "PROVIDER", "STATUS", "CHECKED", "DETAIL")
				for _, e := range list {
					w.row(e.Domain, e.Provider, e.Status, e.CheckedAt.Format(time.RFC3339), dash(e.Detail))
				}
				return w.flush()
			})
		},
	}
	cmd.Flags().String("tenant", "", "the tenant (required)")
	cmd.Flags().Bool("json", false, "print JSON")
	_ = cmd.MarkFlagRequired("tenant")
	return cmd
}

func domainsRemoveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove --tenant ID --domain D",
		Short: "Forget a sending domain (the provider keeps it registered)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tenant, domain := domainFlags(cmd)
			return withDomains(cmd, func(ctx context.Context, s *domains.Store) error {
				e, err := s.Get(ctx, tenant, domain)
				if err == nil {
					err = s.Delete(ctx, tenant, domain)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", domains.Normalize(domain), err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "forgot %s for tenant %s; %s keeps it registered until it is removed there\n", e.Domain, tenant, e.Provider)
				return nil
			})
		},
	}
	requireDomainFlags(cmd)
	return cmd
}

func domainFlags(cmd *cobra.Command) (tenant, domain string) {
	tenant, _ = cmd.Flags().GetString("tenant")
	domain, _ = cmd.Flags().GetString("domain")
	return tenant, domain
}

func requireDomainFlags(cmd *cobra.Command) {
	cmd.Flags().String("tenant", "", "the tenant (required)")
	cmd.Flags().String("domain", "", "the domain, e.g. acme.example (required)")
	_ = cmd.MarkFlagRequired("tenant")
	_ = cmd.MarkFlagRequired("domain")
}

// printDomain is a domain's status, then the records to publish as a
// table.
func printDomain(out io.Writer, e domains.Entry) error {
	fmt.Fprintf(out, "%s (tenant %s, %s): %s", e.Domain, e.Tenant, e.Provider, e.Status)
	if e.Detail != "" {
		fmt.Fprintf(out, " — %s", e.Detail)
	}
	fmt.Fprintln(out)
	w := newTable(out, "TYPE", "NAME", "VALUE")
	for _, r := range e.Records {
		w.row(r.Type, r.Name, r.Value)
	}
	return w.flush()
}

func withDomains(cmd *cobra.Command, fn func(context.Context, *domains.Store) error) error {
	return withNATS(cmd, func(ctx context.Context, _ app.Config, js jetstream.JetStream) error {
		s, err := domains.Open(ctx, js)
		if err != nil {
			return err
		}
		return fn(ctx, s)
	})
}

// registrarFunc finds the provider that registers the tenant's domains,
// and its name.
type registrarFunc func() (string, domains.Registrar, error)

// withRegistrar runs fn with the store and what finds the provider that
// registers the tenant's domains — as the api finds it, from the
// configuration's email providers and the tenant's own accounts.
func withRegistrar(cmd *cobra.Command, tenant string, fn func(context.Context, *domains.Store, registrarFunc) error) error {
	return withNATS(cmd, func(ctx context.Context, cfg app.Config, js jetstream.JetStream) error {
		ctx, cancel := context.WithTimeout(ctx, providerTimeout)
		defer cancel()
		s, err := domains.Open(ctx, js)
		if err != nil {
			return err
		}
		return fn(ctx, s, func() (string, domains.Registrar, error) {
			d, err := app.OpenDomains(ctx, cfg, js)
			if err != nil {
				return "", nil, err
			}
			return d.Registrar(ctx, tenant)
		})
	})
}
