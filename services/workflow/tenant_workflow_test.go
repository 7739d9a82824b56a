package workflow_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// acmeKey is the one API key of these tests: acme's, to send and read.
type acmeKey struct{}

func (acmeKey) Authenticate(_ context.Context, key string) (api.Principal, error) {
	if key != "hk_acme_send" {
		return api.Principal{}, api.ErrInvalidKey
	}
	return api.Principal{KeyID: "acme", Tenant: "acme", Scopes: []string{api.ScopeSend, api.ScopeRead}}, nil
}

// tenantReminder is the reminder workflow as acme PUTs it, its waits of
// wait: the configured routes know nothing of it.
func tenantReminder(wait string) string {
	return fmt.Sprintf(`{"event":"order.created","kind":"purchase","template":"purchase_order","roles":["supplier"],
	 "channels":["email"],"cancel_on":["order.cancelled"],
	 "steps":[{"send":{"channels":["email"]}},
	  {"wait":{"for":%[1]q,"until_event":"order.confirmed"}},
	  {"send":{"channels":["whatsapp"],"template":"po_reminder"}},
	  {"wait":{"for":%[1]q,"until_event":"order.confirmed"}},
	  {"send":{"roles":["buyer"],"channels":["email"],"template":"po_unconfirmed"}}]}`, wait)
}

// setupTenant PUTs acme's workflow through the API, then starts a router
// with the built-in routes and the workflow service.
func setupTenant(t *testing.T, workflowBody string) bundle {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	a, err := api.New(n.JS, api.Config{Authenticator: acmeKey{}})
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	t.Cleanup(func() { require.NoError(t, a.Stop(context.Background())) })
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+"/v1/workflows/po-reminder", strings.NewReader(workflowBody))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer hk_acme_send")
	req.Header.Set("Content-Type", "application/json")
	resp, err := heraldtest.HTTPClient(t).Do(req)
	require.NoError(t, err)
	answer, _ := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(answer))

	r, err := router.New(n.JS, router.Config{Channels: []event.Channel{event.ChannelEmail, event.ChannelWhatsApp, event.ChannelSMS}})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })
	w, err := workflow.New(n.JS, workflow.Config{})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Stop(heraldtest.Context(t))) })
	runs, err := workflow.OpenRuns(ctx, n.JS)
	require.NoError(t, err)
	return bundle{n: n, runs: runs}
}

// A tenant's own workflow with short waits runs as a configured one
// would: the order, one reminder, one email to the buyer.
func TestATenantsWorkflowRemindsThenEscalates(t *testing.T) {
	t.Parallel()
	b := setupTenant(t, tenantReminder("1s"))
	b.publish(t, "order.created", "evt-1")
	b.eventually(t, workflow.Done)
	b.eventuallySent(t, escalation, first, reminded)
}

// The cancel_on of a tenant's workflow — an event no configured route
// names — reaches its runs: the order's cancellation ends the run.
func TestATenantsWorkflowIsCancelledByItsCancelOn(t *testing.T) {
	t.Parallel()
	b := setupTenant(t, tenantReminder("1h"))
	b.publish(t, "order.created", "evt-1")
	b.eventually(t, workflow.Waiting)
	b.publish(t, "order.cancelled", "evt-3")
	r := b.eventually(t, workflow.Cancelled)
	require.Contains(t, r.Timeline[len(r.Timeline)-1].Detail, "order.cancelled evt-3")
	noTimers(t, b)
	b.eventuallySent(t, first)
}
