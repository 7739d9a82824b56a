package history

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// columns are the notifications columns every write sets, in the order
// args binds them.
const columns = `tenant, id, order_id, document, channel, recipient, recipient_key, state,
	reason, provider, provider_message_id, tries, created_at, updated_at, revision`

const columnCount = 15

// chunk is how many rows one INSERT carries: 500 × 15 parameters stays
// well under either database's limit.
const chunk = 500

// Accept records notifications just created, before any worker claims
// them: each is stored as pending at revision 0, unless a row for it
// exists — the ledger's word, or the same record seen before, is never
// overwritten. One transaction.
func (s *Store) Accept(ctx context.Context, rows []Row) error {
	pending := make([]Row, len(rows))
	for i, r := range rows {
		r.State, r.Revision = Pending, 0
		if err := validate(r); err != nil {
			return err
		}
		pending[i] = r
	}
	return s.insert(ctx, pending, `ON CONFLICT (tenant, id) DO NOTHING`)
}

// keep is the SET of a column the ledger may leave empty where a pending
// row knew it.
func keep(column string) string {
	return fmt.Sprintf("%[1]s = CASE WHEN excluded.%[1]s = '' THEN notifications.%[1]s ELSE excluded.%[1]s END", column)
}

// applyConflict replaces a row with a newer revision of it, keeping when
// it was created and what the change leaves empty.
var applyConflict = `ON CONFLICT (tenant, id) DO UPDATE SET ` + strings.Join([]string{
	keep("order_id"), keep("document"), keep("channel"), keep("recipient"), keep("recipient_key"),
	"state = excluded.state", "reason = excluded.reason", "provider = excluded.provider",
	"provider_message_id = excluded.provider_message_id", "tries = excluded.tries",
	"updated_at = excluded.updated_at", "revision = excluded.revision",
}, ", ") + ` WHERE notifications.revision < excluded.revision`

// Apply records the ledger's changes, in one transaction: a row is
// replaced only by a higher revision of it, so a replayed or reordered
// change never moves it back. The row keeps when it was created and, when
// the change leaves them empty, its order, document, channel and
// recipient (a pending row knew them). A new row is created at CreatedAt,
// or UpdatedAt when that is zero. Of several changes to one notification
// the highest revision wins.
func (s *Store) Apply(ctx context.Context, rows []Row) error {
	latest := make(map[[2]string]Row, len(rows))
	for _, r := range rows {
		if err := validate(r); err != nil {
			return err
		}
		if r.Revision == 0 || r.Revision > math.MaxInt64 {
			return fmt.Errorf("history: notification %s/%s: ledger revision %d out of range", r.Tenant, r.ID, r.Revision)
		}
		k := [2]string{r.Tenant, r.ID}
		if old, ok := latest[k]; !ok || old.Revision < r.Revision {
			latest[k] = r
		}
	}
	// The same order in every transaction: two Applies over the same rows
	// wait for each other instead of deadlocking.
	changes := slices.SortedFunc(func(yield func(Row) bool) {
		for _, r := range latest {
			if !yield(r) {
				return
			}
		}
	}, func(a, b Row) int { return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.ID, b.ID)) })
	return s.insert(ctx, changes, applyConflict)
}

// validate refuses a row the listing could not answer for.
func validate(r Row) error {
	if r.Tenant == "" || r.ID == "" {
		return fmt.Errorf("history: a row needs a tenant and an id (got %q/%q)", r.Tenant, r.ID)
	}
	if !slices.Contains(States, r.State) {
		return fmt.Errorf("history: notification %s/%s: state %q is not one of %v", r.Tenant, r.ID, r.State, States)
	}
	return nil
}

// insert writes rows chunk by chunk, resolving conflicts as onConflict
// says, in one transaction.
func (s *Store) insert(ctx context.Context, rows []Row, onConflict string) error {
	if len(rows) == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for batch := range slices.Chunk(rows, chunk) {
			if _, err := tx.ExecContext(ctx, s.insertSQL(len(batch), onConflict), s.args(batch)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("history: writing %d rows: %w", len(rows), err)
	}
	return nil
}

// insertSQL is an INSERT of n rows: VALUES ($1, … $15), ($16, …) ….
func (s *Store) insertSQL(n int, onConflict string) string {
	var b strings.Builder
	b.WriteString("INSERT INTO notifications (" + columns + ") VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range columnCount {
			if c > 0 {
				b.WriteString(", ")
			}
			b.WriteString(s.d.param(i*columnCount + c + 1))
		}
		b.WriteByte(')')
	}
	b.WriteString(" " + onConflict)
	return b.String()
}

// args are the values of rows in the order of columns. A row with no time
// at all is stamped now, so it still sorts somewhere sensible.
func (s *Store) args(rows []Row) []any {
	now := time.Now()
	out := make([]any, 0, len(rows)*columnCount)
	for _, r := range rows {
		created := micro(cmp.Or(r.CreatedAt, r.UpdatedAt, now))
		updated := micro(cmp.Or(r.UpdatedAt, created))
		out = append(out, r.Tenant, r.ID, r.Order, r.Document, r.Channel, r.Recipient, recipientKey(r.Recipient),
			r.State, r.Reason, r.Provider, r.ProviderMessageID, r.Tries,
			s.d.stamp(created), s.d.stamp(updated), int64(r.Revision))
	}
	return out
}

// micro is t to the microsecond, both databases' precision, so that a
// cursor holds exactly what was stored.
func micro(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// recipientKey is what a recipient filter matches. Lower-cased here, not
// by SQL lower(), which in SQLite folds ASCII only: both databases then
// agree with each other and with the query.
func recipientKey(recipient string) string { return strings.ToLower(recipient) }

// Forget deletes the rows last changed before before, as the ledger
// forgets its entries, and says how many.
func (s *Store) Forget(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM notifications WHERE updated_at < $1`, s.d.stamp(micro(before)))
	if err != nil {
		return 0, fmt.Errorf("history: forgetting rows before %s: %w", before.Format(time.RFC3339), err)
	}
	return res.RowsAffected()
}
