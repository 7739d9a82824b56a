package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/outbox"
	heraldevent "github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// database is one outbox under test, with a handle for the business side.
type database struct {
	kind string
	url  string
	db   *outbox.DB
	// begin starts a business transaction; Add takes what it returns.
	begin func(t testing.TB) (tx any, commit, rollback func())
	// exec runs plain SQL, as a service in another language would.
	exec func(t testing.TB, q string, args ...any)
}

// eachDatabase runs test on SQLite, and on PostgreSQL when POSTGRES_URL is
// set (always in CI), in parallel.
func eachDatabase(t *testing.T, test func(t *testing.T, d database)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		test(t, openSQLite(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := heraldtest.PostgresURL(t)
		if url == "" {
			t.Skip("POSTGRES_URL is not set")
		}
		test(t, openPostgres(t, url))
	})
}

func openSQLite(t testing.TB) database {
	url := "sqlite:" + filepath.Join(t.TempDir(), "service.db")
	d := database{kind: "sqlite", url: url, db: open(t, url)}
	raw, err := sql.Open("sqlite", strings.TrimPrefix(url, "sqlite:")+"?_txlock=immediate&_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close() })
	d.begin = func(t testing.TB) (any, func(), func()) {
		tx, err := raw.Begin()
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback() }) // a test that fails midway
		return tx, func() { require.NoError(t, tx.Commit()) }, func() { require.NoError(t, tx.Rollback()) }
	}
	d.exec = func(t testing.TB, q string, args ...any) {
		_, err := raw.Exec(q, args...)
		require.NoError(t, err)
	}
	return d
}

func openPostgres(t testing.TB, url string) database {
	d := database{kind: "postgres", url: url, db: open(t, url)}
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	d.begin = func(t testing.TB) (any, func(), func()) {
		tx, err := pool.Begin(context.Background())
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) }) // a test that fails midway
		return tx, func() { require.NoError(t, tx.Commit(context.Background())) },
			func() { require.NoError(t, tx.Rollback(context.Background())) }
	}
	d.exec = func(t testing.TB, q string, args ...any) {
		_, err := pool.Exec(context.Background(), q, args...)
		require.NoError(t, err)
	}
	return d
}

func open(t testing.TB, url string) *outbox.DB {
	db, err := outbox.Open(heraldtest.Context(t), url)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	require.NoError(t, db.Init(heraldtest.Context(t)))
	require.NoError(t, db.Init(heraldtest.Context(t)), "a second init changes nothing")
	return db
}

// event is an order event as a publisher adds it.
func event(id string) outbox.Event {
	m := nats.NewMsg("orders.created")
	m.Header.Set(nats.MsgIdHdr, id)
	m.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	m.Data = fmt.Appendf(nil, `{"specversion":"1.0","id":%q}`, id)
	return outbox.Msg(m)
}

// stream is an ORDERS stream on a server of the test's own.
func stream(t testing.TB) jetstream.JetStream {
	n := heraldtest.StartNATS(t)
	_, err := n.JS.CreateStream(heraldtest.Context(t), jetstream.StreamConfig{
		Name: "ORDERS", Subjects: []string{"orders.*"}, Duplicates: 10 * time.Minute,
	})
	require.NoError(t, err)
	return n.JS
}

// startRelay runs a relay until the test ends; its metrics go to the
// returned reader.
func startRelay(t testing.TB, db *outbox.DB, js jetstream.JetStream, cfg outbox.RelayConfig) *sdkmetric.ManualReader {
	reader := sdkmetric.NewManualReader()
	cfg.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	r, err := outbox.NewRelay(db, js, cfg)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, r.Stop(context.Background())) })
	return reader
}

// ids are the Nats-Msg-Ids of the stream's messages, in stream order.
func ids(t testing.TB, js jetstream.JetStream) []string {
	var out []string
	for _, m := range heraldtest.StreamMessages(t, js, "ORDERS") {
		out = append(out, m.Header.Get(nats.MsgIdHdr))
	}
	return out
}

func waitForStatus(t testing.TB, db *outbox.DB, done func(outbox.Status) bool) outbox.Status {
	t.Helper()
	var st outbox.Status
	require.Eventually(t, func() bool {
		var err error
		st, err = db.Status(context.Background())
		require.NoError(t, err)
		return done(st)
	}, 20*time.Second, 20*time.Millisecond)
	return st
}

