package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/vault"
)

// tenantWorkflows is the workflow store with what this deployment
// delivers and ships, to check a workflow against as its API does.
type tenantWorkflows struct {
	*resource.Store[router.Workflow]
	checks api.WorkflowChecks
}

// workflowCommands reach tenants' workflows.
var workflowCommands = resourceCommands[tenantWorkflows]{
	open: func(ctx context.Context, cfg app.Config, js jetstream.JetStream, _ *vault.Keyring) (tenantWorkflows, error) {
		checks, err := app.WorkflowChecks(cfg)
		if err != nil {
			return tenantWorkflows{}, err
		}
		s, err := resource.Open(ctx, js, router.Workflows)
		return tenantWorkflows{Store: s, checks: checks}, err
	},
}

func workflowsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workflows",
		Short: "Set, show, list and remove tenants' own workflows",
		Long: `A tenant's workflow is a name and one route, as an entry of router.routes
(docs/workflows.md): for the tenant's events of its event type (and kind)
the tenant's workflows replace the configured routes, from the next event
on. They are kept in the KV bucket workflows.`,
	}
	cmd.AddCommand(workflowsSetCommand(), workflowsShowCommand(), workflowsListCommand(), workflowsRemoveCommand())
	return cmd
}

// workflowCommand is a command on one workflow, named by its argument: a
// name no workflow may have is refused before NATS is reached.
func workflowCommand(c resourceCommand[tenantWorkflows]) *cobra.Command {
	c.args = cobra.ExactArgs(1)
	c.check = func(cmd *cobra.Command) error {
		if name := cmd.Flags().Arg(0); !router.ValidWorkflowName(name) {
			return fmt.Errorf("workflow name %q: 1-64 letters, digits, '_' or '-'", router.Quoted(name))
		}
		return nil
	}
	return workflowCommands.command(c)
}

func workflowsSetCommand() *cobra.Command {
	return workflowCommand(resourceCommand[tenantWorkflows]{
		use: "set NAME --tenant T --file ROUTE.yaml", short: "Create or replace a workflow",
		long: `Reads one route, as an entry of router.routes, in YAML or JSON (--file -
reads it from standard input), and stores it as the tenant's workflow NAME
once it is checked as PUT /v1/workflows/NAME checks it: a key the route or
a step does not have, a problem, a channel this deployment does not deliver
on or a template it does not ship is refused, naming the field.`,
		example: `  herald workflows set po-reminder --tenant acme --file examples/workflow.po-reminder.yaml`,
		flags: func(cmd *cobra.Command) {
			cmd.Flags().String("file", "", "the route, YAML or JSON; - for standard input (required)")
		},
		required: []string{"file"},
		run: func(cmd *cobra.Command, ctx context.Context, s tenantWorkflows, tenant, name string) error {
			path, _ := cmd.Flags().GetString("file")
			body, err := readRoute(cmd, path)
			if err != nil {
				return err
			}
			created, err := s.set(ctx, tenant, name, body)
			if err != nil {
				return fmt.Errorf("tenant %s, workflow %q: %w", tenant, name, err)
			}
			did := "replaced"
			if created {
				did = "created"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s workflow %q for tenant %s\n", did, name, tenant)
			return nil
		},
	})
}

// readRoute reads the file at path ("-": standard input), refusing one
// larger than a workflow may be without reading on.
func readRoute(cmd *cobra.Command, path string) ([]byte, error) {
	in := cmd.InOrStdin()
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		defer f.Close()
		in = f
	}
	body, err := io.ReadAll(io.LimitReader(in, router.MaxWorkflowBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--file %s: %w", path, err)
	}
	if len(body) > router.MaxWorkflowBytes {
		return nil, fmt.Errorf("--file %s: a workflow is at most %d KiB", path, router.MaxWorkflowBytes>>10)
	}
	return body, nil
}

// set stores body as the tenant's workflow name once it parses and
// passes the API's checks; created says there was none of that name.
func (s tenantWorkflows) set(ctx context.Context, tenant, name string, body []byte) (created bool, err error) {
	r, err := router.ParseWorkflow(body)
	if err != nil {
		return false, err
	}
	w := router.Workflow{Tenant: tenant, Name: name, Route: r, UpdatedAt: time.Now().UTC()}
	if err := s.checks.Check(w); err != nil {
		return false, err
	}
	return s.Upsert(ctx, w)
}

func workflowsShowCommand() *cobra.Command {
	return workflowCommand(resourceCommand[tenantWorkflows]{
		use: "show NAME --tenant T [--json]", short: "Show a workflow's route, as YAML set reads back",
		flags: func(cmd *cobra.Command) { cmd.Flags().Bool("json", false, "print the stored record as JSON") },
		run: func(cmd *cobra.Command, ctx context.Context, s tenantWorkflows, tenant, name string) error {
			w, _, err := s.Get(ctx, router.WorkflowKey(tenant, name))
			if err != nil {
				return fmt.Errorf("tenant %s, workflow %q: %w", tenant, name, err)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(w)
			}
			enc := yaml.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent(2)
			if err := enc.Encode(w.Route); err != nil {
				return err
			}
			return enc.Close()
		},
	})
}

func workflowsListCommand() *cobra.Command {
	return listCommand(workflowCommands, "List a tenant's workflows, by name",
		func(s tenantWorkflows, ctx context.Context, tenant string) ([]router.Workflow, error) {
			all, err := s.All(ctx, tenant)
			slices.SortFunc(all, func(a, b router.Workflow) int { return strings.Compare(a.Name, b.Name) })
			return all, err
		},
		[]any{"NAME", "EVENT", "KIND", "STEPS"},
		func(w router.Workflow) []any {
			return []any{w.Name, w.Route.Event, dash(string(w.Route.Kind)), dash(describeSteps(w.Route.Steps))}
		})
}

// describeSteps writes a route's steps as a person reads them, in order.
func describeSteps(steps []router.Step) string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Describe()
	}
	return strings.Join(out, "; ")
}

func workflowsRemoveCommand() *cobra.Command {
	return workflowCommand(resourceCommand[tenantWorkflows]{
		use: "remove NAME --tenant T", short: "Remove a workflow: the configured routes apply again to its events (its runs go on)",
		run: func(cmd *cobra.Command, ctx context.Context, s tenantWorkflows, tenant, name string) error {
			if err := s.Delete(ctx, router.WorkflowKey(tenant, name)); err != nil {
				return fmt.Errorf("tenant %s, workflow %q: %w", tenant, name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed workflow %q of tenant %s: the configured routes apply to its events\n", name, tenant)
			return nil
		},
	})
}
