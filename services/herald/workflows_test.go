package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/resource"
)

// heraldIn runs the CLI as herald does, reading stdin from in.
func heraldIn(t *testing.T, in io.Reader, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := rootCommand()
	cmd.SetArgs(args)
	cmd.SetIn(in)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.Execute()
	return out.String(), err
}

const poReminder = `event: order.created
kind: purchase
document: purchase_order
roles: [supplier]
channels: [email]
cancel_on: [order.cancelled]
steps:
  - send: {}
  - wait: {for: 2d, until_event: order.confirmed}
  - send: {template: purchase_order}
`

// A workflow set from a file (YAML) or from stdin (JSON) is stored as the
// router reads it, written by the command line; show prints it back as
// YAML that set reads again, list names it with its steps, remove gives
// its events back to the configured routes. Not parallel: it sets the
// environment.
func TestWorkflowsSetShowListRemove(t *testing.T) {
	n, _ := vaultSetup(t)
	ctx := heraldtest.Context(t)
	store, err := resource.Open(ctx, n.JS, router.Workflows)
	require.NoError(t, err)
	run := func(args ...string) string {
		t.Helper()
		out, err := herald(t, args...)
		require.NoError(t, err, out)
		return out
	}
	file := filepath.Join(t.TempDir(), "route.yaml")
	require.NoError(t, os.WriteFile(file, []byte(poReminder), 0o600))

	require.Equal(t, "[]\n", run("workflows", "list", "--tenant", "acme", "--json"), "none is an empty list")
	require.Equal(t, "created workflow \"po-reminder\" for tenant acme\n",
		run("workflows", "set", "po-reminder", "--tenant", "acme", "--file", file))
	require.Equal(t, "replaced workflow \"po-reminder\" for tenant acme\n",
		run("workflows", "set", "po-reminder", "--tenant", "acme", "--file", file))
	want, err := router.ParseWorkflow([]byte(poReminder))
	require.NoError(t, err)
	stored, _, err := store.Get(ctx, router.WorkflowKey("acme", "po-reminder"))
	require.NoError(t, err)
	require.Equal(t, want, stored.Route)
	require.Equal(t, "acme", stored.Tenant)
	trail, err := store.Changes(ctx, router.WorkflowKey("acme", "po-reminder"))
	require.NoError(t, err)
	u, err := user.Current()
	require.NoError(t, err)
	require.Equal(t, "cli:"+u.Username, trail[len(trail)-1].Actor)

	out, err := heraldIn(t, strings.NewReader(`{"event":"inventory.low_stock","template":"low_stock","channels":["webhook"]}`),
		"workflows", "set", "stock", "--tenant", "acme", "--file", "-")
	require.NoError(t, err, out)
	require.Equal(t, "created workflow \"stock\" for tenant acme\n", out)
	run("workflows", "set", "po-reminder", "--tenant", "globex", "--file", file)

	shown := run("workflows", "show", "po-reminder", "--tenant", "acme")
	back, err := router.ParseWorkflow([]byte(shown))
	require.NoError(t, err, shown)
	require.Equal(t, want, back, "show prints what set reads back:\n%s", shown)
	require.Contains(t, shown, "for: 2d\n", "a span as it was written")
	var record router.Workflow
	require.NoError(t, json.Unmarshal([]byte(run("workflows", "show", "stock", "--tenant", "acme", "--json")), &record))
	require.Equal(t, router.Workflow{Tenant: "acme", Name: "stock", Route: router.Route{Event: "inventory.low_stock", Template: "low_stock", Channels: []event.Channel{"webhook"}},
		UpdatedAt: record.UpdatedAt}, record)

	require.Regexp(t, `^NAME +EVENT +KIND +STEPS\n`+
		`po-reminder +order\.created +purchase +send; wait 2d or order\.confirmed; send\S* .*\n`+
		`stock +inventory\.low_stock +- +-\n$`, run("workflows", "list", "--tenant", "acme"))

	require.Equal(t, "removed workflow \"po-reminder\" of tenant acme: the configured routes apply to its events\n",
		run("workflows", "remove", "po-reminder", "--tenant", "acme"))
	_, err = herald(t, "workflows", "show", "po-reminder", "--tenant", "acme")
	require.ErrorIs(t, err, router.ErrNoWorkflow)
	_, err = herald(t, "workflows", "remove", "po-reminder", "--tenant", "acme")
	require.ErrorIs(t, err, router.ErrNoWorkflow)
	var listed []router.Workflow
	require.NoError(t, json.Unmarshal([]byte(run("workflows", "list", "--tenant", "acme", "--json")), &listed))
	require.Len(t, listed, 1)
	require.Equal(t, "stock", listed[0].Name)
	_, _, err = store.Get(ctx, router.WorkflowKey("globex", "po-reminder"))
	require.NoError(t, err, "another tenant's workflow of that name is left alone")
}

