package outbox

import (
	"context"
	"database/sql"
	"strings"
	"time"
)

type sqlite struct{ db *sql.DB }

func (s *sqlite) kind() string { return "sqlite" }

func (s *sqlite) init(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, SQLiteDDL)
	return err
}

func (s *sqlite) ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// batch needs no turn of its own: SQLite has one writer at a time, and the
// transaction is it.
func (s *sqlite) batch(ctx context.Context, limit int, fn func([]row) []result) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	rs, err := tx.QueryContext(ctx, `SELECT id, subject, headers, payload, attempts FROM herald_outbox
		WHERE published_at IS NULL AND failed_at IS NULL ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return 0, err
	}
	var rows []row
	for rs.Next() {
		var w row
		var headers string
		if err := rs.Scan(&w.id, &w.subject, &headers, &w.payload, &w.attempts); err != nil {
			_ = rs.Close()
			return 0, err
		}
		w.headers = []byte(headers)
		rows = append(rows, w)
	}
	if err := rs.Err(); err != nil || len(rows) == 0 {
		return 0, err
	}
	published, failed := split(fn(rows))
	now := time.Now().UnixMicro()
	if len(published) > 0 {
		args := make([]any, 0, len(published)+1)
		args = append(args, now)
		for _, id := range published {
			args = append(args, id)
		}
		q := `UPDATE herald_outbox SET published_at = ? WHERE id IN (?` + strings.Repeat(",?", len(published)-1) + `)`
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return 0, err
		}
	}
	for i, id := range failed.ids {
		var failedAt any
		if failed.permanent[i] {
			failedAt = now
		}
		if _, err := tx.ExecContext(ctx, `UPDATE herald_outbox SET attempts = attempts + 1, last_error = ?, failed_at = ? WHERE id = ?`,
			failed.reasons[i], failedAt, id); err != nil {
			return 0, err
		}
	}
	return len(rows), tx.Commit()
}

// waiter polls: SQLite has no notifications.
func (s *sqlite) waiter() waiter { return poller{} }

type poller struct{}

func (poller) wait(ctx context.Context, d time.Duration) { sleep(ctx, d) }
func (poller) close()                                    {}

func (s *sqlite) purge(ctx context.Context, before time.Time, limit int) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM herald_outbox WHERE id IN (SELECT id FROM herald_outbox
		WHERE published_at < ? ORDER BY published_at LIMIT ?)`, before.UnixMicro(), limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *sqlite) status(ctx context.Context) (Status, error) {
	var st Status
	var oldest sql.NullInt64
	var lastError sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT
		count(*) FILTER (WHERE published_at IS NULL AND failed_at IS NULL),
		min(created_at) FILTER (WHERE published_at IS NULL AND failed_at IS NULL),
		count(*) FILTER (WHERE published_at IS NULL AND failed_at IS NULL AND attempts > 0),
		count(*) FILTER (WHERE failed_at IS NOT NULL),
		count(*) FILTER (WHERE published_at IS NOT NULL),
		(SELECT last_error FROM herald_outbox WHERE published_at IS NULL AND last_error IS NOT NULL ORDER BY id DESC LIMIT 1)
		FROM herald_outbox`).Scan(&st.Backlog, &oldest, &st.Retrying, &st.Failed, &st.Published, &lastError)
	if oldest.Valid {
		st.Oldest = time.UnixMicro(oldest.Int64)
	}
	st.LastError = lastError.String
	return st, err
}
