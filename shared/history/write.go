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
// them: each is stored as pending at revision 0 — or as skipped, with its
// reason, when the router planned none (no worker ever claims it). Where a row exists — the
// ledger's word, or the same record seen before — its state is never
// touched; the record only fills in what the row lacks and moves its
// creation back if the record is older. So the index ends the same
// whichever feed it reads first, as when it is rebuilt. One transaction.
func (s *Store) Accept(ctx context.Context, rows []Row) error {
	first := make(map[[2]string]Row, len(rows))
	for _, r := range rows {
		if r.State != Skipped {
			r.State, r.Reason = Pending, ""
		}
		r.Revision = 0
		if err := validate(r); err != nil {
			return err
		}
		k := [2]string{r.Tenant, r.ID}
		if old, ok := first[k]; !ok || created(r).Before(created(old)) {
			first[k] = r
		}
	}
	return s.insert(ctx, sorted(first), acceptConflict)
}

// created is when a row says its notification was created.
func created(r Row) time.Time {
	if r.CreatedAt.IsZero() {
		return r.UpdatedAt
	}
	return r.CreatedAt
}

// fill is the SET of a column a row keeps once it knows it.
func fill(column string) string {
	return fmt.Sprintf("%[1]s = CASE WHEN notifications.%[1]s = '' THEN excluded.%[1]s ELSE notifications.%[1]s END", column)
}

// earliest keeps the earlier of two creation times: each feed saw the
// notification at a slightly different moment.
const earliest = `created_at = CASE WHEN excluded.created_at < notifications.created_at THEN excluded.created_at ELSE notifications.created_at END`

var acceptConflict = `ON CONFLICT (tenant, id) DO UPDATE SET ` + strings.Join([]string{
	fill("order_id"), fill("document"), fill("channel"), fill("recipient"), fill("recipient_key"), earliest,
}, ", ")

// keep is the SET of a column the ledger may leave empty where a pending
// row knew it.
func keep(column string) string {
	return fmt.Sprintf("%[1]s = CASE WHEN excluded.%[1]s = '' THEN notifications.%[1]s ELSE excluded.%[1]s END", column)
}

// applyConflict replaces a row with a newer revision of it, keeping the
// earliest creation time and what the change leaves empty.
var applyConflict = `ON CONFLICT (tenant, id) DO UPDATE SET ` + strings.Join([]string{
	keep("order_id"), keep("document"), keep("channel"), keep("recipient"), keep("recipient_key"), earliest,
	"state = excluded.state", "reason = excluded.reason", "provider = excluded.provider",
	"provider_message_id = excluded.provider_message_id", "tries = excluded.tries",
	"updated_at = excluded.updated_at", "revision = excluded.revision",
}, ", ") + ` WHERE notifications.revision < excluded.revision`

// Apply records the ledger's changes, in one transaction: a row is
// replaced only by a higher revision of it, so a replayed or reordered
// change never moves it back. The row keeps its earliest creation time and, when
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
		if old, ok := latest[k]; ok {
			if old.Revision > r.Revision {
				old, r = r, old
			}
			if created(old).Before(created(r)) {
				r.CreatedAt = created(old)
			}
		}
		latest[k] = r
	}
	return s.insert(ctx, sorted(latest), applyConflict)
}

// sorted lists rows in the same order in every transaction, so that two
// writes over the same rows wait for each other instead of deadlocking.
func sorted(rows map[[2]string]Row) []Row {
	return slices.SortedFunc(func(yield func(Row) bool) {
		for _, r := range rows {
			if !yield(r) {
				return
			}
		}
	}, func(a, b Row) int { return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.ID, b.ID)) })
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
	s.values(&b, n, columnCount)
	b.WriteString(" " + onConflict)
	return b.String()
}

// values writes the parameters of n rows of width columns each.
func (s *Store) values(b *strings.Builder, n, width int) {
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range width {
			if c > 0 {
				b.WriteString(", ")
			}
			b.WriteString(s.d.param(i*width + c + 1))
		}
		b.WriteByte(')')
	}
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