// A workflow the API would refuse the CLI refuses, naming the field as
// the 422 does — a key no route has, a problem, a channel this deployment
// does not deliver on, a template it does not ship — and stores nothing:
// the workflow it would replace stays as it was. Not parallel: it sets the
// environment.
func TestWorkflowsSetRefusesWhatTheAPIRefuses(t *testing.T) {
	n, _ := vaultSetup(t)
	ctx := heraldtest.Context(t)
	store, err := resource.Open(ctx, n.JS, router.Workflows)
	require.NoError(t, err)
	out, err := heraldIn(t, strings.NewReader(poReminder), "workflows", "set", "po-reminder", "--tenant", "acme", "--file", "-")
	require.NoError(t, err, out)
	before, rev, err := store.Get(ctx, router.WorkflowKey("acme", "po-reminder"))
	require.NoError(t, err)

	for body, want := range map[string]string{
		`{"event":"order.created","steps":[{"wait":{"fro":"1h"}}]}`:                                                            `wait has no key "fro"`,
		`{"event":"order.created","steps":[{"send":{}},{"wait":{"for":"90d"}}]}`:                                               "workflow.steps[1].wait.for:",
		`{"event":"order.created","document":"purchase_order","channels":["sms"]}`:                                             `workflow.channels: "sms" is not delivered by this deployment`,
		`{"event":"order.created","document":"purchase_order","channels":["email"],"steps":[{"send":{"template":"no_such"}}]}`: `workflow.steps[0].send.template: no email template "no_such" in this deployment`,
		strings.Repeat("#", router.MaxWorkflowBytes) + "\nevent: order.created\n":                                              "a workflow is at most 32 KiB",
	} {
		for _, name := range []string{"po-reminder", "other"} {
			out, err := heraldIn(t, strings.NewReader(body), "workflows", "set", name, "--tenant", "acme", "--file", "-")
			require.ErrorContains(t, err, want, "%s: %s", body[:min(len(body), 80)], out)
		}
	}
	after, afterRev, err := store.Get(ctx, router.WorkflowKey("acme", "po-reminder"))
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.Equal(t, rev, afterRev, "nothing written")
	all, err := store.All(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, all, 1, "nothing stored")
}

// A name no workflow may have is refused as such before NATS is reached.
// Not parallel: it sets the environment.
func TestWorkflowsRefuseANameBeforeConnecting(t *testing.T) {
	t.Setenv("HERALD_CONFIG", "")
	t.Setenv("NATS_URL", "nats://127.0.0.1:1") // nothing listens there
	for _, args := range [][]string{
		{"set", "po.reminder", "--tenant", "acme", "--file", "-"},
		{"show", "acme.x", "--tenant", "acme"},
		{"remove", "*", "--tenant", "acme"},
	} {
		_, err := herald(t, append([]string{"workflows"}, args...)...)
		require.ErrorContains(t, err, "1-64 letters, digits, '_' or '-'", "%v", args)
		require.NotContains(t, err.Error(), "NATS", "%v", args)
	}
}
