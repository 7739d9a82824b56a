package ledger_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
)

// A notification is read by its id; ids the ledger never recorded, and ids
// of no notification's shape, are not found.
func TestByIDReadsANotification(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	l, err := ledger.Open(ctx, n.JS)
	require.NoError(t, err)

	id := notification.ID(key)
	e := ledger.Entry{DedupeKey: key, NotificationID: id, Tenant: "acme", Channel: "email", State: ledger.Sending}
	require.NoError(t, l.Put(ctx, &e))
	e.State, e.ProviderMessageID = ledger.Delivered, "sg-1"
	require.NoError(t, l.Put(ctx, &e))

	got, err := l.ByID(ctx, "acme", id)
	require.NoError(t, err)
	require.Equal(t, ledger.Delivered, got.State)
	require.Equal(t, "sg-1", got.ProviderMessageID)
	require.Equal(t, key, got.DedupeKey)
	require.Equal(t, "acme", got.Tenant)

	for name, c := range map[string][2]string{
		"never recorded":           {"acme", notification.ID(key + "x")},
		"another tenant's":         {"globex", id},
		"not an id":                {"acme", "ntf_../deliveries"},
		"an id one digit too long": {"acme", id + "0"},
		"not a tenant":             {"acme.>", id},
	} {
		_, err := l.ByID(ctx, c[0], c[1])
		require.ErrorIs(t, err, ledger.ErrNotFound, name)
	}
}
