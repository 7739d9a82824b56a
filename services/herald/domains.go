package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/vault"
)

// providerTimeout bounds a command that asks an email provider.
const providerTimeout = time.Minute

// sendingDomains is the domain store, with what finds the provider that
// registers a tenant's domains — as the api finds it, from the
// configuration's email providers and the tenant's own accounts.
type sendingDomains struct {
	*domains.Store
	cfg app.Config
	js  jetstream.JetStream
}

// registrar is the provider that registers the tenant's domains, and its
// name.
func (d sendingDomains) registrar(ctx context.Context, tenant string) (string, domains.Registrar, error) {
	o, err := app.OpenDomains(ctx, d.cfg, d.js)
	if err != nil {
		return "", nil, err
	}
	return o.Registrar(ctx, tenant)
}

// domainCommands reach the domain store.
var domainCommands = resourceCommands[sendingDomains]{
	open: func(ctx context.Context, cfg app.Config, js jetstream.JetStream, _ *vault.Keyring) (sendingDomains, error) {
		s, err := domains.Open(ctx, js)
		return sendingDomains{Store: s, cfg: cfg, js: js}, err
	},
}

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
	cmd.AddCommand(domainsAddCommand(), domainsStatusCommand(), domainsListCommand(), domainsRemoveCommand(), domainsChangesCommand())
	return cmd
}

// domainCommand is a command on one of the tenant's domains (--domain).
func domainCommand(use, short, example string, run func(cmd *cobra.Command, ctx context.Context, d sendingDomains, tenant, domain string) error) *cobra.Command {
	return domainCommands.command(resourceCommand[sendingDomains]{
		use: use + " --tenant ID --domain D", short: short, example: example,
		key: "domain", keyUsage: "the domain, e.g. acme.example (required)",
		run: run,
	})
}

// askingCommand is a domain command that asks the tenant's email provider,
// within providerTimeout, and prints the domain as it answered.
func askingCommand(use, short, example string, ask func(d sendingDomains, ctx context.Context, tenant, domain string) (domains.Entry, error)) *cobra.Command {
	return domainCommand(use, short, example, func(cmd *cobra.Command, ctx context.Context, d sendingDomains, tenant, domain string) error {
		ctx, cancel := context.WithTimeout(ctx, providerTimeout)
		defer cancel()
		e, err := ask(d, ctx, tenant, domain)
		if err != nil {
			return err
		}
		return printDomain(cmd.OutOrStdout(), e)
	})
}

func domainsAddCommand() *cobra.Command {
	return askingCommand("add", "Register a domain with the tenant's email provider, and print the DNS records to publish",
		`  herald domains add --tenant acme --domain acme.example`, sendingDomains.register)
}

func domainsStatusCommand() *cobra.Command {
	return askingCommand("status", "Ask the provider where a domain stands now, and print it", "", sendingDomains.check)
}

// register registers domain with the tenant's email provider.
func (d sendingDomains) register(ctx context.Context, tenant, domain string) (domains.Entry, error) {
	name, r, err := d.registrar(ctx, tenant)
	if err != nil {
		return domains.Entry{}, err
	}
	return d.Register(ctx, tenant, domain, name, r)
}

// check asks the tenant's email provider where domain stands.
func (d sendingDomains) check(ctx context.Context, tenant, domain string) (domains.Entry, error) {
	// An unknown domain is said so before any provider is set up.
	if _, err := d.Get(ctx, tenant, domain); err != nil {
		return domains.Entry{}, fmt.Errorf("%s: %w", domains.Normalize(domain), err)
	}
	name, r, err := d.registrar(ctx, tenant)
	if err != nil {
		return domains.Entry{}, err
	}
	return d.Check(ctx, tenant, domain, name, r)
}

func domainsListCommand() *cobra.Command {
	return listCommand(domainCommands, "List a tenant's sending domains as the provider last described them",
		sendingDomains.List,
		[]any{"DOMAIN", "PROVIDER", "STATUS", "CHECKED", "DETAIL"},
		func(e domains.Entry) []any {
			return []any{e.Domain, e.Provider, e.Status, e.CheckedAt.Format(time.RFC3339), dash(e.Detail)}
		})
}

func domainsChangesCommand() *cobra.Command {
	return changesCommand(domainCommands, "a sending domain", "domain", "the domain, e.g. acme.example (required)", nil,
		func(d sendingDomains, _ *cobra.Command, ctx context.Context, tenant, domain string) ([]resource.Change, error) {
			return d.Records().Changes(ctx, domains.Domains.Key(domains.Entry{Tenant: tenant, Domain: domain}))
		})
}

func domainsRemoveCommand() *cobra.Command {
	return domainCommand("remove", "Forget a sending domain (the provider keeps it registered)", "",
		func(cmd *cobra.Command, ctx context.Context, d sendingDomains, tenant, domain string) error {
			e, err := d.Get(ctx, tenant, domain)
			if err == nil {
				err = d.Delete(ctx, tenant, domain)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", domains.Normalize(domain), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "forgot %s for tenant %s; %s keeps it registered until it is removed there\n", e.Domain, tenant, e.Provider)
			return nil
		})
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
