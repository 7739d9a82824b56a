package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/quota"
)

// A tenant key reads its own tenant's usage; asking for another tenant's
// is answered as for a tenant that does not exist, so the answer tells
// neither the other's counts nor that it is registered.
func TestATenantKeyReadsItsOwnUsageOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	heraldtest.RegisterTenants(t, b.nats.JS, "acme", "globex")
	month := quota.Month(time.Now())
	_, err := quota.New(b.nats.JS).Count(heraldtest.Context(t), quota.Key{Tenant: "globex", Channel: event.ChannelEmail, Month: month}, quota.Limit{})
	require.NoError(t, err)

	own := b.do(t, http.MethodGet, "/v1/usage", acmeRead, nil)
	require.Equal(t, http.StatusOK, own.status, own.body)
	require.Equal(t, `"acme"`, jsonField(t, own.body, "tenant"))
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/usage?tenant=acme", acmeRead, nil).status)

	other := b.do(t, http.MethodGet, "/v1/usage?tenant=globex", acmeRead, nil)
	unknown := b.do(t, http.MethodGet, "/v1/usage?tenant=initech", acmeRead, nil)
	require.Equal(t, http.StatusNotFound, unknown.status, unknown.body)
	alike(t, other, unknown, "globex", "initech", "another tenant reads as one not registered")

	admin := b.do(t, http.MethodGet, "/v1/usage?tenant=globex", adminKey, nil)
	require.Equal(t, http.StatusOK, admin.status, admin.body)
	require.Contains(t, admin.body, `{"channel":"email","used":1,`, "what acme was not shown is there")
}
