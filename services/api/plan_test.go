package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
)

// The 202 names the notifications the routes plan for the event, by the
// ids the router gives them — digests of their dedupe keys, one per
// recipient per channel — in either content mode, and on a replay; an
// event no route sends anywhere (a stock alert, by SMS and WhatsApp, where
// only email is delivered) names none.
func TestAcceptedEventNamesItsPlannedNotifications(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	b := serve(t, n, api.Config{Planner: router.NewPlanner(n.JS, router.Config{})})
	want := []string{
		notification.ID("acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example"),
		notification.ID("acme:PO-2026-0042:1:purchase_order:email:compras@frutasdelsur.example"),
	}
	planned := func(got answer) []string {
		t.Helper()
		require.Equal(t, http.StatusAccepted, got.status, got.body)
		var accepted api.EventAccepted
		require.NoError(t, json.Unmarshal([]byte(got.body), &accepted))
		return accepted.Notifications
	}

	require.ElementsMatch(t, want, planned(b.do(t, http.MethodPost, "/v1/events", acmeSend, sampleOrder(t))))
	require.ElementsMatch(t, want, planned(b.do(t, http.MethodPost, "/v1/events", acmeSend, sampleOrder(t))), "a replay")
	headers, data := binaryOrder(t)
	require.ElementsMatch(t, want, planned(b.do(t, http.MethodPost, "/v1/events", acmeSend, data, append(headers, "Idempotency-Key", "binary")...)))

	stock, err := os.ReadFile("../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	got := b.do(t, http.MethodPost, "/v1/events", acmeSend, stock)
	require.Empty(t, planned(got))
	require.Contains(t, got.body, `"notifications":[]`, "none, said")
}

// A tenant's workflow plans the tenant's events as the router does: its
// runs send later, step by step, so the 202 of an order it routes names
// none of the configured routes' notifications.
func TestAcceptedEventIsPlannedByTheTenantsWorkflow(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	b := serve(t, n, api.Config{Planner: router.NewPlanner(n.JS, router.Config{})})
	put := b.sendJSON(t, http.MethodPut, "/v1/workflows/po-reminder", acmeSend, poReminder)
	require.Equal(t, http.StatusCreated, put.status, put.body)
	attempt := 0
	require.Eventually(t, func() bool {
		attempt++
		got := b.do(t, http.MethodPost, "/v1/events", acmeSend, sampleOrder(t), "Idempotency-Key", fmt.Sprintf("attempt-%d", attempt))
		require.Equal(t, http.StatusAccepted, got.status, got.body)
		var accepted api.EventAccepted
		require.NoError(t, json.Unmarshal([]byte(got.body), &accepted))
		return len(accepted.Notifications) == 0
	}, 10*time.Second, 50*time.Millisecond, "the planner follows the tenant's workflows")
}
