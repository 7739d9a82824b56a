package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/tenant"
)

func tenantsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tenants",
		Short: "Register tenants, list and show them, change their plan, status, sender or providers",
		Long: `Tenants are the customers Herald sends for, kept in the KV bucket "tenants"
(nats kv get tenants ID shows one raw). Each has a plan (the built-in free,
indie, startup and enterprise, or one the config file's plans: section adds),
a status (a suspended tenant's traffic is dead-lettered, not dropped), a
default sending identity and an ordered provider chain.

A plan is checked against the plans the running api uses, which it
publishes to the KV bucket "plans" when it starts; only when none are
published are this command's own (--config) used.`,
	}
	cmd.AddCommand(tenantsCreateCommand(), tenantsListCommand(), tenantsShowCommand(), tenantsSetCommand(), tenantsUsageCommand())
	return cmd
}

// deploymentPlans are the plans a tenant may be on, and where they come
// from, for a refusal to name: the plans the running services check
// tenants against, as the api published them when it started — or, when no
// service has, this command's own configuration (the built-in plans, with
// its config file's plans: over them).
func deploymentPlans(ctx context.Context, cmd *cobra.Command, cfg app.Config, js jetstream.JetStream) (tenant.Plans, string, error) {
	published, err := tenant.PublishedPlans(ctx, js)
	if err == nil {
		return published.Plans, fmt.Sprintf("checked against the plans %s published at %s (KV bucket %s)",
			published.By, published.At.Format(time.RFC3339), tenant.PlansBucket), nil
	}
	if !errors.Is(err, tenant.ErrNoPlansPublished) {
		return nil, "", err
	}
	plans := cfg.Plans.WithDefaults()
	if err := plans.Validate(); err != nil {
		return nil, "", err
	}
	source := "the built-in plans (no --config or HERALD_CONFIG given)"
	if path := configPath(cmd); path != "" {
		source = "the plans of " + path
	}
	return plans, fmt.Sprintf("checked against %s, as %v", source, err), nil
}

// withRegistry connects and opens the registry for a command.
func withRegistry(cmd *cobra.Command, fn func(ctx context.Context, reg *tenant.Registry) error) error {
	return withPlans(cmd, func(ctx context.Context, reg *tenant.Registry, _ jetstream.JetStream, _ tenant.Plans) error {
		return fn(ctx, reg)
	})
}

// withPlans is withRegistry, with the connection and the deployment's
// plans. A tenant refused for its plan is told which plans it was checked
// against.
func withPlans(cmd *cobra.Command, fn func(ctx context.Context, reg *tenant.Registry, js jetstream.JetStream, plans tenant.Plans) error) error {
	return withNATS(cmd, func(ctx context.Context, cfg app.Config, js jetstream.JetStream) error {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		plans, source, err := deploymentPlans(ctx, cmd, cfg, js)
		if err != nil {
			return err
		}
		reg, err := tenant.Open(ctx, js, plans)
		if err != nil {
			return err
		}
		err = fn(ctx, reg, js, plans)
		if errors.Is(err, tenant.ErrUnknownPlan) {
			return fmt.Errorf("%w; %s", err, source)
		}
		return err
	})
}

func jsonFlag(cmd *cobra.Command) {
	cmd.Flags().Bool("json", false, "print JSON")
}

// printJSONOr prints v as JSON when the command has --json, else calls text.
func printJSONOr(cmd *cobra.Command, v any, text func(io.Writer)) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text(cmd.OutOrStdout())
	return nil
}

func tenantsCreateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create ID --plan P",
		Short: "Register a tenant, active from now",
		Long: `Register a tenant. ID is the tenant token events carry (letters, digits,
'-' and '_'); it never changes. Without --from the tenant sends as the
platform's email.from, without --providers through the platform's email
providers (likewise --sms-providers and --whatsapp-providers).`,
		Example: `  herald tenants create acme --plan startup --name "Acme Logistics" --from "Acme Orders <orders@acme.example>"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			t := tenant.Tenant{ID: args[0]}
			t.Plan, _ = f.GetString("plan")
			t.Name, _ = f.GetString("name")
			t.From, _ = f.GetString("from")
			t.LogoURL, _ = f.GetString("logo-url")
			t.Colour, _ = f.GetString("colour")
			origins, _ := f.GetString("inbox-origins")
			t.InboxOrigins = providerChain(origins)
			for _, c := range chainFlags {
				v, _ := f.GetString(c.flag)
				c.set(&t, providerChain(v))
			}
			if spec, _ := f.GetString("retention"); spec != "" {
				if err := tenant.SetRetention(&t.Retention, spec); err != nil {
					return err
				}
			}
			return withRegistry(cmd, func(ctx context.Context, reg *tenant.Registry) error {
				t, err := reg.Create(ctx, t)
				if err != nil {
					return err
				}
				return printJSONOr(cmd, t, func(w io.Writer) {
					fmt.Fprintf(w, "registered tenant %s (plan %s, %s)\n", t.ID, t.Plan, t.Status)
				})
			})
		},
	}
	cmd.Flags().String("plan", "", "the tenant's plan (required)")
	_ = cmd.MarkFlagRequired("plan")
	cmd.Flags().String("name", "", "display name")
	cmd.Flags().String("from", "", `default sending identity, "Name <address>"`)
	cmd.Flags().String("logo-url", "", "its logo (https), on its emails' HTML header bar")
	cmd.Flags().String("colour", "", "its emails' header bar colour, #rgb or #rrggbb")
	cmd.Flags().String("inbox-origins", "", "web origins whose pages may open its subscribers' inboxes, comma-separated (https://app.acme.example; http only for localhost)")
	addChainFlags(cmd)
	retentionFlag(cmd)
	jsonFlag(cmd)
	return cmd
}

// retentionFlag is --retention: how long the tenant's history and payloads
// are kept (docs/tenants.md, "Retention").
func retentionFlag(cmd *cobra.Command) {
	cmd.Flags().String("retention", "", "how long its history, payloads and inbox items are kept, e.g. history=90d,payloads=30d,inbox=30d; "+
		"an empty period (history=) is the platform's")
}

// chainFlags are the flags naming a tenant's provider chain on each
// channel.
var chainFlags = []struct {
	flag    string
	channel event.Channel
	set     func(*tenant.Tenant, []string)
}{
	{"providers", event.ChannelEmail, func(t *tenant.Tenant, c []string) { t.Providers = c }},
	{"sms-providers", event.ChannelSMS, func(t *tenant.Tenant, c []string) { t.SMSProviders = c }},
	{"whatsapp-providers", event.ChannelWhatsApp, func(t *tenant.Tenant, c []string) { t.WhatsAppProviders = c }},
}

func addChainFlags(cmd *cobra.Command) {
	for _, c := range chainFlags {
		cmd.Flags().String(c.flag, "", string(c.channel)+" provider chain, tried in this order: a,b")
	}
}

// providerChain reads --providers: names separated by commas; empty is no
// chain of the tenant's own.
func providerChain(s string) []string {
	var chain []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			chain = append(chain, p)
		}
	}
	return chain
}

func tenantsListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every tenant, by id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withRegistry(cmd, func(ctx context.Context, reg *tenant.Registry) error {
				list, err := reg.List(ctx)
				if err != nil {
					return err
				}
				return printJSONOr(cmd, list, func(w io.Writer) { printTenants(w, list) })
			})
		},
	}
	jsonFlag(cmd)
	return cmd
}

func printTenants(w io.Writer, list []tenant.Tenant) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no tenants (herald tenants create ID --plan P registers one)")
		return
	}
	tw := newTable(w, "ID", "NAME", "PLAN", "STATUS", "FROM", "PROVIDERS", "UPDATED")
	for _, t := range list {
		tw.row(t.ID, dash(shorten(t.Name, 30)), t.Plan, t.Status, dash(shorten(t.From, 40)), dash(chainsSummary(t)),
			t.UpdatedAt.Format(time.DateTime))
	}
	_ = tw.flush()
	fmt.Fprintln(w, count(len(list), "tenant"))
}

func tenantsShowCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "show ID",
		Aliases: []string{"get"},
		Short:   "Show one tenant",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRegistry(cmd, func(ctx context.Context, reg *tenant.Registry) error {
				t, err := reg.Get(ctx, args[0])
				if err != nil {
					return err
				}
				return printJSONOr(cmd, t, func(w io.Writer) { printTenant(w, t) })
			})
		},
	}
	jsonFlag(cmd)
	return cmd
}

// chainsSummary is the tenant's own chains in one cell: the email chain
// bare, the others prefixed by their channel.
func chainsSummary(t tenant.Tenant) string {
	var parts []string
	for _, c := range chainFlags {
		chain := strings.Join(t.Chain(c.channel), ",")
		switch {
		case chain == "":
		case c.channel == event.ChannelEmail:
			parts = append(parts, chain)
		default:
			parts = append(parts, string(c.channel)+":"+chain)
		}
	}
	return strings.Join(parts, " ")
}

func printTenant(w io.Writer, t tenant.Tenant) {
	from := t.From
	if from == "" {
		from = "(the platform's email.from)"
	}
	rows := [][2]string{{"id", t.ID}, {"name", dash(t.Name)}, {"plan", t.Plan}, {"status", string(t.Status)}, {"from", from}}
	for _, c := range chainFlags {
		chain := strings.Join(t.Chain(c.channel), ", ")
		if chain == "" {
			chain = fmt.Sprintf("(the platform's %s.providers)", c.channel)
		}
		rows = append(rows, [2]string{strings.ReplaceAll(c.flag, "-", " "), chain})
	}
	rows = append(rows, [2]string{"history kept", retentionOr(t.Retention.History, "ledger.retention")},
		[2]string{"payloads kept", retentionOr(t.Retention.Payloads, "documents.retention")},
		[2]string{"inbox kept", retentionOr(t.Retention.Inbox, "inbox.retention")})
	rows = append(rows, [2]string{"created", t.CreatedAt.Format(time.RFC3339)}, [2]string{"updated", t.UpdatedAt.Format(time.RFC3339)})
	tw := newTable(w)
	for _, row := range rows {
		tw.row(row[0]+":", row[1])
	}
	_ = tw.flush()
}

// retentionOr is a tenant's retention period, or which platform setting
// rules when it sets none.
func retentionOr(p tenant.Period, platform string) string {
	if p == 0 {
		return "(the platform's " + platform + ")"
	}
	return p.String()
}

func tenantsSetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set ID",
		Short: "Change a tenant's plan, status, sending identity, provider chain or name",
		Long: `Change what the flags name and nothing else. A suspended tenant's events