// An event added in a transaction that commits is published, once, with
// its headers; one added in a transaction that rolls back never is.
func TestAnEventIsPublishedExactlyWhenItsTransactionCommits(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, d database) {
		d.exec(t, `CREATE TABLE orders (id text PRIMARY KEY, status text)`)
		js := stream(t)
		place := func(id string, commit bool) {
			tx, ok, undo := d.begin(t)
			switch tx := tx.(type) {
			case outbox.PgxTx:
				_, err := tx.Exec(context.Background(), `INSERT INTO orders VALUES ($1, 'placed')`, id)
				require.NoError(t, err)
			case outbox.SQLTx:
				_, err := tx.ExecContext(context.Background(), `INSERT INTO orders VALUES ($1, 'placed')`, id)
				require.NoError(t, err)
			}
			require.NoError(t, outbox.Add(context.Background(), tx, event("evt-"+id)))
			if commit {
				ok()
			} else {
				undo()
			}
		}
		place("po-1", true)
		place("po-2", false)
		place("po-3", true)
		startRelay(t, d.db, js, outbox.RelayConfig{Poll: 20 * time.Millisecond})

		st := waitForStatus(t, d.db, func(s outbox.Status) bool { return s.Published == 2 })
		require.Zero(t, st.Backlog)
		require.Equal(t, d.kind, st.Kind)
		require.Equal(t, []string{"evt-po-1", "evt-po-3"}, ids(t, js))
		m := heraldtest.StreamMessages(t, js, "ORDERS")[0]
		require.Equal(t, "orders.created", m.Subject)
		require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", m.Header.Get("traceparent"))
		require.JSONEq(t, `{"specversion":"1.0","id":"evt-po-1"}`, string(m.Data))
	})
}

func TestAddRefusesWhatTheRelayCouldNotPublishOnce(t *testing.T) {
	t.Parallel()
	d := openSQLite(t)
	tx, _, rollback := d.begin(t)
	defer rollback()
	err := outbox.Add(context.Background(), tx, outbox.Msg(nats.NewMsg("orders.created")))
	require.ErrorIs(t, err, outbox.ErrNoMsgID)
	require.ErrorContains(t, outbox.Add(context.Background(), "not a transaction", event("e1")), "pgx.Tx or a *sql.Tx, not string")
}

// More rows than one batch, in id order; every one marked published.
func TestRowsArePublishedInTheOrderOfTheirIDs(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, d database) {
		js := stream(t)
		var want []string
		for i := range 1200 {
			tx, commit, _ := d.begin(t)
			id := fmt.Sprintf("evt-%04d", i)
			require.NoError(t, outbox.Add(context.Background(), tx, event(id)))
			commit()
			want = append(want, id)
		}
		startRelay(t, d.db, js, outbox.RelayConfig{Batch: 500, Poll: 20 * time.Millisecond})
		waitForStatus(t, d.db, func(s outbox.Status) bool { return s.Published == 1200 })
		require.Equal(t, want, ids(t, js))
	})
}

// A relay that published but stopped before marking (its transaction rolled
// back, as a kill leaves it) publishes the rows again; JetStream keeps one
// copy of each and the relay counts the rest as duplicates.
func TestRowsPublishedButNotMarkedArePublishedAgainAndDroppedAsDuplicates(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, d database) {
		js := stream(t)
		for i := range 50 {
			tx, commit, _ := d.begin(t)
			require.NoError(t, outbox.Add(context.Background(), tx, event(fmt.Sprintf("evt-%d", i))))
			commit()
		}
		// What the killed relay did: the messages reached the stream.
		for i := range 30 {
			m, err := event(fmt.Sprintf("evt-%d", i)).Msg(context.Background())
			require.NoError(t, err)
			_, err = js.PublishMsg(context.Background(), m)
			require.NoError(t, err)
		}
		reader := startRelay(t, d.db, js, outbox.RelayConfig{Poll: 20 * time.Millisecond})
		waitForStatus(t, d.db, func(s outbox.Status) bool { return s.Published == 50 })
		require.Len(t, ids(t, js), 50)
		require.EqualValues(t, 30, heraldtest.Total(heraldtest.Counts(t, reader, "herald.outbox.duplicates", "")))
		require.EqualValues(t, 50, heraldtest.Total(heraldtest.Counts(t, reader, "herald.outbox.published", "")))
	})
}

