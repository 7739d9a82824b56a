package ordering_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/ordering"
)

// A delivery that names a sequence but no order — none the router made;
// one forged so — is in no sequence: releasing it settles nothing, and the
// revision parked behind the member it names stays parked.
func TestDeliveryNamingNoOrderReleasesNothing(t *testing.T) {
	t.Parallel()
	s := sequences(t)
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	require.False(t, register(t, s, "r1", 1))
	require.True(t, register(t, s, "r2", 2))
	_, held, err := s.Park(ctx, "acme:PO-1:email:olga", "r2", []byte("r2's delivery"))
	require.NoError(t, err)
	require.True(t, held)

	forged := notification.Delivery{ID: notification.ID("r1"), DedupeKey: "r1", Tenant: "acme", Channel: event.ChannelEmail,
		Sequence: &notification.Sequence{Key: "acme:PO-1:email:olga"}}
	next, err := ordering.Release(ctx, s, n.JS, forged, "delivered")
	require.NoError(t, err)
	require.Empty(t, next)
	h, held, err := s.Park(ctx, "acme:PO-1:email:olga", "r2", []byte("r2's delivery"))
	require.NoError(t, err)
	require.True(t, held, "revision 1 is still pending")
	require.Equal(t, ordering.Holder{Member: "r1", Revision: 1}, h)
}