and notifications are dead-lettered with the reason until it is active again;
redrive them then. --from "" and --providers "" (or --sms-providers "",
--whatsapp-providers "") go back to the platform's. --retention sets how long
its notification history, stored payloads and inbox items are kept (a day
to 3650d; history no longer than the ledger keeps), history=, payloads= or
inbox= going back to the platform's; a sweep in the history service (the
inbox's, for inbox items) removes what is older.`,
		Example: `  herald tenants set acme --status suspended
  herald tenants set acme --plan enterprise --providers acme-ses,sendgrid
  herald tenants set acme --sms-providers acme-twilio,awssms --whatsapp-providers acme-twilio
  herald tenants set acme --retention history=90d,payloads=30d`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			edit, err := readEdit(cmd)
			if err != nil {
				return err
			}
			return withRegistry(cmd, func(ctx context.Context, reg *tenant.Registry) error {
				var before tenant.Tenant
				t, err := reg.Update(ctx, args[0], func(t *tenant.Tenant) error {
					before = *t
					edit(t)
					return nil
				})
				if err != nil {
					return err
				}
				return printJSONOr(cmd, t, func(w io.Writer) {
					fmt.Fprintf(w, "updated tenant %s: %s\n", t.ID, strings.Join(changes(before, t), "; "))
				})
			})
		},
	}
	f := cmd.Flags()
	f.String("plan", "", "the tenant's plan")
	f.String("status", "", "active, or suspended: its traffic is dead-lettered")
	f.String("from", "", `default sending identity, "Name <address>"`)
	f.String("logo-url", "", "its logo (https), on its emails' HTML header bar; empty removes it")
	f.String("colour", "", "its emails' header bar colour, #rgb or #rrggbb; empty for the default")
	f.String("inbox-origins", "", "web origins whose pages may open its subscribers' inboxes, comma-separated, replacing the list; empty for none")
	addChainFlags(cmd)
	f.String("name", "", "display name")
	retentionFlag(cmd)
	jsonFlag(cmd)
	return cmd
}