// Rows other languages insert with plain SQL: headers as strings or arrays;
// without Nats-Msg-Id the event's own id is taken, and a tenant's event
// goes under event.MsgID whatever the row says; a row with neither is
// given up with its reason, and the rows after it are not held back.
func TestRowsInsertedWithPlainSQL(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, d database) {
		js := stream(t)
		insert := `INSERT INTO herald_outbox (subject, headers, payload) VALUES ($1, $2, $3)`
		d.exec(t, insert, "orders.created", `{"Nats-Msg-Id": "evt-a", "x-tags": ["one", "two"]}`, []byte(`{"id":"evt-a"}`))
		d.exec(t, insert, "orders.created", `{}`, []byte(`{"specversion":"1.0","id":"evt-b"}`))
		d.exec(t, insert, "orders.created", `{"ce-id": "evt-c", "ce-specversion": "1.0"}`, []byte(`{"n":1}`))
		d.exec(t, insert, "orders.created", `{}`, []byte(`not json`))
		d.exec(t, insert, "orders.created", `{"Nats-Msg-Id": 7}`, []byte(`{}`))
		d.exec(t, insert, "orders created", `{"Nats-Msg-Id": "evt-g"}`, []byte(`{}`))
		d.exec(t, insert, "orders.>", `{"Nats-Msg-Id": "evt-h"}`, []byte(`{}`))
		d.exec(t, insert, "orders.created", `{"Nats-Msg-Id": "evt-f"}`, []byte(`{}`))
		tenants := []byte(`{"specversion":"1.0","id":"evt-t","tenant":"acme"}`)
		d.exec(t, insert, "orders.created", `{"Nats-Msg-Id": "evt-t"}`, tenants)
		reader := startRelay(t, d.db, js, outbox.RelayConfig{Poll: 20 * time.Millisecond})

		st := waitForStatus(t, d.db, func(s outbox.Status) bool { return s.Published == 5 && s.Failed == 4 })
		require.Zero(t, st.Backlog)
		// A tenant's event goes under the id no other tenant can guess,
		// whatever the row said.
		require.Equal(t, []string{"evt-a", "evt-b", "evt-c", "evt-f", heraldevent.MsgID("acme", "evt-t", tenants)}, ids(t, js))
		require.Equal(t, []string{"one", "two"}, heraldtest.StreamMessages(t, js, "ORDERS")[0].Header.Values("x-tags"))
		require.Equal(t, map[string]int64{"permanent": 4}, heraldtest.Counts(t, reader, "herald.outbox.publish_errors", "class"))
	})
}

// A subject no stream captures is retried, with its reason kept, until a
// stream does.
func TestARowNoStreamTakesIsRetriedUntilOneDoes(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, d database) {
		js := stream(t)
		tx, commit, _ := d.begin(t)
		m := nats.NewMsg("stock.moved")
		m.Header.Set(nats.MsgIdHdr, "evt-s")
		require.NoError(t, outbox.Add(context.Background(), tx, outbox.Msg(m)))
		commit()
		startRelay(t, d.db, js, outbox.RelayConfig{Poll: 20 * time.Millisecond})

		st := waitForStatus(t, d.db, func(s outbox.Status) bool { return s.Retrying == 1 })
		require.Equal(t, int64(1), st.Backlog)
		require.Contains(t, st.LastError, "no response from stream")
		_, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "STOCK", Subjects: []string{"stock.*"}})
		require.NoError(t, err)
		waitForStatus(t, d.db, func(s outbox.Status) bool { return s.Published == 1 })
	})
}

// A publish that JetStream never acknowledges — a subscriber takes the
// subject, no stream stores it — may not have been stored: the row stays
// waiting, with the reason, and is published once a stream answers.
func TestARowWhosePublishGetsNoAcknowledgementStaysUnpublished(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, d database) {
		js := stream(t)
		silent, err := js.Conn().SubscribeSync("stock.moved")
		require.NoError(t, err)
		tx, commit, _ := d.begin(t)
		m := nats.NewMsg("stock.moved")
		m.Header.Set(nats.MsgIdHdr, "evt-s")
		require.NoError(t, outbox.Add(context.Background(), tx, outbox.Msg(m)))
		commit()
		startRelay(t, d.db, js, outbox.RelayConfig{Poll: 20 * time.Millisecond, PublishTimeout: 200 * time.Millisecond})

		_, err = silent.NextMsg(20 * time.Second)
		require.NoError(t, err, "the relay published the row")
		st := waitForStatus(t, d.db, func(s outbox.Status) bool { return s.Retrying == 1 || s.Published > 0 })
		require.Zero(t, st.Published, "not acknowledged, not published")
		require.Equal(t, int64(1), st.Backlog)
		require.Contains(t, st.LastError, "no acknowledgement within 200ms")

		_, err = js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "STOCK", Subjects: []string{"stock.*"}})
		require.NoError(t, err)
		waitForStatus(t, d.db, func(s outbox.Status) bool { return s.Published == 1 })
		require.Len(t, heraldtest.StreamMessages(t, js, "STOCK"), 1)
	})
}

