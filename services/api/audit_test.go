package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/suppression"
)

// Every write through a tenant resource's routes names its key in the
// record's audit trail — the key's public id, never its secret — and an
// admin key's write says it was an admin's.
func TestAResourceWriteNamesTheKeyThatMadeIt(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	added := b.sendJSON(t, http.MethodPost, "/v1/suppressions", acmeSend, `{"address":"jane@example.com"}`)
	require.Equal(t, http.StatusCreated, added.status, added.body)
	lifted := b.do(t, http.MethodDelete, "/v1/suppressions/jane@example.com?tenant=acme", adminKey, nil)
	require.Equal(t, http.StatusNoContent, lifted.status, lifted.body)

	ctx := heraldtest.Context(t)
	store, err := suppression.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	changes, err := store.Records().Changes(ctx, suppression.Suppressions.Key(suppression.Entry{Tenant: "acme", Address: "jane@example.com"}))
	require.NoError(t, err)
	require.Len(t, changes, 2)
	require.Equal(t, []string{"key:acme1", "admin-key:admin1"}, []string{changes[0].Actor, changes[1].Actor})
	require.Equal(t, []bool{false, true}, []bool{changes[0].Deleted, changes[1].Deleted})
	for _, c := range changes {
		require.NotContains(t, c.Actor, acmeSend, "the key's secret is never recorded")
	}
}