// readEdit turns the flags set into an edit of a tenant.
func readEdit(cmd *cobra.Command) (func(*tenant.Tenant), error) {
	var edits []func(*tenant.Tenant)
	set := func(flag string, apply func(*tenant.Tenant, string)) {
		if f := cmd.Flags().Lookup(flag); f.Changed {
			v := f.Value.String()
			edits = append(edits, func(t *tenant.Tenant) { apply(t, v) })
		}
	}
	set("plan", func(t *tenant.Tenant, v string) { t.Plan = v })
	set("status", func(t *tenant.Tenant, v string) { t.Status = tenant.Status(v) })
	set("from", func(t *tenant.Tenant, v string) { t.From = v })
	for _, c := range chainFlags {
		set(c.flag, func(t *tenant.Tenant, v string) { c.set(t, providerChain(v)) })
	}
	set("name", func(t *tenant.Tenant, v string) { t.Name = v })
	set("logo-url", func(t *tenant.Tenant, v string) { t.LogoURL = v })
	set("colour", func(t *tenant.Tenant, v string) { t.Colour = v })
	set("inbox-origins", func(t *tenant.Tenant, v string) { t.InboxOrigins = providerChain(v) })
	if f := cmd.Flags().Lookup("retention"); f.Changed {
		// Checked here, so the edit, which Update may repeat, cannot fail.
		if err := tenant.SetRetention(&tenant.Retention{}, f.Value.String()); err != nil {
			return nil, err
		}
		set("retention", func(t *tenant.Tenant, v string) { _ = tenant.SetRetention(&t.Retention, v) })
	}
	if len(edits) == 0 {
		return nil, errors.New("nothing to set: give --plan, --status, --from, --providers, --sms-providers, --whatsapp-providers, --name, --logo-url, --colour, --inbox-origins or --retention")
	}
	return func(t *tenant.Tenant) {
		for _, e := range edits {
			e(t)
		}
	}, nil
}

// changes lists what an update changed, "plan: free → startup", for the
// operator to check at a glance.
func changes(before, after tenant.Tenant) []string {
	var out []string
	diff := func(field, was, is string) {
		if was != is {
			out = append(out, fmt.Sprintf("%s: %s → %s", field, dash(was), dash(is)))
		}
	}
	diff("name", before.Name, after.Name)
	diff("plan", before.Plan, after.Plan)
	diff("status", string(before.Status), string(after.Status))
	diff("from", before.From, after.From)
	diff("logo_url", before.LogoURL, after.LogoURL)
	diff("colour", before.Colour, after.Colour)
	diff("inbox_origins", strings.Join(before.InboxOrigins, ","), strings.Join(after.InboxOrigins, ","))
	diff("retention.history", periodOrEmpty(before.Retention.History), periodOrEmpty(after.Retention.History))
	diff("retention.payloads", periodOrEmpty(before.Retention.Payloads), periodOrEmpty(after.Retention.Payloads))
	diff("retention.inbox", periodOrEmpty(before.Retention.Inbox), periodOrEmpty(after.Retention.Inbox))
	for _, c := range chainFlags {
		diff(c.flag, strings.Join(before.Chain(c.channel), ","), strings.Join(after.Chain(c.channel), ","))
	}
	if len(out) == 0 {
		return []string{"nothing changed"}
	}
	return out
}

// periodOrEmpty is a period as changes shows it: "" (a dash) when unset.
func periodOrEmpty(p tenant.Period) string {
	if p == 0 {
		return ""
	}
	return p.String()
}
