package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/suppression"
	"github.com/heraldhq/herald/shared/templates"
	"github.com/heraldhq/herald/shared/webhooks"
)

// resourceRoutes are the routes of each tenant resource that reach its
// store with no body, and the bucket the store keeps it in.
var resourceRoutes = []struct {
	bucket string
	routes [][2]string // method, path
}{
	{suppression.Bucket, [][2]string{{http.MethodGet, "/v1/suppressions"}, {http.MethodDelete, "/v1/suppressions/jane@example.com"}}},
	{templates.Bucket, [][2]string{{http.MethodGet, "/v1/templates"}, {http.MethodGet, "/v1/templates/purchase_order/es"},
		{http.MethodDelete, "/v1/templates/purchase_order/es"}}},
	{domains.Bucket, [][2]string{{http.MethodGet, "/v1/domains"}, {http.MethodGet, "/v1/domains/acme.example"},
		{http.MethodDelete, "/v1/domains/acme.example"}}},
	{webhooks.Bucket, [][2]string{{http.MethodGet, "/v1/webhooks/endpoints"}, {http.MethodDelete, "/v1/webhooks/endpoints/we_1"},
		{http.MethodPost, "/v1/webhooks/endpoints/we_1/enable"}}},
}

// Every tenant resource answers its store's trouble alike: a 503 that says
// nothing was done and when to try again (Retry-After), whichever store it
// is and whatever the route.
func TestTenantResourcesAnswerAStoreFailureAlike(t *testing.T) {
	t.Parallel()
	b := setup(t, withTemplates(t))
	for _, r := range resourceRoutes {
		require.NoError(t, b.nats.JS.DeleteKeyValue(heraldtest.Context(t), r.bucket))
	}
	for _, r := range resourceRoutes {
		for _, route := range r.routes {
			got := b.do(t, route[0], route[1], acmeKeyFor(route[0]), nil)
			require.Equal(t, http.StatusServiceUnavailable, got.status, "%s %s: %s", route[0], route[1], got.body)
			require.Equal(t, "5", got.header.Get("Retry-After"), "%s %s", route[0], route[1])
			require.Contains(t, got.body, "nothing was done, try again", "%s %s", route[0], route[1])
		}
	}
}

// A tenant's key reaches none of another tenant's records, through any
// route of any tenant resource: naming the other tenant is refused (403)
// before its store is read.
func TestTenantResourcesRefuseAnotherTenantsKey(t *testing.T) {
	t.Parallel()
	b := setup(t, withTemplates(t))
	for _, r := range resourceRoutes {
		for _, route := range r.routes {
			got := b.do(t, route[0], route[1]+"?tenant=globex", acmeKeyFor(route[0]), nil)
			require.Equal(t, http.StatusForbidden, got.status, "%s %s: %s", route[0], route[1], got.body)
			require.Contains(t, got.body, "this key manages tenant acme's", "%s %s", route[0], route[1])
		}
	}
}

// acmeKeyFor is acme's key with the scope a route of method needs.
func acmeKeyFor(method string) string {
	if method == http.MethodGet {
		return acmeRead
	}
	return acmeSend
}
