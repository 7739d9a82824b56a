package outbox

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type postgres struct{ pool *pgxpool.Pool }

func (p *postgres) kind() string { return "postgres" }

func (p *postgres) init(ctx context.Context) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// Two inits at once would race on CREATE OR REPLACE and the trigger.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '.herald_outbox init', 0))`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, PostgresDDL); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (p *postgres) ping(ctx context.Context) error { return p.pool.Ping(ctx) }

// The turn is a transaction-scoped advisory lock named after the table's
// schema, so services that share a database in different schemas do not
// wait on one another, and a relay that dies mid-batch gives the turn up
// with its connection.
const takeTurn = `SELECT pg_try_advisory_xact_lock(hashtextextended(current_schema() || '.herald_outbox', 0))`

func (p *postgres) batch(ctx context.Context, limit int, fn func([]row) []result) (int, error) {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var mine bool
	if err := tx.QueryRow(ctx, takeTurn).Scan(&mine); err != nil {
		return 0, err
	}
	if !mine {
		return 0, errBusy
	}
	rs, err := tx.Query(ctx, `SELECT id, subject, headers::text, payload, attempts FROM herald_outbox
		WHERE published_at IS NULL AND failed_at IS NULL ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return 0, err
	}
	rows, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (row, error) {
		var w row
		var headers string
		err := r.Scan(&w.id, &w.subject, &headers, &w.payload, &w.attempts)
		w.headers = []byte(headers)
		return w, err
	})
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	published, failed := split(fn(rows))
	if len(published) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE herald_outbox SET published_at = now() WHERE id = ANY($1)`, published); err != nil {
			return 0, err
		}
	}
	if len(failed.ids) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE herald_outbox o SET attempts = o.attempts + 1, last_error = f.reason,
			failed_at = CASE WHEN f.permanent THEN now() END
			FROM unnest($1::bigint[], $2::text[], $3::bool[]) AS f(id, reason, permanent) WHERE o.id = f.id`,
			failed.ids, failed.reasons, failed.permanent); err != nil {
			return 0, err
		}
	}
	return len(rows), tx.Commit(ctx)
}

// failures are the rows of a batch that were not published, as columns.
type failures struct {
	ids       []int64
	reasons   []string
	permanent []bool
}

func split(results []result) (published []int64, failed failures) {
	for _, r := range results {
		if r.err == nil {
			published = append(published, r.id)
			continue
		}
		failed.ids = append(failed.ids, r.id)
		failed.reasons = append(failed.reasons, r.err.Error())
		failed.permanent = append(failed.permanent, r.permanent)
	}
	return published, failed
}

func (p *postgres) waiter() waiter { return &listener{pool: p.pool} }

// listener waits for the trigger's notifications on a connection of its
// own. Notifications that arrive between waits queue on the connection, so
// none is missed once the first LISTEN is in place; when the connection
// breaks (a restarted database), waits sleep until a new one listens.
type listener struct {
	pool *pgxpool.Pool
	conn *pgxpool.Conn
}

func (l *listener) wait(ctx context.Context, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if l.conn == nil {
		conn, err := l.pool.Acquire(ctx)
		if err != nil {
			<-ctx.Done()
			return
		}
		if _, err := conn.Exec(ctx, "LISTEN herald_outbox"); err != nil {
			conn.Release()
			<-ctx.Done()
			return
		}
		l.conn = conn
	}
	_, err := l.conn.Conn().WaitForNotification(ctx)
	if err != nil && ctx.Err() == nil {
		l.close()
	}
}

// close closes the connection rather than return it to the pool, where it
// would go on listening for someone else.
func (l *listener) close() {
	if l.conn == nil {
		return
	}
	_ = l.conn.Conn().Close(context.Background())
	l.conn.Release()
	l.conn = nil
}

func (p *postgres) purge(ctx context.Context, before time.Time, limit int) (int64, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM herald_outbox WHERE id IN (SELECT id FROM herald_outbox
		WHERE published_at < $1 ORDER BY published_at LIMIT $2)`, before, limit)
	return tag.RowsAffected(), err
}

func (p *postgres) status(ctx context.Context) (Status, error) {
	var st Status
	var oldest *time.Time
	var lastError *string
	err := p.pool.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE published_at IS NULL AND failed_at IS NULL),
		min(created_at) FILTER (WHERE published_at IS NULL AND failed_at IS NULL),
		count(*) FILTER (WHERE published_at IS NULL AND failed_at IS NULL AND attempts > 0),
		count(*) FILTER (WHERE failed_at IS NOT NULL),
		count(*) FILTER (WHERE published_at IS NOT NULL),
		(SELECT last_error FROM herald_outbox WHERE published_at IS NULL AND last_error IS NOT NULL ORDER BY id DESC LIMIT 1)
		FROM herald_outbox`).Scan(&st.Backlog, &oldest, &st.Retrying, &st.Failed, &st.Published, &lastError)
	if oldest != nil {
		st.Oldest = *oldest
	}
	if lastError != nil {
		st.LastError = *lastError
	}
	return st, err
}
