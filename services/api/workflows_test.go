package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
)

// poReminder is issue 34's purchase-order workflow, as a tenant PUTs it.
const poReminder = `{"event":"order.created","kind":"purchase","template":"purchase_order","roles":["supplier"],
 "channels":["email"],"cancel_on":["order.cancelled"],
 "steps":[{"send":{}},{"wait":{"for":"2d","until_event":"order.confirmed"}},{"send":{"template":"purchase_order"}}]}`

// withWorkflowChecks checks workflows as a deployment delivering email
// and webhooks, shipping the purchase order's template only, would.
func withWorkflowChecks(t *testing.T) api.Config {
	c := withTemplates(t)
	c.Workflows = api.WorkflowChecks{Channels: []event.Channel{event.ChannelEmail, event.ChannelWebhook},
		Shipped: func(_ event.Channel, name string) bool { return name == "purchase_order" },
	}
	return c
}

// A tenant's workflow is created (201), replaced (200), read, listed a
// page at a time and removed; another tenant's answers as one that does
// not exist.
func TestATenantWorkflowIsStoredListedAndRemoved(t *testing.T) {
	t.Parallel()
	b := setup(t, withWorkflowChecks(t))
	absent := b.do(t, http.MethodGet, "/v1/workflows/po-reminder", globexRead, nil)
	require.Equal(t, http.StatusNotFound, absent.status, absent.body)

	created := b.sendJSON(t, http.MethodPut, "/v1/workflows/po-reminder", acmeSend, poReminder)
	require.Equal(t, http.StatusCreated, created.status, created.body)
	replaced := b.sendJSON(t, http.MethodPut, "/v1/workflows/po-reminder", acmeSend, poReminder)
	require.Equal(t, http.StatusOK, replaced.status, replaced.body)

	var w api.Workflow
	got := b.do(t, http.MethodGet, "/v1/workflows/po-reminder", acmeRead, nil)
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.NoError(t, json.Unmarshal([]byte(got.body), &w))
	require.Equal(t, "acme", w.Tenant)
	require.Equal(t, []string{"order.cancelled"}, w.Route.CancelOn)
	require.Len(t, w.Route.Steps, 3)
	require.Equal(t, router.Duration(48*60*60*1e9), w.Route.Steps[1].Wait.For)

	other := b.do(t, http.MethodGet, "/v1/workflows/po-reminder", globexRead, nil)
	require.Equal(t, absent, other, "another tenant's workflow answers as none")
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodDelete, "/v1/workflows/po-reminder", globexSend, nil).status)
	require.JSONEq(t, `{"workflows":[]}`, b.do(t, http.MethodGet, "/v1/workflows", globexRead, nil).body)

	for _, name := range []string{"a_1", "b-2", "C3"} {
		require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, "/v1/workflows/"+name, acmeSend, poReminder).status)
	}
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 4)
		page := b.do(t, http.MethodGet, "/v1/workflows?limit=2&cursor="+url.QueryEscape(cursor), acmeRead, nil)
		require.Equal(t, http.StatusOK, page.status, page.body)
		var list struct {
			Workflows  []api.Workflow
			NextCursor string `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal([]byte(page.body), &list))
		require.LessOrEqual(t, len(list.Workflows), 2)
		for _, w := range list.Workflows {
			seen = append(seen, w.Name)
		}
		if cursor = list.NextCursor; cursor == "" {
			break
		}
	}
	require.Equal(t, []string{"C3", "a_1", "b-2", "po-reminder"}, seen, "every workflow once, by name")

	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/v1/workflows/po-reminder", acmeSend, nil).status)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/workflows/po-reminder", acmeRead, nil).status)
}

// A workflow is refused as the config would refuse the route — the field
// named, unknown keys at every level — and as this deployment cannot
// take it; nothing is stored.
func TestAWorkflowIsCheckedAsTheConfigIs(t *testing.T) {
	t.Parallel()
	b := setup(t, withWorkflowChecks(t))
	step := func(s string) string {
		return strings.Replace(poReminder, `{"wait":{"for":"2d","until_event":"order.confirmed"}}`, s, 1)
	}
	for body, says := range map[string]string{
		step(`{"wait":{"for":"90d"}}`):          "workflow.steps[1].wait.for: 2160h0m0s must be more than 0 and at most 60 days",
		step(`{"sned":{}}`):                     `\"sned\" is not a step (want one of send, wait, throttle, digest, window)`,
		step(`{"wait":{"fro":"1h"}}`):           `wait has no key \"fro\"`,
		step(`{"wait":{"for":"1h"},"send":{}}`): "a step is exactly one of send, wait, throttle, digest, window (got wait and send)",
		strings.Replace(step(`{"digest":{"key":"{{.Order.ID}}","window":"1h"}}`), `{"template":"purchase_order"}`, `{}`, 1): `workflow.steps[2].send.template: no email template \"purchase_order_digest\" in this deployment`,
		strings.Replace(poReminder, `"channels"`, `"chanels"`, 1):                                                           "field chanels not found",
		strings.Replace(poReminder, `"roles"`, `"stage":2,"roles"`, 1):                                                      "field stage not found",
		strings.Replace(poReminder, `"order.cancelled"`, `"order.created"`, 1):                                              `workflow.cancel_on: \"order.created\" is the route's own event`,
		strings.Replace(poReminder, `"roles"`, `"category":"docs\u001b[2J","roles"`, 1):                                     "workflow.category: holds a control character (U+001B at byte 4)",
		strings.Replace(poReminder, `["email"]`, `["sms"]`, 1):                                                              `workflow.channels: \"sms\" is not delivered by this deployment`,
		strings.Replace(poReminder, `{"template":"purchase_order"}`, `{"template":"po_nudge"}`, 1):                          `workflow.steps[2].send.template: no email template \"po_nudge\" in this deployment`,
	} {
		refused := b.sendJSON(t, http.MethodPut, "/v1/workflows/po-reminder", acmeSend, body)
		require.Equal(t, http.StatusUnprocessableEntity, refused.status, "%s: %s", body, refused.body)
		require.Contains(t, refused.body, says, body)
	}
	require.Equal(t, http.StatusBadRequest, b.sendJSON(t, http.MethodPut, "/v1/workflows/po-reminder", acmeSend, "").status, "a body is required")
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/workflows/po-reminder", acmeRead, nil).status, "nothing stored")
}

