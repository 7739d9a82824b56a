package history_test

import (
	"cmp"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to make and drop test schemas
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// backend is a database the store runs on. url gives a fresh, empty
// database for each call; raw opens it with database/sql, to look under
// the store.
type backend struct {
	name string
	url  func(tb testing.TB) string
	raw  func(tb testing.TB, url string) *sql.DB
}

// backends are SQLite always, and PostgreSQL when POSTGRES_URL is set.
func backends() []backend {
	all := []backend{{name: "sqlite", url: sqliteURL, raw: sqliteRaw}}
	if os.Getenv("POSTGRES_URL") != "" {
		all = append(all, backend{name: "postgres", url: postgresURL, raw: postgresRaw})
	}
	return all
}

func sqliteURL(tb testing.TB) string {
	return "sqlite:" + filepath.Join(tb.TempDir(), "history.db")
}

func sqliteRaw(tb testing.TB, url string) *sql.DB {
	db, err := sql.Open("sqlite", strings.TrimPrefix(url, "sqlite:"))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// postgresURL is a database of the test's own: a schema, dropped at its end.
func postgresURL(tb testing.TB) string { return heraldtest.PostgresURL(tb) }

func postgresRaw(tb testing.TB, url string) *sql.DB {
	db, err := sql.Open("pgx", url)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// open is a store on a fresh database of b, closed when the test ends.
func (b backend) open(tb testing.TB) *history.Store {
	tb.Helper()
	s, err := history.Open(heraldtest.Context(tb), b.url(tb))
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, s.Close()) })
	return s
}

// eachBackend runs test against every backend, in parallel.
func eachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	t.Helper()
	if os.Getenv("CI") != "" && os.Getenv("POSTGRES_URL") == "" {
		t.Fatal("CI runs every store test on PostgreSQL too: .ci/run exports POSTGRES_URL")
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b)
		})
	}
}

var base = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// pending is a notification as the router records it when creating it.
func pending(tenant, id string, created time.Time) history.Row {
	return history.Row{
		Tenant: tenant, ID: id, Order: "PO-1", Document: "purchase_order", Channel: "email",
		Recipient: "olga@zarya.example", State: history.Pending, CreatedAt: created, UpdatedAt: created,
	}
}

// newestFirst sorts rows as a listing does.
func newestFirst(rows []history.Row) []history.Row {
	return slices.SortedFunc(slices.Values(rows), func(a, b history.Row) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
}

func ids(rows []history.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// walk lists every page of q, calling between after each.
func walk(t *testing.T, s *history.Store, q history.Query, between func()) []history.Row {
	t.Helper()
	ctx := heraldtest.Context(t)
	var all []history.Row
	for range 1000 {
		page, err := s.List(ctx, q)
		require.NoError(t, err)
		all = append(all, page.Rows...)
		if page.Next == "" {
			return all
		}
		require.Regexp(t, `^[A-Za-z0-9_-]+$`, page.Next, "a cursor is URL-safe")
		q.Cursor = page.Next
		between()
	}
	t.Fatal("the listing never ended")
	return nil
}

func TestPagesWalkEveryRowOnceWhileRowsArrive(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		var rows []history.Row
		for i := range 53 {
			// Three rows to a microsecond: the id breaks the tie. Random
			// ids, so id order is not insertion order.
			created := base.Add(time.Duration(i/3)*time.Second + 7*time.Microsecond)
			rows = append(rows, pending("acme", "ntf_"+rand.Text(), created))
		}
		require.NoError(t, s.Accept(ctx, rows))
		require.NoError(t, s.Accept(ctx, []history.Row{pending("globex", "ntf_globex", base.Add(30*time.Second))}))

		arrived := 0
		got := walk(t, s, history.Query{Tenant: "acme", Limit: 7}, func() {
			arrived++
			newer := pending("acme", fmt.Sprintf("ntf_new%02d", arrived), base.Add(time.Hour+time.Duration(arrived)))
			require.NoError(t, s.Accept(ctx, []history.Row{newer}))
		})

		require.Equal(t, 7, arrived, "53 rows are 8 pages of 7")
		want := newestFirst(rows)
		require.Equal(t, ids(want), ids(got), "every row once, newest first, none of those that arrived meanwhile")
		first := want[0]
		first.CreatedAt, first.UpdatedAt = first.CreatedAt.UTC(), first.UpdatedAt.UTC()
		require.Equal(t, first, got[0], "a row reads back as written")

		page, err := s.List(ctx, history.Query{Tenant: "acme", Limit: 3})
		require.NoError(t, err)
		require.Equal(t, []string{"ntf_new07", "ntf_new06", "ntf_new05"}, ids(page.Rows), "a new listing starts at the newest")
	})
}

