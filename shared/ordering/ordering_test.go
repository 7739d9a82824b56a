package ordering_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ordering"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

func sequences(t *testing.T) *ordering.Redis {
	t.Helper()
	return ordering.New(heraldtest.RedisClient(t, heraldtest.RedisURL(t)), heraldtest.Prefix())
}

func register(t *testing.T, s *ordering.Redis, member string, rev int) bool {
	t.Helper()
	ahead, err := s.Register(heraldtest.Context(t), []ordering.Slot{{Sequence: "acme:PO-1:email:olga", Member: member, Revision: rev}})
	require.NoError(t, err)
	return ahead[0]
}

// An event routed again after its revision was settled (a redelivery of
// the event) does not bring that revision back: nothing would settle it
// again, and every later revision would wait behind it.
func TestSettledRevisionIsNotRegisteredAgain(t *testing.T) {
	t.Parallel()
	s := sequences(t)
	ctx := heraldtest.Context(t)
	require.False(t, register(t, s, "r1", 1))
	_, err := s.Settle(ctx, "acme:PO-1:email:olga", "r1")
	require.NoError(t, err)
	require.False(t, register(t, s, "r1", 1), "routed again")
	require.False(t, register(t, s, "r2", 2), "nothing is pending before revision 2")
}

// Revisions wait by number, whatever order they were registered in; the
// same revision's members in the router's order.
func TestRevisionsWaitByNumberThenRouterOrder(t *testing.T) {
	t.Parallel()
	s := sequences(t)
	ctx := heraldtest.Context(t)
	require.True(t, register(t, s, "r3", 3), "a later revision that arrives first asks again at its send: one before it may be being routed")
	require.False(t, register(t, s, "r2", 2), "an earlier revision registered late goes ahead of the later one")
	require.True(t, register(t, s, "r3-shipped", 3))

	h, held, err := s.Park(ctx, "acme:PO-1:email:olga", "r3", []byte("r3's delivery"))
	require.NoError(t, err)
	require.True(t, held)
	require.Equal(t, ordering.Holder{Member: "r2", Revision: 2}, h)
	h, held, err = s.Park(ctx, "acme:PO-1:email:olga", "r3-shipped", []byte("r3-shipped's delivery"))
	require.NoError(t, err)
	require.True(t, held)
	require.Equal(t, ordering.Holder{Member: "r3", Revision: 3}, h)

	next, err := s.Settle(ctx, "acme:PO-1:email:olga", "r2")
	require.NoError(t, err)
	require.Equal(t, &ordering.Released{Member: "r3", Data: []byte("r3's delivery")}, next)
	next, err = s.Settle(ctx, "acme:PO-1:email:olga", "r3")
	require.NoError(t, err)
	require.Equal(t, &ordering.Released{Member: "r3-shipped", Data: []byte("r3-shipped's delivery")}, next)
}

// A revision one past the highest registered, or not past it, is sent
// unasked when nothing is pending before it; one further on asks again at
// its send (the revision between may be in another router worker's
// hands), and is sent then if nothing earlier was registered since.
func TestARevisionPastAGapAsksAgainAtItsSend(t *testing.T) {
	t.Parallel()
	s := sequences(t)
	ctx := heraldtest.Context(t)
	require.False(t, register(t, s, "r1", 1), "the first revision")
	_, err := s.Settle(ctx, "acme:PO-1:email:olga", "r1")
	require.NoError(t, err)
	require.False(t, register(t, s, "r2", 2), "the next revision")
	_, err = s.Settle(ctx, "acme:PO-1:email:olga", "r2")
	require.NoError(t, err)
	require.True(t, register(t, s, "r4", 4), "revision 3 may be being routed")
	_, held, err := s.Park(ctx, "acme:PO-1:email:olga", "r4", []byte("r4's delivery"))
	require.NoError(t, err)
	require.False(t, held, "no revision 3 came: sent at its send")
	_, err = s.Settle(ctx, "acme:PO-1:email:olga", "r4")
	require.NoError(t, err)
	require.False(t, register(t, s, "r4-shipped", 4), "the same revision again")
	_, err = s.Settle(ctx, "acme:PO-1:email:olga", "r4-shipped")
	require.NoError(t, err)
	require.False(t, register(t, s, "r5", 5), "the next revision after the gap")
}