// Hostile input costs a bounded answer: a name that is not one is 400,
// a body past the bound 413, too many steps or a huge string 422 without
// repeating it.
func TestAHostileWorkflowIsRefusedCheaply(t *testing.T) {
	t.Parallel()
	b := setup(t, withWorkflowChecks(t))
	for _, name := range []string{"a.b", "*", strings.Repeat("n", 65), "caf%C3%A9"} {
		put := b.sendJSON(t, http.MethodPut, "/v1/workflows/"+name, acmeSend, poReminder)
		require.Equal(t, http.StatusBadRequest, put.status, "%s: %s", name, put.body)
		require.Equal(t, http.StatusBadRequest, b.do(t, http.MethodGet, "/v1/workflows/"+name, acmeRead, nil).status, name)
	}
	huge := b.sendJSON(t, http.MethodPut, "/v1/workflows/huge", acmeSend,
		strings.Replace(poReminder, `"roles"`, `"document":"`+strings.Repeat("x", 100<<10)+`","roles"`, 1))
	require.Equal(t, http.StatusRequestEntityTooLarge, huge.status)

	long := b.sendJSON(t, http.MethodPut, "/v1/workflows/long", acmeSend,
		strings.Replace(poReminder, `"roles"`, `"document":"`+strings.Repeat("x", 20<<10)+`","roles"`, 1))
	require.Equal(t, http.StatusUnprocessableEntity, long.status)
	require.Contains(t, long.body, "workflow.document: 20480 bytes; at most 256")
	require.Less(t, len(long.body), 2<<10, "the answer does not repeat the string")

	badFor := b.sendJSON(t, http.MethodPut, "/v1/workflows/for", acmeSend,
		strings.Replace(poReminder, `"for":"2d"`, `"for":"`+strings.Repeat("9", 20<<10)+`x"`, 1))
	require.Equal(t, http.StatusUnprocessableEntity, badFor.status)
	require.Contains(t, badFor.body, "want a number of s, m, h or d")
	require.Less(t, len(badFor.body), 2<<10, "the answer does not repeat the value")

	steps := strings.TrimSuffix(strings.Repeat(`{"send":{}},`, 21), ",")
	many := b.sendJSON(t, http.MethodPut, "/v1/workflows/many", acmeSend,
		strings.Replace(poReminder, poReminder[strings.Index(poReminder, `"steps"`):], `"steps":[`+steps+`]}`, 1))
	require.Equal(t, http.StatusUnprocessableEntity, many.status, many.body)
	require.Contains(t, many.body, "workflow.steps: 21 steps; a workflow has at most 20")
}