func TestFiltersCombine(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		var rows []history.Row
		recipients := []string{"Olga@Zarya.example", "ivan@zarya.example", "olga@zarya.example"}
		for i := range 60 {
			r := pending("acme", fmt.Sprintf("ntf_%02d", i), base.Add(time.Duration(i)*time.Minute))
			r.Order = []string{"PO-1", "PO-2", ""}[i%3]
			r.Recipient = recipients[i/3%3]
			r.State = history.States[i%len(history.States)]
			r.Revision = 1
			rows = append(rows, r)
		}
		require.NoError(t, s.Apply(ctx, rows))
		other := pending("globex", "ntf_g", base)
		other.State, other.Revision = history.Failed, 1
		require.NoError(t, s.Apply(ctx, []history.Row{other}))

		for _, q := range []history.Query{
			{Order: "PO-1"},
			{Recipient: "OLGA@zarya.EXAMPLE"},
			{State: history.Failed},
			{Order: "PO-2", State: history.Delivered},
			{Order: "PO-1", Recipient: "olga@ZARYA.example", State: history.Sending},
			{Order: "PO-9"},
			{Since: base.Add(50 * time.Minute)},
			{Until: base.Add(7 * time.Minute)},
			{Order: "PO-1", Since: base.Add(5 * time.Minute), Until: base.Add(40 * time.Minute)},
		} {
			var want []history.Row
			for _, r := range rows {
				if (q.Order == "" || r.Order == q.Order) &&
					(q.Recipient == "" || strings.EqualFold(r.Recipient, q.Recipient)) &&
					(q.State == "" || r.State == q.State) &&
					(q.Since.IsZero() || !r.CreatedAt.Before(q.Since)) &&
					(q.Until.IsZero() || r.CreatedAt.Before(q.Until)) {
					want = append(want, r)
				}
			}
			q.Tenant, q.Limit = "acme", 2
			got := walk(t, s, q, func() {})
			require.Equal(t, ids(newestFirst(want)), ids(got), "%+v", q)
		}
	})
}

func TestCursorIsBoundToItsQuery(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		var rows []history.Row
		for i := range 5 {
			rows = append(rows, pending("acme", fmt.Sprintf("ntf_%d", i), base.Add(time.Duration(i)*time.Second)))
			rows = append(rows, pending("globex", fmt.Sprintf("ntf_%d", i), base.Add(time.Duration(i)*time.Second)))
		}
		require.NoError(t, s.Accept(ctx, rows))
		q := history.Query{Tenant: "acme", Recipient: "Olga@Zarya.example", Limit: 2}
		page, err := s.List(ctx, q)
		require.NoError(t, err)
		require.NotEmpty(t, page.Next)

		// The same query in other words, or with another page size, goes on.
		same := q
		same.Recipient, same.Limit, same.Cursor = "OLGA@zarya.example", 3, page.Next
		next, err := s.List(ctx, same)
		require.NoError(t, err)
		require.Equal(t, []string{"ntf_2", "ntf_1", "ntf_0"}, ids(next.Rows))

		raw, err := base64.RawURLEncoding.DecodeString(page.Next)
		require.NoError(t, err)
		tampered := slices.Clone(raw)
		tampered[3] ^= 1
		for name, bad := range map[string]history.Query{
			"another tenant's":       {Tenant: "globex", Recipient: q.Recipient, Cursor: page.Next},
			"without the filter":     {Tenant: "acme", Cursor: page.Next},
			"with another filter":    {Tenant: "acme", Recipient: q.Recipient, State: history.Pending, Cursor: page.Next},
			"another recipient":      {Tenant: "acme", Recipient: "ivan@zarya.example", Cursor: page.Next},
			"within a time range":    {Tenant: "acme", Recipient: q.Recipient, Since: base, Cursor: page.Next},
			"not base64":             {Tenant: "acme", Recipient: q.Recipient, Cursor: "not a cursor!"},
			"too short":              {Tenant: "acme", Recipient: q.Recipient, Cursor: page.Next[:10]},
			"with its digest edited": {Tenant: "acme", Recipient: q.Recipient, Cursor: base64.RawURLEncoding.EncodeToString(tampered)},
		} {
			_, err := s.List(ctx, bad)
			require.ErrorIs(t, err, history.ErrBadCursor, name)
		}
	})
}

