package history_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
)

// BenchmarkSubscribers reads pages of one tenant's 100,000 subscribers
// (beside another tenant's 100,000): the first page, a page 500 deep, by
// email, and by phone (SMS or WhatsApp), on each backend:
//
//	POSTGRES_URL=… go test -run '^$' -bench Subscribers -benchtime 200x ./shared/history/
func BenchmarkSubscribers(b *testing.B) {
	const perTenant = 100_000
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			url := be.url(b)
			s, err := history.Open(heraldtest.Context(b), url)
			require.NoError(b, err)
			b.Cleanup(func() { require.NoError(b, s.Close()) })
			loadSubscribers(b, s, perTenant)
			if be.name == "postgres" {
				_, err := be.raw(b, url).Exec("ANALYZE subscribers") // as autovacuum would soon after such a load
				require.NoError(b, err)
			}
			deep := history.SubscriberQuery{Tenant: "acme", Limit: 100}
			for range 500 {
				page, err := s.Subscribers(heraldtest.Context(b), deep)
				require.NoError(b, err)
				deep.Cursor = page.Next
			}
			for _, c := range []struct {
				name string
				q    history.SubscriberQuery
			}{
				{"first", history.SubscriberQuery{Tenant: "acme", Limit: 100}},
				{"page501", deep},
				{"email", history.SubscriberQuery{Tenant: "acme", Email: "Buyer31337@Zarya.example"}},
				{"phone", history.SubscriberQuery{Tenant: "acme", Phone: "+34600031337"}},
				{"whatsapp", history.SubscriberQuery{Tenant: "acme", Phone: "+34700031337"}},
			} {
				b.Run(c.name, func(b *testing.B) {
					ctx := heraldtest.Context(b)
					for b.Loop() {
						page, err := s.Subscribers(ctx, c.q)
						if err != nil || len(page.Subscribers) == 0 {
							b.Fatalf("%+v: %d subscribers, %v", c.q, len(page.Subscribers), err)
						}
					}
				})
			}
		})
	}
}

// loadSubscribers applies perTenant subscribers to each of acme and
// globex, 20,000 to a transaction.
func loadSubscribers(b *testing.B, s *history.Store, perTenant int) {
	b.Helper()
	start := time.Now()
	ctx := heraldtest.Context(b)
	batch := make([]history.SubscriberChange, 0, 20000)
	rev := uint64(0)
	for _, tenant := range []string{"acme", "globex"} {
		for i := range perTenant {
			rev++
			batch = append(batch, history.SubscriberChange{Subscriber: history.Subscriber{Tenant: tenant,
				ID: fmt.Sprintf("u-%06d", i), Name: fmt.Sprintf("Buyer %d", i), Email: fmt.Sprintf("buyer%d@zarya.example", i),
				Phone: fmt.Sprintf("+34600%06d", i), WhatsApp: fmt.Sprintf("+34700%06d", i), Locale: "es",
				Timezone: "Europe/Madrid", UpdatedAt: base, Revision: rev}})
			if len(batch) == cap(batch) {
				require.NoError(b, s.ApplySubscribers(ctx, batch))
				batch = batch[:0]
			}
		}
	}
	require.NoError(b, s.ApplySubscribers(ctx, batch))
	b.Logf("loaded %d subscribers in %s", 2*perTenant, time.Since(start).Round(time.Millisecond))
}
