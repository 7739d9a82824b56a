package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// withRuns starts a router whose purchase-order route reminds the
// supplier after an hour, and the workflow service, beside the API, then
// publishes acme's sample order: one run, waiting.
func withRuns(t *testing.T) (*bundle, api.WorkflowRun) {
	t.Helper()
	b := setup(t, api.Config{})
	ctx := heraldtest.Context(t)
	route := router.Route{Event: "order.created", Kind: event.KindPurchase, Template: "purchase_order", Roles: []string{"supplier"},
		Channels: []event.Channel{event.ChannelEmail}, CancelOn: []string{"order.cancelled"},
		Steps: []router.Step{{Send: &router.SendStep{}}, {Wait: &router.WaitStep{For: router.Duration(time.Hour), UntilEvent: "order.confirmed"}},
			{Send: &router.SendStep{}}}}
	r, err := router.New(b.nats.JS, router.Config{Routes: []router.Route{route}})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })
	w, err := workflow.New(b.nats.JS, workflow.Config{})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Stop(heraldtest.Context(t))) })
	_, err = b.nats.JS.PublishMsg(ctx, &nats.Msg{Subject: "orders.created", Data: sampleOrder(t)})
	require.NoError(t, err)

	var run api.WorkflowRun
	require.Eventually(t, func() bool {
		got := b.runs(t, acmeRead, "?state=waiting")
		if len(got.Runs) == 1 {
			run = got.Runs[0]
		}
		return len(got.Runs) == 1
	}, 30*time.Second, 20*time.Millisecond)
	return b, run
}

func (b *bundle) runs(t *testing.T, key, query string) api.RunListing {
	t.Helper()
	a := b.do(t, http.MethodGet, "/v1/runs"+query, key, nil)
	require.Equal(t, http.StatusOK, a.status, a.body)
	var l api.RunListing
	require.NoError(t, json.Unmarshal([]byte(a.body), &l))
	return l
}

// A tenant lists its runs and reads one: the steps as written, the
// recipient, where it waits and until when, and what happened so far.
func TestARunIsListedAndRead(t *testing.T) {
	t.Parallel()
	b, run := withRuns(t)
	require.Equal(t, "PO-2026-0042", run.Order)
	require.Equal(t, "order.created", run.EventType)
	require.Equal(t, []string{"send", "wait 1h or order.confirmed", "send"}, run.Steps)
	require.Equal(t, "olga@zarya.example", run.Recipient.Email)
	require.Equal(t, 1, run.Step)
	require.NotNil(t, run.Until)
	require.Equal(t, "waiting", run.Timeline[len(run.Timeline)-1].What)

	require.Len(t, b.runs(t, acmeRead, "?order=PO-2026-0042").Runs, 1)
	require.Empty(t, b.runs(t, acmeRead, "?order=PO-2026-0043").Runs)
	require.Empty(t, b.runs(t, acmeRead, "?state=done").Runs)
	require.Empty(t, b.runs(t, globexRead, "").Runs, "another tenant's runs are not listed")

	a := b.do(t, http.MethodGet, "/v1/runs/"+run.ID, acmeRead, nil)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"state":"waiting"`)
}

// Another tenant's run, an unknown one and a malformed id answer alike.
func TestAnotherTenantsRunIsNotFound(t *testing.T) {
	t.Parallel()
	b, run := withRuns(t)
	for _, path := range []string{"/v1/runs/" + run.ID, "/v1/runs/run_00000000000000000000000000000000", "/v1/runs/%2A", "/v1/runs/%3E"} {
		a := b.do(t, http.MethodGet, path, globexRead, nil)
		if path != "/v1/runs/"+run.ID {
			a = b.do(t, http.MethodGet, path, acmeRead, nil)
		}
		require.Equal(t, http.StatusNotFound, a.status, path+": "+a.body)
		require.Contains(t, a.body, "no such run")
	}
	a := b.do(t, http.MethodPost, "/v1/runs/"+run.ID+"/cancel", globexSend, nil)
	require.Equal(t, http.StatusNotFound, a.status, a.body)
	a = b.do(t, http.MethodGet, "/v1/runs?tenant=acme.>", adminKey, nil)
	require.Equal(t, http.StatusUnprocessableEntity, a.status, a.body)
}

// Cancelling a waiting run ends it and removes its timer; cancelling it
// again is a 409.
func TestCancellingARunRemovesItsTimer(t *testing.T) {
	t.Parallel()
	b, run := withRuns(t)
	a := b.do(t, http.MethodPost, "/v1/runs/"+run.ID+"/cancel", acmeSend, nil)
	require.Equal(t, http.StatusOK, a.status, a.body)
	var got api.WorkflowRun
	require.NoError(t, json.Unmarshal([]byte(a.body), &got))
	require.Equal(t, "cancelled", got.State)
	require.Equal(t, "by the API (key acme1)", got.Timeline[len(got.Timeline)-1].Detail)
	for _, m := range heraldtest.StreamMessages(t, b.nats.JS, router.RunsStream) {
		require.False(t, strings.HasPrefix(m.Subject, "runs.timer."), "the timer is removed: %s", m.Subject)
	}

	a = b.do(t, http.MethodPost, "/v1/runs/"+run.ID+"/cancel", acmeSend, nil)
	require.Equal(t, http.StatusConflict, a.status, a.body)
	require.Contains(t, a.body, "the run has ended (cancelled)")
}
