package history_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
)

// Redacting an address keeps its rows, in their state, with the mask as
// their recipient (the reason quoting it too): a listing by the address
// finds none, one by the mask finds them; other addresses' and other
// tenants' rows keep theirs, and a ledger revision that comes later
// replaces a redacted row as any other.
func TestRedactKeepsTheRowsWithoutTheAddress(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		mine, other, theirs := pending("acme", "ntf_1", base), pending("acme", "ntf_2", base), pending("globex", "ntf_3", base)
		other.Recipient = "ivan@zarya.example"
		require.NoError(t, s.Accept(ctx, []history.Row{mine, other, theirs}))
		failed := pending("acme", "ntf_4", base.Add(1))
		failed.Recipient, failed.State, failed.Reason, failed.Revision = "Olga@Zarya.example", history.Failed, "550 <Olga@Zarya.example> unknown", 7
		require.NoError(t, s.Apply(ctx, []history.Row{failed}))

		ids, err := s.Recipients(ctx, "acme", "olga@zarya.example")
		require.NoError(t, err)
		require.Equal(t, []string{"ntf_1", "ntf_4"}, ids)
		n, err := s.Redact(ctx, "acme", "Olga@Zarya.example", "erased:1f2e")
		require.NoError(t, err)
		require.EqualValues(t, 2, n)

		got, err := s.Get(ctx, "acme", "ntf_4")
		require.NoError(t, err)
		require.Equal(t, "erased:1f2e", got.Recipient)
		require.Equal(t, history.Failed, got.State)
		require.Equal(t, "550 <erased:1f2e> unknown", got.Reason)
		page, err := s.List(ctx, history.Query{Tenant: "acme", Recipient: "olga@zarya.example"})
		require.NoError(t, err)
		require.Empty(t, page.Rows)
		page, err = s.List(ctx, history.Query{Tenant: "acme", Recipient: "erased:1f2e"})
		require.NoError(t, err)
		require.Len(t, page.Rows, 2)
		for _, id := range []string{"ntf_2"} {
			r, err := s.Get(ctx, "acme", id)
			require.NoError(t, err)
			require.Equal(t, "ivan@zarya.example", r.Recipient)
		}
		r, err := s.Get(ctx, "globex", "ntf_3")
		require.NoError(t, err)
		require.Equal(t, "olga@zarya.example", r.Recipient, "another tenant's")

		later := got
		later.Revision, later.State = 9, history.Failed
		require.NoError(t, s.Apply(ctx, []history.Row{later}))
		n, err = s.Redact(ctx, "acme", "olga@zarya.example", "erased:1f2e")
		require.NoError(t, err)
		require.Zero(t, n, "nothing left")
	})
}
