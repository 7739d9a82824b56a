package heraldtest

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/tenant"
)

// RegisterTenants registers each id in the tenant registry, on the
// enterprise plan (no rate, no quota: tests of plans choose their own):
// Herald refuses the events of unregistered tenants by default
// (tenants.require_registered).
func RegisterTenants(t testing.TB, js jetstream.JetStream, ids ...string) {
	t.Helper()
	reg, err := tenant.Open(Context(t), js, tenant.BuiltinPlans())
	require.NoError(t, err)
	for _, id := range ids {
		_, err := reg.Create(Context(t), tenant.Tenant{ID: id, Plan: "enterprise"})
		require.NoError(t, err)
	}
}