func TestRevisionsOnlyMoveForward(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		get := func(id string) history.Row {
			t.Helper()
			r, err := s.Get(ctx, "acme", id)
			require.NoError(t, err)
			return r
		}
		created := base.Add(123456789 * time.Nanosecond) // stored to the µs
		twice := pending("acme", "ntf_1", created)
		require.NoError(t, s.Accept(ctx, []history.Row{twice, twice}), "a record seen twice in one batch")
		r := get("ntf_1")
		require.Equal(t, history.Pending, r.State)
		require.Equal(t, uint64(0), r.Revision)
		require.Equal(t, base.Add(123456*time.Microsecond), r.CreatedAt)

		// The ledger's first change replaces the pending row, keeping what
		// only the pending row knew and when it was created.
		change := history.Row{
			Tenant: "acme", ID: "ntf_1", Channel: "email", State: history.Sending, Tries: 1,
			CreatedAt: base.Add(time.Minute), UpdatedAt: base.Add(time.Minute), Revision: 5,
		}
		require.NoError(t, s.Apply(ctx, []history.Row{change}))
		r = get("ntf_1")
		require.Equal(t, history.Sending, r.State)
		require.Equal(t, uint64(5), r.Revision)
		require.Equal(t, "PO-1", r.Order)
		require.Equal(t, "purchase_order", r.Document)
		require.Equal(t, "olga@zarya.example", r.Recipient)
		require.Equal(t, base.Add(123456*time.Microsecond), r.CreatedAt)
		require.Equal(t, base.Add(time.Minute), r.UpdatedAt)

		// An older change, and the pending record again, change nothing.
		older := change
		older.State, older.Revision = history.Delivered, 3
		require.NoError(t, s.Apply(ctx, []history.Row{older}))
		require.NoError(t, s.Accept(ctx, []history.Row{pending("acme", "ntf_1", created)}))
		require.Equal(t, history.Sending, get("ntf_1").State)
		require.Equal(t, uint64(5), get("ntf_1").Revision)

		// Of one batch's changes to a row, the highest revision wins,
		// whatever their order.
		batch := []history.Row{change, change, change}
		batch[0].State, batch[0].Revision, batch[0].Reason = history.Failed, 9, "mailbox full"
		batch[1].State, batch[1].Revision = history.Delivered, 7
		batch[2].State, batch[2].Revision = history.Retrying, 8
		require.NoError(t, s.Apply(ctx, batch))
		r = get("ntf_1")
		require.Equal(t, history.Failed, r.State)
		require.Equal(t, "mailbox full", r.Reason)
		require.Equal(t, uint64(9), r.Revision)

		// A replay of the same revision is not a change.
		replay := batch[0]
		replay.State = history.Delivered
		require.NoError(t, s.Apply(ctx, []history.Row{replay}))
		require.Equal(t, history.Failed, get("ntf_1").State)

		// What the ledger says it sets, even over what the pending row said.
		moved := batch[0]
		moved.Revision, moved.Recipient, moved.Order = 10, "Ivan@Zarya.example", "PO-2"
		require.NoError(t, s.Apply(ctx, []history.Row{moved}))
		r = get("ntf_1")
		require.Equal(t, "Ivan@Zarya.example", r.Recipient)
		require.Equal(t, "PO-2", r.Order)
		page, err := s.List(ctx, history.Query{Tenant: "acme", Recipient: "ivan@zarya.EXAMPLE"})
		require.NoError(t, err)
		require.Equal(t, []string{"ntf_1"}, ids(page.Rows))

		// A notification the ledger tells of first is created when it last
		// changed, when the change does not say when it was created.
		fresh := history.Row{Tenant: "acme", ID: "ntf_2", State: history.Delivered, UpdatedAt: base.Add(time.Hour), Revision: 2}
		require.NoError(t, s.Apply(ctx, []history.Row{fresh}))
		require.Equal(t, base.Add(time.Hour), get("ntf_2").CreatedAt)

		// Rows the listing could not answer for are refused whole.
		bad := fresh
		bad.ID, bad.State = "ntf_3", "sent"
		require.Error(t, s.Apply(ctx, []history.Row{{Tenant: "acme", ID: "ntf_4", State: history.Sending, Revision: 1}, bad}))
		bad.State, bad.Revision = history.Sending, 0
		require.Error(t, s.Apply(ctx, []history.Row{bad}))
		_, err = s.Get(ctx, "acme", "ntf_4")
		require.ErrorIs(t, err, history.ErrNotFound)
	})
}