// PostgreSQL: the insert's trigger wakes the relay, which would otherwise
// look only once a minute; three relays take turns and none publishes a row
// another has.
func TestPostgresRelaysWakeOnInsertAndTakeTurns(t *testing.T) {
	t.Parallel()
	url := heraldtest.PostgresURL(t)
	if url == "" {
		t.Skip("POSTGRES_URL is not set")
	}
	d := openPostgres(t, url)
	js := stream(t)
	var readers []*sdkmetric.ManualReader
	for range 3 {
		readers = append(readers, startRelay(t, d.db, js, outbox.RelayConfig{Poll: time.Minute, Batch: 50}))
	}
	time.Sleep(200 * time.Millisecond) // each relay has looked once, found nothing and listens

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 250 {
				tx, commit, _ := d.begin(t)
				require.NoError(t, outbox.Add(context.Background(), tx, event(fmt.Sprintf("evt-%d-%d", w, i))))
				commit()
			}
		})
	}
	wg.Wait()
	waitForStatus(t, d.db, func(s outbox.Status) bool { return s.Published == 1000 })
	require.Len(t, ids(t, js), 1000)
	var published, duplicates int64
	for _, r := range readers {
		published += heraldtest.Total(heraldtest.Counts(t, r, "herald.outbox.published", ""))
		duplicates += heraldtest.Total(heraldtest.Counts(t, r, "herald.outbox.duplicates", ""))
	}
	require.EqualValues(t, 1000, published, "each row published by one relay, once")
	require.Zero(t, duplicates)
}

// Published rows are deleted once the retention has passed.
func TestPublishedRowsAreDeletedAfterTheRetention(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, d database) {
		js := stream(t)
		for i := range 3 {
			tx, commit, _ := d.begin(t)
			require.NoError(t, outbox.Add(context.Background(), tx, event(fmt.Sprintf("evt-%d", i))))
			commit()
		}
		r, err := outbox.NewRelay(d.db, js, outbox.RelayConfig{Poll: 20 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, r.Start(context.Background()))
		waitForStatus(t, d.db, func(s outbox.Status) bool { return s.Published == 3 })
		require.NoError(t, r.Stop(context.Background()))

		// Two of them published two days ago.
		if d.kind == "postgres" {
			d.exec(t, `UPDATE herald_outbox SET published_at = now() - interval '2 days' WHERE id <= 2`)
		} else {
			d.exec(t, `UPDATE herald_outbox SET published_at = published_at - 2*86400000000 WHERE id <= 2`)
		}
		startRelay(t, d.db, js, outbox.RelayConfig{Poll: 20 * time.Millisecond, Retention: 24 * time.Hour})
		waitForStatus(t, d.db, func(s outbox.Status) bool { return s.Published == 1 })
	})
}

func TestRelayConfigNamesTheFieldThatIsWrong(t *testing.T) {
	t.Parallel()
	err := outbox.RelayConfig{Batch: 20_000, Poll: time.Millisecond, Retention: time.Second}.Validate()
	require.ErrorContains(t, err, "outbox.batch: 20000")
	require.ErrorContains(t, err, "outbox.poll: 1ms")
	require.ErrorContains(t, err, "outbox.retention: 1s")
}

func TestOpenRefusesAnotherDatabaseWithoutQuotingIt(t *testing.T) {
	t.Parallel()
	_, err := outbox.Open(context.Background(), "mysql://root:hunter2@db/x")
	require.ErrorContains(t, err, "not one of postgres://")
	require.NotContains(t, err.Error(), "hunter2")
	_, err = outbox.Open(context.Background(), "postgres://herald:hunter2@127.0.0.1:1/x?connect_timeout=1")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
}
