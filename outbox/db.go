package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/heraldhq/herald/shared/redact"
)

// DB is an outbox table the relay reads and `herald outbox status` reports
// on, in PostgreSQL or SQLite.
type DB struct {
	s     store
	close func()
}

// store is what differs between the two databases.
type store interface {
	kind() string
	init(ctx context.Context) error
	// batch hands fn the oldest unpublished rows, at most limit, inside one
	// transaction that holds the relay's turn, and records fn's results in
	// it. errBusy: another relay has the turn.
	batch(ctx context.Context, limit int, fn func([]row) []result) (int, error)
	// waiter is how one relay waits for rows.
	waiter() waiter
	// purge deletes up to limit rows published before t.
	purge(ctx context.Context, before time.Time, limit int) (int64, error)
	status(ctx context.Context) (Status, error)
	ping(ctx context.Context) error
}

// waiter's wait returns when rows may have been added, or after d.
type waiter interface {
	wait(ctx context.Context, d time.Duration)
	close()
}

// errBusy is a batch another relay is publishing: its turn.
var errBusy = errors.New("outbox: another relay has the turn")

// row is one unpublished event.
type row struct {
	id       int64
	subject  string
	headers  []byte
	payload  []byte
	attempts int
}

// result is what became of a row: published (err nil), or not, and
// whether trying again could help.
type result struct {
	id        int64
	err       error
	permanent bool
}

// Status is an outbox's state.
type Status struct {
	// Kind is "postgres" or "sqlite".
	Kind string `json:"kind"`
	// Backlog is the rows waiting to be published.
	Backlog int64 `json:"backlog"`
	// Oldest is when the oldest waiting row was inserted (zero if none).
	Oldest time.Time `json:"oldest,omitzero"`
	// Retrying is the waiting rows that failed at least once, and
	// LastError the latest reason among them.
	Retrying  int64  `json:"retrying"`
	LastError string `json:"last_error,omitempty"`
	// Failed is the rows the relay gave up on (a reason that another try
	// cannot change: no event id, a payload over the server's limit…).
	// They stay until someone looks: UPDATE … SET failed_at = NULL retries.
	Failed int64 `json:"failed"`
	// Published is the rows published and kept until the retention ends.
	Published int64 `json:"published"`
}

// Age is how long the oldest waiting row has waited, at now.
func (s Status) Age(now time.Time) time.Duration {
	if s.Oldest.IsZero() {
		return 0
	}
	return now.Sub(s.Oldest)
}

// accepted names the URL forms Open takes, for its errors.
const accepted = "postgres://…, postgresql://… or sqlite:PATH"

// Open connects to the outbox database url names: postgres://user:pass@host/db
// (or postgresql://) or sqlite:PATH. Errors never quote the password.
func Open(ctx context.Context, url string) (*DB, error) {
	db, err := open(ctx, url)
	if err != nil {
		return nil, redact.Error(err, url)
	}
	if err := db.s.ping(ctx); err != nil {
		db.Close()
		return nil, redact.Error(fmt.Errorf("outbox: %s database %s: %w", db.s.kind(), redact.URL(url), err), url)
	}
	return db, nil
}

// CheckURL reports whether url has a form Open takes, without connecting:
// for a configuration to be refused before anything starts. The error does
// not quote url, which may hold a password.
func CheckURL(url string) error {
	if kindOf(url) == "" {
		return fmt.Errorf("outbox: database URL is not one of %s", accepted)
	}
	return nil
}

func kindOf(url string) string {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return "postgres"
	case strings.HasPrefix(url, "sqlite:"):
		return "sqlite"
	}
	return ""
}

func open(ctx context.Context, url string) (*DB, error) {
	switch kindOf(url) {
	case "postgres":
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			return nil, fmt.Errorf("outbox: postgres URL: %w", err)
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("outbox: postgres: %w", err)
		}
		db := Postgres(pool)
		db.close = pool.Close
		return db, nil
	case "sqlite":
		path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
		if path == "" || strings.ContainsRune(path, '?') {
			return nil, errors.New("outbox: sqlite URL needs a file path without '?': sqlite:PATH")
		}
		// Immediate transactions take the write lock up front, so a relay
		// and the service's writers wait on busy_timeout, never fail to
		// upgrade a read lock.
		sqldb, err := sql.Open("sqlite", path+"?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
		if err != nil {
			return nil, fmt.Errorf("outbox: sqlite %s: %w", path, err)
		}
		db := SQLite(sqldb)
		db.close = func() { _ = sqldb.Close() }
		return db, nil
	}
	return nil, CheckURL(url)
}

// Postgres is the outbox in pool's database; Close leaves pool open.
func Postgres(pool *pgxpool.Pool) *DB { return &DB{s: &postgres{pool: pool}, close: func() {}} }

// SQLite is the outbox in db, an SQLite database opened with the
// modernc.org/sqlite driver; Close leaves db open. Open it with
// _txlock=immediate so that the relay's transactions and the service's do
// not fail on each other's locks.
func SQLite(db *sql.DB) *DB { return &DB{s: &sqlite{db: db}, close: func() {}} }

// Init creates the table, its indexes and (PostgreSQL) the trigger that
// wakes listening relays. Running it again changes nothing.
func (db *DB) Init(ctx context.Context) error {
	if err := db.s.init(ctx); err != nil {
		return fmt.Errorf("outbox: creating herald_outbox in %s: %w", db.s.kind(), err)
	}
	return nil
}

// Status reads the outbox's backlog and failures.
func (db *DB) Status(ctx context.Context) (Status, error) {
	st, err := db.s.status(ctx)
	if err != nil {
		return st, fmt.Errorf("outbox: status: %w", err)
	}
	st.Kind = db.s.kind()
	return st, nil
}

// Ping checks the database answers, for readiness.
func (db *DB) Ping(ctx context.Context) error { return db.s.ping(ctx) }

// Close closes the connections Open made.
func (db *DB) Close() { db.close() }