func TestForgetDeletesRowsLastChangedBefore(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		var rows []history.Row
		for i, age := range []time.Duration{72 * time.Hour, 25 * time.Hour, time.Hour} {
			r := pending("acme", fmt.Sprintf("ntf_%d", i), base.Add(-100*time.Hour))
			r.State, r.Revision, r.UpdatedAt = history.Delivered, 1, base.Add(-age)
			rows = append(rows, r)
		}
		require.NoError(t, s.Apply(ctx, rows))
		n, err := s.Forget(ctx, base.Add(-24*time.Hour))
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		for _, id := range []string{"ntf_0", "ntf_1"} {
			_, err := s.Get(ctx, "acme", id)
			require.ErrorIs(t, err, history.ErrNotFound)
		}
		_, err = s.Get(ctx, "acme", "ntf_2")
		require.NoError(t, err)
		n, err = s.Forget(ctx, base.Add(-24*time.Hour))
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

func TestQueriesAreChecked(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		var rows []history.Row
		for i := range history.MaxLimit + 1 {
			rows = append(rows, pending("acme", fmt.Sprintf("ntf_%03d", i), base.Add(time.Duration(i)*time.Second)))
		}
		require.NoError(t, s.Accept(ctx, rows))

		for limit, size := range map[int]int{0: history.DefaultLimit, 1: 1, history.MaxLimit: history.MaxLimit} {
			page, err := s.List(ctx, history.Query{Tenant: "acme", Limit: limit})
			require.NoError(t, err)
			require.Len(t, page.Rows, size, "limit %d", limit)
			require.NotEmpty(t, page.Next)
		}
		for field, q := range map[string]history.Query{
			"limit":  {Tenant: "acme", Limit: history.MaxLimit + 1},
			"limit ": {Tenant: "acme", Limit: -1},
			"state":  {Tenant: "acme", State: "sent"},
			"tenant": {Order: "PO-1"},
			"since":  {Tenant: "acme", Since: base, Until: base},
		} {
			_, err := s.List(ctx, q)
			require.ErrorIs(t, err, history.ErrBadQuery, field)
			require.Contains(t, err.Error(), strings.TrimSpace(field))
		}
		_, err := s.Get(ctx, "acme", "ntf_none")
		require.ErrorIs(t, err, history.ErrNotFound)
		_, err = s.Get(ctx, "globex", "ntf_000")
		require.ErrorIs(t, err, history.ErrNotFound, "another tenant's notification")
	})
}

func TestOpenTwiceFindsTheSchema(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		url, ctx := b.url(t), heraldtest.Context(t)
		// Replicas starting together: one creates the schema, the others
		// wait for it and find it made.
		stores := make([]*history.Store, 4)
		errs := make([]error, len(stores))
		var wg sync.WaitGroup
		for i := range stores {
			wg.Go(func() { stores[i], errs[i] = history.Open(ctx, url) })
		}
		wg.Wait()
		for i, s := range stores {
			require.NoError(t, errs[i])
			require.Equal(t, b.name, s.Kind())
			require.NoError(t, s.Ping(ctx))
		}
		require.NoError(t, stores[0].Accept(ctx, []history.Row{pending("acme", "ntf_1", base)}))
		for _, s := range stores {
			require.NoError(t, s.Close())
		}

		again, err := history.Open(ctx, url)
		require.NoError(t, err)
		_, err = again.Get(ctx, "acme", "ntf_1")
		require.NoError(t, err, "the rows outlive the store")
		require.NoError(t, again.Close())

		var versions int
		raw := b.raw(t, url)
		require.NoError(t, raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM history_schema").Scan(&versions))
		require.Equal(t, 3, versions, "one per migration")
		if b.name == "sqlite" {
			var mode string
			require.NoError(t, raw.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode))
			require.Equal(t, "wal", mode)
		}

		// A schema a newer Herald migrated is not one to write to.
		_, err = raw.ExecContext(ctx, "INSERT INTO history_schema (version) VALUES (99)")
		require.NoError(t, err)
		_, err = history.Open(ctx, url)
		require.ErrorContains(t, err, "newer")
	})
}

