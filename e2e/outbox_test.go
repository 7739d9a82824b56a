package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// relayProcess, set in a child's environment, makes the test binary an
// outbox relay process (TestMain): `herald run outbox-relay` as a process
// the test can kill with SIGKILL, mid-batch.
const relayProcess = "HERALD_E2E_OUTBOX_RELAY"

// runRelayProcess runs the outbox-relay service as `herald run
// outbox-relay` does, on NATS_URL and OUTBOX_URL, until it is killed.
func runRelayProcess() int {
	var cfg app.Config
	cfg.Services = []string{"outbox-relay"}
	cfg.NATS.URL, cfg.Outbox.URL = os.Getenv("NATS_URL"), os.Getenv("OUTBOX_URL")
	cfg.Outbox.Batch, cfg.Outbox.Poll = 50, 50*time.Millisecond
	cfg.HTTP.Listen, cfg.API.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Streams.SkipApply = true
	a, err := app.New(cfg, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err == nil {
		err = a.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	select {} // until killed
}

// A thousand business transactions write an order and its event in one
// transaction, while the relay process is killed three times mid-stream and
// the database crashes and restarts once; a hundred more transactions roll
// back. Published rows a killed relay had not marked are published again —
// JetStream's duplicate window (shrunk to a second here) or Herald's ledger
// stops the copy: each recipient of each committed order receives exactly
// one email, and no rolled-back order sends anything.
func TestOutboxEventsAreDeliveredOnceThroughRelayKillsAndADatabaseRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("outbox chaos")
	}
	t.Parallel()
	p := startPipeline(t, withoutDocuments)
	shrinkDuplicateWindows(t, p, time.Second)
	pg := heraldtest.StartPostgresServer(t)
	ctx := context.Background()
	db, err := outbox.Open(ctx, pg.URL())
	require.NoError(t, err)
	t.Cleanup(db.Close)
	require.NoError(t, db.Init(ctx))
	pool, err := pgxpool.New(ctx, pg.URL())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, `CREATE TABLE purchase_orders (id text PRIMARY KEY, supplier text NOT NULL)`)
	require.NoError(t, err)

	r := &processes{t: t, env: []string{relayProcess + "=1", "NATS_URL=" + p.dev.NATS.URL(), "OUTBOX_URL=" + pg.URL()}}
	r.start()
	defer r.stop()

	const orders, rolledBack = 1000, 100
	var committed atomic.Int64
	// place is the service's code: the order and its event, one transaction,
	// tried again after a failure — which may have committed (a connection
	// cut during COMMIT), so an order already there is not placed twice.
	place := func(id string, commit bool) {
		payload := sample(t, "order.created.json", func(m map[string]any) {
			m["id"] = "evt-" + id
			m["data"].(map[string]any)["order"].(map[string]any)["id"] = id
		})
		m := nats.NewMsg("orders.created")
		m.Header.Set(nats.MsgIdHdr, "evt-"+id)
		m.Data = payload
		for try := 0; ; try++ {
			require.Less(t, try, 600, "order %s: the database did not come back", id)
			err := func() error {
				tx, err := pool.Begin(ctx)
				if err != nil {
					return err
				}
				defer func() { _ = tx.Rollback(ctx) }()
				tag, err := tx.Exec(ctx, `INSERT INTO purchase_orders VALUES ($1, 'Zarya') ON CONFLICT DO NOTHING`, id)
				if err != nil || tag.RowsAffected() == 0 {
					return err // placed by a try whose answer was lost
				}
				if err := outbox.Add(ctx, tx, outbox.Msg(m)); err != nil {
					return err
				}
				if !commit {
					return nil // the deferred rollback
				}
				return tx.Commit(ctx)
			}()
			if err == nil {
				if commit {
					committed.Add(1)
				}
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// The chaos, at points in the stream of commits.
	done := make(chan struct{})
	var chaos sync.WaitGroup
	chaos.Go(func() {
		at := func(n int64) bool {
			for committed.Load() < n {
				select {
				case <-done:
					return false
				case <-time.After(5 * time.Millisecond):
				}
			}
			return true
		}
		for i, n := range []int64{150, 400, 650} {
			if !at(n) {
				return
			}
			time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
			r.kill()
			time.Sleep(time.Duration(100+rand.IntN(200)) * time.Millisecond)
			r.start()
			if i == 1 {
				if !at(500) {
					return
				}
				pg.Restart()
			}
		}
	})

	work := make(chan int)
	var writers sync.WaitGroup
	for range 4 {
		writers.Go(func() {
			for i := range work {
				place(fmt.Sprintf("PO-OUTBOX-%04d", i), true)
				if i%10 == 0 {
					place(fmt.Sprintf("PO-ROLLEDBACK-%04d", i), false)
				}
			}
		})
	}
	for i := range orders {
		work <- i
	}
	close(work)
	writers.Wait()
	close(done)
	chaos.Wait()
	require.EqualValues(t, orders, committed.Load())

	require.Eventually(t, func() bool {
		st, err := db.Status(ctx)
		return err == nil && st.Backlog == 0 && st.Failed == 0 && st.Published == orders
	}, 2*time.Minute, 100*time.Millisecond, "the relay published every committed event")
	p.settle(t)

	sent := map[string]int{}
	for _, m := range p.mail(t) {
		order := m.Subject[strings.Index(m.Subject, "PO-"):][:len("PO-OUTBOX-0000")]
		sent[order+" "+m.To]++
	}
	for key, n := range sent {
		require.True(t, strings.HasPrefix(key, "PO-OUTBOX-"), "a rolled-back order sent nothing: %s", key)
		require.Equal(t, 1, n, "exactly one email: %s", key)
	}
	require.Len(t, sent, orders*2, "each of the two recipients of every order received it")
	t.Logf("relays started %d times; %d orders, %d rolled back", r.started, orders, rolledBack)
}

// A relay that stopped before marking, with its rows published again only
// after the stream's duplicate window has passed (a long outage): JetStream
// stores the copy, and Herald's ledger is what stops a second email.
func TestAnOutboxEventPublishedAgainPastTheDuplicateWindowSendsNothingTwice(t *testing.T) {
	t.Parallel()
	p := startPipeline(t, withoutDocuments)
	shrinkDuplicateWindows(t, p, time.Second)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "service.db")
	db, err := outbox.Open(ctx, "sqlite:"+path)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	require.NoError(t, db.Init(ctx))
	relay := func() (stop func()) {
		r, err := outbox.NewRelay(db, p.js, outbox.RelayConfig{Poll: 20 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, r.Start(ctx))
		return func() { require.NoError(t, r.Stop(ctx)) }
	}

	service, err := sql.Open("sqlite", path+"?_txlock=immediate&_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	t.Cleanup(func() { _ = service.Close() })
	tx, err := service.Begin()
	require.NoError(t, err)
	m := nats.NewMsg("orders.created")
	m.Header.Set(nats.MsgIdHdr, "evt-late-1")
	m.Data = sample(t, "order.created.json", func(m map[string]any) { m["id"] = "evt-late-1" })
	require.NoError(t, outbox.Add(ctx, tx, outbox.Msg(m)))
	require.NoError(t, tx.Commit())

	stop := relay()
	require.Eventually(t, func() bool { return len(p.mail(t)) == 2 }, 30*time.Second, 20*time.Millisecond)
	stop()
	// What a relay killed after publishing leaves: the row unmarked.
	_, err = service.Exec(`UPDATE herald_outbox SET published_at = NULL`)
	require.NoError(t, err)
	time.Sleep(1500 * time.Millisecond) // past the one-second window
	defer relay()()
	require.Eventually(t, func() bool {
		st, err := db.Status(ctx)
		return err == nil && st.Published == 1
	}, 30*time.Second, 20*time.Millisecond)
	require.Len(t, p.streamMessages(t, "ORDERS"), 2, "past the window, JetStream stored the copy")
	p.settle(t)
	require.Len(t, p.mail(t), 2, "the ledger stopped a second email to each recipient")
}
