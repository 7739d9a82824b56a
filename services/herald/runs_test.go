package main

import (
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// `herald runs` lists a tenant's runs, shows one's timeline and cancels
// it; a run cancelled is not cancelled twice. Not parallel: it sets the
// environment.
func TestRunsListShowCancel(t *testing.T) {
	n, _ := vaultSetup(t)
	ctx := heraldtest.Context(t)
	route := router.Route{Event: "order.created", Kind: event.KindPurchase, Template: "purchase_order", Roles: []string{"supplier"},
		Channels: []event.Channel{event.ChannelEmail},
		Steps:    []router.Step{{Send: &router.SendStep{}}, {Wait: &router.WaitStep{For: router.Duration(time.Hour)}}, {Send: &router.SendStep{}}}}
	r, err := router.New(n.JS, router.Config{Routes: []router.Route{route}})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })
	w, err := workflow.New(n.JS, workflow.Config{})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Stop(heraldtest.Context(t))) })
	order, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	_, err = n.JS.PublishMsg(ctx, &nats.Msg{Subject: "orders.created", Data: order})
	require.NoError(t, err)

	runID := regexp.MustCompile(`run_[0-9a-f]{32}`)
	var list string
	require.Eventually(t, func() bool {
		list, _ = herald(t, "runs", "list", "--tenant", "acme", "--state", "waiting")
		return runID.MatchString(list)
	}, 30*time.Second, 50*time.Millisecond)
	require.Regexp(t, `(?m)^run_[0-9a-f]{32} +PO-2026-0042 +olga@zarya.example +2 +waiting +20`, list)
	id := runID.FindString(list)

	show, err := herald(t, "runs", "show", id, "--tenant", "acme")
	require.NoError(t, err, show)
	require.Contains(t, show, id+": waiting, step 2 of 3, for olga@zarya.example, about PO-2026-0042")
	require.Contains(t, show, "> 2. wait ", "the step it waits at, marked")
	require.Regexp(t, `(?m) +1 +sent +(-|as ntf_[0-9a-f]{64})$`, show)

	_, err = herald(t, "runs", "show", id, "--tenant", "globex")
	require.ErrorIs(t, err, workflow.ErrNotFound)
	out, err := herald(t, "runs", "cancel", id, "--tenant", "acme")
	require.NoError(t, err, out)
	require.Equal(t, "cancelled run "+id+" of tenant acme at step 2\n", out)
	_, err = herald(t, "runs", "cancel", id, "--tenant", "acme")
	require.ErrorIs(t, err, workflow.ErrEnded)
}
