package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// selected are the columns a Row is read from, in scan's order.
const selected = `tenant, id, order_id, document, channel, recipient, state, reason,
	provider, provider_message_id, tries, created_at, updated_at, revision`

// Get is one notification's row, or ErrNotFound.
func (s *Store) Get(ctx context.Context, tenant, id string) (Row, error) {
	r, err := scan(s.db.QueryRowContext(ctx,
		`SELECT `+selected+` FROM notifications WHERE tenant = $1 AND id = $2`, tenant, id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Row{}, fmt.Errorf("%w: %s/%s", ErrNotFound, tenant, id)
	case err != nil:
		return Row{}, fmt.Errorf("history: reading %s/%s: %w", tenant, id, err)
	}
	return r, nil
}

// ByProviderMessage is the notifications a provider accepted under
// messageID — one, unless two providers ever gave the same id — for the
// provider's reports about it (package report) to be joined to. None is not
// an error: the row may not be written yet.
func (s *Store) ByProviderMessage(ctx context.Context, messageID string) ([]Row, error) {
	if messageID == "" {
		return nil, nil
	}
	rows, err := s.read(ctx, `SELECT `+selected+` FROM notifications WHERE provider_message_id = $1 LIMIT 10`,
		[]any{messageID}, 1)
	if err != nil {
		return nil, fmt.Errorf("history: finding provider message %s: %w", messageID, err)
	}
	return rows, nil
}

// List is one page of a tenant's notifications, newest first — by
// created_at, then id, both descending — continuing after q.Cursor. The
// page is read by index from where the cursor points, never by offset, so
// notifications created meanwhile do not shift it.
func (s *Store) List(ctx context.Context, q Query) (Page, error) {
	limit, err := q.check()
	if err != nil {
		return Page{}, err
	}
	where := []string{"tenant = $1"}
	args := []any{q.Tenant}
	add := func(cond string, arg any) {
		args = append(args, arg)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if q.Order != "" {
		add("order_id = $%d", q.Order)
	}
	if q.Recipient != "" {
		add("recipient_key = $%d", recipientKey(q.Recipient))
	}
	if q.State != "" {
		add("state = $%d", q.State)
	}
	if !q.Since.IsZero() {
		add("created_at >= $%d", s.d.stamp(q.Since))
	}
	if !q.Until.IsZero() {
		add("created_at < $%d", s.d.stamp(q.Until))
	}
	if q.Cursor != "" {
		at, err := decodeCursor(q.Cursor, q.digest())
		if err != nil {
			return Page{}, err
		}
		args = append(args, s.d.stamp(at.created), at.id)
		where = append(where, fmt.Sprintf("(created_at, id) < ($%d, $%d)", len(args)-1, len(args)))
	}
	args = append(args, limit+1) // one more tells whether a next page exists
	query := fmt.Sprintf(`SELECT %s FROM notifications WHERE %s ORDER BY created_at DESC, id DESC LIMIT $%d`,
		selected, strings.Join(where, " AND "), len(args))
	rows, err := s.read(ctx, query, args, limit+1)
	if err != nil {
		return Page{}, fmt.Errorf("history: listing %s: %w", q.Tenant, err)
	}
	page := Page{Rows: rows}
	if len(rows) > limit {
		page.Rows = rows[:limit]
		last := page.Rows[limit-1]
		page.Next = encodeCursor(position{created: last.CreatedAt, id: last.ID}, q.digest())
	}
	return page, nil
}

// check validates q and returns its page size.
func (q Query) check() (int, error) {
	switch {
	case q.Tenant == "":
		return 0, fmt.Errorf("%w: tenant is required", ErrBadQuery)
	case q.Limit < 0 || q.Limit > MaxLimit:
		return 0, fmt.Errorf("%w: limit %d is not between 1 and %d", ErrBadQuery, q.Limit, MaxLimit)
	case q.State != "" && !slices.Contains(States, q.State):
		return 0, fmt.Errorf("%w: state %q is not one of %s", ErrBadQuery, q.State, strings.Join(States, ", "))
	case !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until):
		return 0, fmt.Errorf("%w: since %s is not before until %s", ErrBadQuery, q.Since.UTC().Format(time.RFC3339), q.Until.UTC().Format(time.RFC3339))
	case q.Limit == 0:
		return DefaultLimit, nil
	}
	return q.Limit, nil
}

// read runs a listing query.
func (s *Store) read(ctx context.Context, query string, args []any, capacity int) ([]Row, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]Row, 0, capacity)
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// scan reads the selected columns of one row.
func scan(src interface{ Scan(...any) error }) (Row, error) {
	var r Row
	var revision int64
	err := src.Scan(&r.Tenant, &r.ID, &r.Order, &r.Document, &r.Channel, &r.Recipient, &r.State, &r.Reason,
		&r.Provider, &r.ProviderMessageID, &r.Tries, stamp{&r.CreatedAt}, stamp{&r.UpdatedAt}, &revision)
	r.Revision = uint64(revision)
	return r, err
}

// stamp scans a time as either database stores it: a timestamptz, or µs
// since the Unix epoch.
type stamp struct{ t *time.Time }

func (s stamp) Scan(v any) error {
	switch v := v.(type) {
	case time.Time:
		*s.t = v.UTC()
	case int64:
		*s.t = time.UnixMicro(v).UTC()
	default:
		return fmt.Errorf("a time stored as %T", v)
	}
	return nil
}
