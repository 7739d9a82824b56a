package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"

	"github.com/heraldhq/herald/shared/redact"
)

// Store is the SQL index. Both databases go through database/sql and the
// same statements; a dialect holds the little that differs.
type Store struct {
	db *sql.DB
	d  dialect
}

// dialect is what differs between PostgreSQL and SQLite: the name, the
// column types, how a time is bound, and how concurrent first starts of
// the schema are kept apart.
type dialect struct {
	kind string
	// timestamp is the column type of created_at and updated_at.
	timestamp string
	// key is the column type of the text columns the listing sorts or
	// filters by: byte order on both, so a cursor means the same to each.
	key string
	// param is the n-th parameter of a statement with many: SQLite finds
	// a numbered one ($n) by a linear search among those before it, so an
	// INSERT of thousands of them took seconds to parse; a plain ? does not.
	// (Statements with few parameters say $n on both.)
	param func(n int) string
	// stamp is a time as this database stores it.
	stamp func(time.Time) any
	// lockSchema, run first in the migration's transaction, keeps a
	// concurrent Open waiting until this one is done.
	lockSchema string
}

var (
	postgresDialect = dialect{
		kind:       "postgres",
		timestamp:  "timestamptz",
		key:        `text COLLATE "C"`,
		param:      func(n int) string { return "$" + strconv.Itoa(n) },
		stamp:      func(t time.Time) any { return t.UTC() },
		lockSchema: "SELECT pg_advisory_xact_lock(7253021450113421112)", // any constant of ours
	}
	sqliteDialect = dialect{
		kind:      "sqlite",
		timestamp: "bigint", // µs since the Unix epoch
		key:       "text",
		param:     func(int) string { return "?" },
		stamp:     func(t time.Time) any { return t.UnixMicro() },
	}
)

// accepted names the URL forms Open takes, for its errors.
const accepted = "postgres://…, postgresql://… or sqlite:PATH"

// Open connects to the database url names and creates or migrates the
// schema: postgres://user:password@host/db?… (or postgresql://) through
// pgx, any number of processes sharing it; sqlite:PATH, a file one process
// owns. Errors never quote the URL's password.
func Open(ctx context.Context, url string) (*Store, error) {
	s, err := open(url)
	if err != nil {
		return nil, redact.Error(err, url)
	}
	if err := s.start(ctx); err != nil {
		_ = s.db.Close()
		return nil, redact.Error(fmt.Errorf("history: %s database %s: %w", s.d.kind, redact.URL(url), err), url)
	}
	return s, nil
}

func open(url string) (*Store, error) {
	switch kindOf(url) {
	case "postgres":
		return openPostgres(url)
	case "sqlite":
		return openSQLite(strings.TrimPrefix(url, "sqlite:"))
	}
	return nil, CheckURL(url)
}

// kindOf is the database a URL names, "" when none Open takes.
func kindOf(url string) string {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return "postgres"
	case strings.HasPrefix(url, "sqlite:"):
		return "sqlite"
	}
	return ""
}

// CheckURL reports whether url has a form Open takes, without connecting:
// for a configuration to be refused before anything starts.
func CheckURL(url string) error {
	if kindOf(url) != "" {
		return nil
	}
	if scheme, _, ok := strings.Cut(url, "://"); ok && isScheme(scheme) {
		return fmt.Errorf("history: database URL scheme %q is not one of %s", scheme, accepted)
	}
	// Not quoted: what is not a URL may be anything, a password too.
	return fmt.Errorf("history: database URL is not one of %s", accepted)
}

// isScheme is whether s looks like a URL scheme (RFC 3986).
func isScheme(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.") == ""
}

func openPostgres(url string) (*Store, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("history: postgres URL: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return &Store{db: db, d: postgresDialect}, nil
}

// openSQLite opens path with one connection: SQLite has one writer anyway,
// and one connection keeps database/sql from ever waiting on itself.
// Immediate transactions take the write lock up front, so two processes
// wait on busy_timeout instead of failing to upgrade a read lock.
func openSQLite(path string) (*Store, error) {
	path = strings.TrimPrefix(path, "//") // sqlite:///var/lib/herald.db
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("history: sqlite URL needs a file path without '?': sqlite:PATH")
	}
	dsn := path + "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("history: sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	return &Store{db: db, d: sqliteDialect}, nil
}

// start checks the database answers, then brings the schema up to date.
func (s *Store) start(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	if s.d.kind == sqliteDialect.kind {
		if err := s.useWAL(ctx); err != nil {
			return fmt.Errorf("WAL mode: %w", err)
		}
	}
	if err := s.migrate(ctx); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	return nil
}

// useWAL puts an SQLite file in WAL mode, for good — it is a property of
// the file — so another process (a backup, the sqlite3 shell) can read
// while Herald writes. Switching needs the file to itself and SQLite does
// not wait for that on busy_timeout: two processes creating the file
// together retry, for a while.
func (s *Store) useWAL(ctx context.Context) error {
	for try := 1; ; try++ {
		_, err := s.db.ExecContext(ctx, "PRAGMA journal_mode=WAL")
		var sqliteErr *sqlite.Error
		if err == nil || !errors.As(err, &sqliteErr) || sqliteErr.Code()&0xff != sqliteBusy || try == 100 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sqliteBusy is SQLITE_BUSY, the primary result code of a lock another
// holds (extended codes carry it in their low byte).
const sqliteBusy = 5

// Kind is "postgres" or "sqlite", for readiness output.
func (s *Store) Kind() string { return s.d.kind }

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("history: %s: %w", s.d.kind, err)
	}
	return nil
}

// Close releases the connections.
func (s *Store) Close() error { return s.db.Close() }

// inTx runs fn in a transaction, committed when fn succeeds.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	return tx.Commit()
}

// ignoreDone drops the rollback error of a transaction the driver already
// ended (its context was cancelled).
func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