func TestOpenErrorsNeverQuoteThePassword(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-Pa55word"
	refused, err := heraldtest.RefusingPort(t, net.IPv4(127, 0, 0, 1))
	require.NoError(t, err)
	for url, says := range map[string]string{
		"mysql://herald:" + secret + "@db.example/herald":                                                          "postgres://",
		"herald:" + secret + "@db.example/herald":                                                                  "sqlite:PATH",
		fmt.Sprintf("postgres://herald:%s@127.0.0.1:%d/herald?sslmode=disable&connect_timeout=5", secret, refused): "postgres",
		"postgresql://herald:" + secret + "@db.example:port/herald":                                                "postgres",
		"postgres://herald:" + secret + "@db.example/herald?sslmode=sometimes":                                     "postgres",
		"sqlite:": "sqlite:PATH",
	} {
		s, err := history.Open(heraldtest.Context(t), url)
		require.Nil(t, s)
		require.Error(t, err)
		require.Contains(t, err.Error(), says)
		heraldtest.RequireNoSecret(t, err.Error(), "Open's error", secret)
	}
}

// The two feeds race: the index must end the same whichever it reads
// first, in whatever batches — as it does when it is rebuilt. The row has
// the ledger's state, what either knew, and the earlier creation time.
func TestTheFeedsCommuteInAnyOrderAndBatching(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := heraldtest.Context(t)
		accepted := pending("acme", "ntf_1", base.Add(2*time.Second))
		claimed := history.Row{Tenant: "acme", ID: "ntf_1", Order: "PO-1", Channel: "email", State: history.Sending,
			CreatedAt: base.Add(time.Second), UpdatedAt: base.Add(time.Second), Revision: 3}
		delivered := claimed
		delivered.State, delivered.Provider, delivered.Tries, delivered.Revision = history.Delivered, "ses", 1, 4
		delivered.CreatedAt, delivered.UpdatedAt = base.Add(3*time.Second), base.Add(3*time.Second)

		var want history.Row
		for i, feed := range [][]func(*history.Store) error{
			{func(s *history.Store) error { return s.Accept(ctx, []history.Row{accepted}) },
				func(s *history.Store) error { return s.Apply(ctx, []history.Row{claimed, delivered}) }},
			{func(s *history.Store) error { return s.Apply(ctx, []history.Row{delivered, claimed}) },
				func(s *history.Store) error { return s.Accept(ctx, []history.Row{accepted}) }},
			{func(s *history.Store) error { return s.Apply(ctx, []history.Row{claimed}) },
				func(s *history.Store) error { return s.Accept(ctx, []history.Row{accepted}) },
				func(s *history.Store) error { return s.Apply(ctx, []history.Row{delivered}) }},
		} {
			s := b.open(t)
			for _, write := range feed {
				require.NoError(t, write(s))
			}
			got, err := s.Get(ctx, "acme", "ntf_1")
			require.NoError(t, err)
			if i == 0 {
				want = got
				require.Equal(t, history.Delivered, got.State)
				require.Equal(t, base.Add(time.Second), got.CreatedAt, "the earlier of the two")
				require.Equal(t, "purchase_order", got.Document, "what only the record knew")
				continue
			}
			require.Equal(t, want, got, "order %d", i)
		}
	})
}

func TestProviderMessagesLeadToTheirNotification(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		delivered := func(tenant, id, message string, revision uint64) history.Row {
			return history.Row{Tenant: tenant, ID: id, Channel: "email", State: history.Delivered, Provider: "sendgrid",
				ProviderMessageID: message, Tries: 1, CreatedAt: base, UpdatedAt: base, Revision: revision}
		}
		require.NoError(t, s.Apply(ctx, []history.Row{delivered("acme", "ntf_1", "sg-1", 3), delivered("globex", "ntf_2", "sg-2", 4)}))
		// Pending and failed rows have no message id: none is joined to "".
		require.NoError(t, s.Accept(ctx, []history.Row{pending("acme", "ntf_3", base)}))
		found, err := s.ByProviderMessage(ctx, "sg-2")
		require.NoError(t, err)
		require.Equal(t, []string{"ntf_2"}, ids(found))
		require.Equal(t, "globex", found[0].Tenant)

		found, err = s.ByProviderMessage(ctx, "sg-9")
		require.NoError(t, err)
		require.Empty(t, found, "not indexed yet is no error")
		found, err = s.ByProviderMessage(ctx, "")
		require.NoError(t, err)
		require.Empty(t, found)
	})
}
