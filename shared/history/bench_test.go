package history_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
)

// BenchmarkList reads pages of an index of 200,000 notifications of 50
// tenants (4,000 each: 400 orders, 200 recipients, every state), with and
// without filters, on each backend:
//
//	POSTGRES_URL=… go test -run '^$' -bench List -benchtime 200x ./shared/history/
func BenchmarkList(b *testing.B) {
	const tenants, perTenant = 50, 4000
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			url := be.url(b)
			s, err := history.Open(heraldtest.Context(b), url)
			require.NoError(b, err)
			b.Cleanup(func() { require.NoError(b, s.Close()) })
			load(b, s, tenants, perTenant)
			if be.name == "postgres" {
				// As autovacuum would soon after such a load.
				_, err := be.raw(b, url).Exec("ANALYZE notifications")
				require.NoError(b, err)
			}
			deep, err := s.List(heraldtest.Context(b), history.Query{Tenant: "t07", Limit: 100})
			require.NoError(b, err)
			for i := range 20 { // 21 pages in
				deep, err = s.List(heraldtest.Context(b), history.Query{Tenant: "t07", Limit: 100, Cursor: deep.Next})
				require.NoError(b, err, "page %d", i)
			}

			for _, c := range []struct {
				name string
				q    history.Query
			}{
				{"newest", history.Query{}},
				{"page22", history.Query{Limit: 100, Cursor: deep.Next}},
				{"order", history.Query{Order: "PO-00123"}},
				{"recipient", history.Query{Recipient: "Buyer17@Example.com"}},
				{"state", history.Query{State: history.Failed}},
				{"state+recipient", history.Query{State: history.Delivered, Recipient: "buyer17@example.com"}},
			} {
				q := c.q
				b.Run(c.name, func(b *testing.B) {
					ctx := heraldtest.Context(b)
					i := 0
					for b.Loop() {
						if q.Cursor == "" { // a cursor is its tenant's
							q.Tenant = fmt.Sprintf("t%02d", i%tenants)
						} else {
							q.Tenant = "t07"
						}
						page, err := s.List(ctx, q)
						if err != nil || len(page.Rows) == 0 {
							b.Fatalf("%+v: %d rows, %v", q, len(page.Rows), err)
						}
						i++
					}
				})
			}
		})
	}
}

// load applies tenants×perTenant delivered-or-not notifications, 20,000
// to a transaction.
func load(b *testing.B, s *history.Store, tenants, perTenant int) {
	b.Helper()
	start := time.Now()
	ctx := heraldtest.Context(b)
	batch := make([]history.Row, 0, 20000)
	for t := range tenants {
		for i := range perTenant {
			at := base.Add(time.Duration(i)*time.Minute + time.Duration(t)*time.Millisecond)
			batch = append(batch, history.Row{
				Tenant: fmt.Sprintf("t%02d", t), ID: fmt.Sprintf("ntf_%02d_%05d", t, i),
				Order: fmt.Sprintf("PO-%05d", i/10), Document: "purchase_order", Channel: "email",
				Recipient: fmt.Sprintf("buyer%d@example.com", i%200), State: history.States[i/7%len(history.States)],
				Tries: 1, CreatedAt: at, UpdatedAt: at.Add(time.Minute), Revision: 1,
			})
			if len(batch) == cap(batch) {
				require.NoError(b, s.Apply(ctx, batch))
				batch = batch[:0]
			}
		}
	}
	require.NoError(b, s.Apply(ctx, batch))
	b.Logf("loaded %d rows in %s", tenants*perTenant, time.Since(start).Round(time.Millisecond))
}
