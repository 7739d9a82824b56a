package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Requests are counted by route, status and the key's tenant (bounded:
// beyond metrics.max_tenants they count as other); authentication
// failures by reason; replays by route and tenant.
func TestRequestsAuthFailuresAndReplaysAreCounted(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{Tenants: telemetry.NewTenantLabels(1)})
	body := sampleOrder(t)
	b.do(t, http.MethodPost, "/v1/events", acmeSend, body)
	b.do(t, http.MethodPost, "/v1/events", acmeSend, body)
	b.do(t, http.MethodPost, "/v1/events", "", body)
	b.do(t, http.MethodPost, "/v1/events", "hk_nobody_x", body)
	b.do(t, http.MethodPost, "/v1/events", acmeRead, body)
	b.do(t, http.MethodGet, "/v1/notifications/ntf_000000000000000000000000", globexRead, nil)

	require.Equal(t, map[string]int64{"POST /v1/events": 5, "GET /v1/notifications/{id}": 1},
		heraldtest.Counts(t, b.metrics, "herald.api.requests", "route"))
	require.Equal(t, map[string]int64{"202": 2, "401": 2, "403": 1, "404": 1},
		heraldtest.Counts(t, b.metrics, "herald.api.requests", "status"))
	require.Equal(t, map[string]int64{"acme": 3, "": 2, telemetry.Other: 1},
		heraldtest.Counts(t, b.metrics, "herald.api.requests", "tenant"))
	require.Equal(t, map[string]int64{"missing": 1, "invalid": 1, "scope": 1},
		heraldtest.Counts(t, b.metrics, "herald.api.auth.failures", "reason"))
	require.Equal(t, map[string]int64{"acme": 1}, heraldtest.Counts(t, b.metrics, "herald.api.idempotent.replays", "tenant"))
}
