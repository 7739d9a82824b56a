package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	svchistory "github.com/heraldhq/herald/services/history"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
)

// BenchmarkIndexing measures how many ledger changes a second the history
// service writes to the index: b.N notifications, each claimed (sending)
// then delivered — two changes each, as a delivery writes them — are
// stored in the ledger's stream first, then the service catches up. Run
// against SQLite, and against PostgreSQL when POSTGRES_URL is set:
//
//	go test -run '^$' -bench Indexing -benchtime 20000x ./services/history/
func BenchmarkIndexing(b *testing.B) {
	stores := map[string]string{"sqlite": "sqlite:" + filepath.Join(b.TempDir(), "history.db")}
	if url := os.Getenv("POSTGRES_URL"); url != "" {
		stores["postgres"] = url
	}
	for name, url := range stores {
		b.Run(name, func(b *testing.B) {
			n := heraldtest.StartNATSWithStreams(b)
			ctx := heraldtest.Context(b)
			store, err := history.Open(ctx, url)
			require.NoError(b, err)
			b.Cleanup(func() { _ = store.Close() })
			tenant := fmt.Sprintf("bench%d", time.Now().UnixNano()%1_000_000)
			publishChanges(b, n.JS, tenant, b.N)

			b.ResetTimer()
			svc, err := svchistory.New(n.JS, svchistory.Config{Store: store})
			require.NoError(b, err)
			require.NoError(b, svc.Start(ctx))
			last := notification.ID(fmt.Sprintf("%s:PO-%d:1:purchase_order:email:olga@zarya.example", tenant, b.N-1))
			for {
				r, err := store.Get(ctx, tenant, last)
				if err == nil && r.State == history.Delivered {
					break
				}
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "changes/s")
			b.ReportMetric(0, "ns/op")
			require.NoError(b, svc.Stop(context.Background()))
		})
	}
}

// publishChanges stores two ledger changes for each of n notifications,
// as raw KV writes (the ledger's own Put reads first, which the benchmark
// does not need).
func publishChanges(b *testing.B, js jetstream.JetStream, tenant string, n int) {
	b.Helper()
	ctx := heraldtest.Context(b)
	var futures []jetstream.PubAckFuture
	for i := range n {
		key := fmt.Sprintf("%s:PO-%d:1:purchase_order:email:olga@zarya.example", tenant, i)
		e := ledger.Entry{DedupeKey: key, NotificationID: notification.ID(key), Tenant: tenant, Channel: "email",
			Order: fmt.Sprintf("PO-%d", i), Document: "purchase_order", Recipient: "olga@zarya.example",
			State: ledger.Sending, UpdatedAt: time.Now()}
		for _, state := range []ledger.State{ledger.Sending, ledger.Delivered} {
			e.State = state
			if state == ledger.Delivered {
				e.Provider, e.ProviderMessageID, e.Tries = "ses", "ses-1", 1
			}
			body, err := json.Marshal(e)
			require.NoError(b, err)
			msg := nats.NewMsg("$KV." + ledger.Bucket + "." + ledger.Key(tenant, key))
			msg.Data = body
			f, err := js.PublishMsgAsync(msg)
			require.NoError(b, err)
			futures = append(futures, f)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal("publishing the ledger changes timed out")
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			b.Fatal(err)
		}
	}
}
