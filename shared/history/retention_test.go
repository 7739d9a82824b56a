package history_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
)

// A tenant's own retention removes its old rows and nobody else's, and
// keeps those of notifications still in flight.
func TestForgetTenantDeletesOnlyThatTenantsOldRows(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		var rows []history.Row
		for _, r := range []struct {
			tenant, id string
			age        time.Duration
		}{{"acme", "ntf_old", 48 * time.Hour}, {"acme", "ntf_new", time.Hour}, {"zarya", "ntf_old", 48 * time.Hour}} {
			row := pending(r.tenant, r.id, base.Add(-r.age))
			row.State, row.Revision = history.Delivered, 1
			rows = append(rows, row)
		}
		for _, state := range []string{history.Sending, history.Retrying} {
			row := pending("acme", "ntf_"+state, base.Add(-48*time.Hour))
			row.State, row.Revision = state, 1
			rows = append(rows, row)
		}
		require.NoError(t, s.Apply(ctx, rows))
		require.NoError(t, s.Accept(ctx, []history.Row{pending("acme", "ntf_pending", base.Add(-48*time.Hour))}))
		n, err := s.ForgetTenant(ctx, "acme", base.Add(-24*time.Hour))
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		_, err = s.Get(ctx, "acme", "ntf_old")
		require.ErrorIs(t, err, history.ErrNotFound)
		for _, kept := range [][2]string{{"acme", "ntf_new"}, {"zarya", "ntf_old"}, {"acme", "ntf_pending"},
			{"acme", "ntf_sending"}, {"acme", "ntf_retrying"}} {
			_, err = s.Get(ctx, kept[0], kept[1])
			require.NoError(t, err, kept)
		}
	})
}

// The documents of notifications that may still be sent are listed once
// each; delivered and suppressed ones, another tenant's and those without
// an order are not.
func TestUnsentListsTheDocumentsNotificationsMayStillCarry(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		row := func(tenant, id, order, state string) history.Row {
			r := pending(tenant, id, base)
			r.Order, r.State = order, state
			return r
		}
		require.NoError(t, s.Accept(ctx, []history.Row{row("acme", "ntf_1", "PO-1", history.Pending),
			row("acme", "ntf_2", "PO-1", history.Pending), row("acme", "ntf_9", "", history.Pending)}))
		applied := []history.Row{row("acme", "ntf_3", "PO-2", history.Retrying), row("acme", "ntf_4", "PO-3", history.Failed),
			row("acme", "ntf_5", "PO-4", history.Delivered), row("acme", "ntf_6", "PO-5", history.Suppressed),
			row("acme", "ntf_7", "PO-6", history.Sending), row("zarya", "ntf_8", "PO-7", history.Pending)}
		for i := range applied {
			applied[i].Revision = 1
		}
		require.NoError(t, s.Apply(ctx, applied))
		got, err := s.Unsent(ctx, "acme")
		require.NoError(t, err)
		require.ElementsMatch(t, []history.DocumentUse{{"PO-1", "purchase_order"}, {"PO-2", "purchase_order"},
			{"PO-3", "purchase_order"}, {"PO-6", "purchase_order"}}, got)
	})
}
