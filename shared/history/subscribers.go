package history

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/event"
)

// Subscriber is one of a tenant's subscribers as the index keeps it: what
// a listing shows and is filtered by. Their free data stays in the bucket
// only (the API's GET of one subscriber reads it there).
type Subscriber struct {
	Tenant string
	ID     string
	Name   string
	// Email is kept lowercased, the form it is matched in.
	Email     string
	Phone     string
	WhatsApp  string
	Locale    string
	Timezone  string
	UpdatedAt time.Time
	// Revision is the bucket revision the row reflects: a change is
	// applied only over an older one.
	Revision uint64
}

// SubscriberChange is one change of the subscribers bucket: the
// subscriber as written at Revision or, Deleted, its delete or purge at
// Revision (of which only Tenant, ID, Revision and UpdatedAt count).
type SubscriberChange struct {
	Subscriber
	Deleted bool
}

// SubscriberQuery selects a page of one tenant's subscribers, by id.
type SubscriberQuery struct {
	Tenant string // required
	// Email, when set, keeps the subscribers with this address, matched
	// case-insensitively (both sides lowercased).
	Email string
	// Phone, when set, an E.164 number, keeps the subscribers with it as
	// their SMS number or their WhatsApp one: "who is this number".
	Phone string
	// Limit is the page size, 1 to MaxLimit; 0 means DefaultLimit.
	Limit int
	// Cursor continues from a previous page's Next; empty starts at the
	// first id.
	Cursor string
}

// SubscriberPage is one page of a subscriber listing. Next is the cursor
// of the page after it, empty on the last page.
type SubscriberPage struct {
	Subscribers []Subscriber
	Next        string
}

// subscriberColumns are the subscribers columns a change sets, in the
// order subscriberArgs binds them.
const (
	subscriberColumns = `tenant, id, name, email, phone, whatsapp, locale, timezone, updated_at, revision, deleted`
	subscriberWidth   = 11
)

// subscriberConflict replaces a row only with a newer revision of it, a
// tombstone's included: a replayed or late change never moves it back.
const subscriberConflict = `ON CONFLICT (tenant, id) DO UPDATE SET name = excluded.name, email = excluded.email,
	phone = excluded.phone, whatsapp = excluded.whatsapp, locale = excluded.locale, timezone = excluded.timezone,
	updated_at = excluded.updated_at, revision = excluded.revision, deleted = excluded.deleted
	WHERE subscribers.revision < excluded.revision`

// ApplySubscribers records changes of the subscribers bucket in one
// transaction. A row is replaced only by a higher revision of it; a delete
// leaves a tombstone (every field blanked, not listed) at its revision, so
// a put of the subscriber delivered after it, but written before, is
// ignored. Of several changes to one subscriber the highest revision wins.
func (s *Store) ApplySubscribers(ctx context.Context, changes []SubscriberChange) error {
	latest := make(map[[2]string]SubscriberChange, len(changes))
	for _, c := range changes {
		if err := c.check(); err != nil {
			return err
		}
		k := [2]string{c.Tenant, c.ID}
		if old, ok := latest[k]; !ok || old.Revision < c.Revision {
			latest[k] = c
		}
	}
	// The same order in every transaction: two over the same rows wait
	// for each other instead of deadlocking.
	ordered := slices.SortedFunc(maps.Values(latest), func(a, b SubscriberChange) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.ID, b.ID))
	})
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for batch := range slices.Chunk(ordered, chunk) {
			if _, err := tx.ExecContext(ctx, s.subscriberInsert(len(batch)), s.subscriberArgs(batch)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("history: writing %d subscriber changes: %w", len(ordered), err)
	}
	return nil
}

// check refuses a change the index could not place.
func (c SubscriberChange) check() error {
	switch {
	case c.Tenant == "" || c.ID == "":
		return fmt.Errorf("history: a subscriber change needs a tenant and an id (got %q/%q)", c.Tenant, c.ID)
	case c.Revision == 0 || c.Revision > math.MaxInt64:
		return fmt.Errorf("history: subscriber %s/%q: revision %d out of range", c.Tenant, c.ID, c.Revision)
	}
	return nil
}

func (s *Store) subscriberInsert(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO subscribers (" + subscriberColumns + ") VALUES ")
	s.values(&b, n, subscriberWidth)
	b.WriteString(" " + subscriberConflict)
	return b.String()
}

// subscriberArgs are the values of changes in the order of
// subscriberColumns; a tombstone keeps nothing of the person but the id.
func (s *Store) subscriberArgs(changes []SubscriberChange) []any {
	now := time.Now()
	out := make([]any, 0, len(changes)*subscriberWidth)
	for _, c := range changes {
		r, deleted := c.Subscriber, 0
		if c.Deleted {
			r, deleted = Subscriber{Tenant: r.Tenant, ID: r.ID, UpdatedAt: r.UpdatedAt, Revision: r.Revision}, 1
		}
		out = append(out, r.Tenant, r.ID, r.Name, emailKey(r.Email), r.Phone, r.WhatsApp, r.Locale, r.Timezone,
			s.d.stamp(micro(cmp.Or(r.UpdatedAt, now))), int64(r.Revision), deleted)
	}
	return out
}

// emailKey is the form an email is kept and matched in. Lowercased here,
// not by SQL lower(), which in SQLite folds ASCII only.
func emailKey(email string) string { return strings.ToLower(email) }

// selectedSubscriber are the columns a Subscriber is read from, in
// scanSubscriber's order.
const selectedSubscriber = `tenant, id, name, email, phone, whatsapp, locale, timezone, updated_at, revision`

// Subscribers is one page of a tenant's subscribers, by id (byte order),
// continuing after q.Cursor: read by index from where the cursor points,
// never by offset, so subscribers added meanwhile do not shift it.
func (s *Store) Subscribers(ctx context.Context, q SubscriberQuery) (SubscriberPage, error) {
	limit, err := q.check()
	if err != nil {
		return SubscriberPage{}, err
	}
	where, args := []string{"tenant = $1", "deleted = 0"}, []any{q.Tenant}
	add := func(cond string, arg any) {
		args = append(args, arg)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	// Each "<> ''" is the condition of the column's partial index, spelled
	// out: SQLite uses such an index only for a query that states it.
	if q.Email != "" {
		add("email = $%d AND email <> ''", emailKey(q.Email))
	}
	if q.Phone != "" {
		// Either number, each through its own index. Written as an OR, or
		// a UNION of two selects, SQLite (3.54) walked the tenant's
		// subscribers in id order instead.
		add(`id IN (SELECT id FROM subscribers WHERE tenant = $1 AND phone = $%[1]d AND phone <> ''
			UNION SELECT id FROM subscribers WHERE tenant = $1 AND whatsapp = $%[1]d AND whatsapp <> '')`, q.Phone)
	}
	if q.Cursor != "" {
		after, err := decodeAfter(q.Cursor, q.digest())
		if err != nil {
			return SubscriberPage{}, err
		}
		add("id > $%d", after)
	}
	args = append(args, limit+1) // one more tells whether a next page exists
	query := fmt.Sprintf(`SELECT %s FROM subscribers WHERE %s ORDER BY id LIMIT $%d`,
		selectedSubscriber, strings.Join(where, " AND "), len(args))
	list, err := s.readSubscribers(ctx, query, args, limit+1)
	if err != nil {
		return SubscriberPage{}, fmt.Errorf("history: listing %s's subscribers: %w", q.Tenant, err)
	}
	page := SubscriberPage{Subscribers: list}
	if len(list) > limit {
		page.Subscribers = list[:limit]
		page.Next = encodeAfter(list[limit-1].ID, q.digest())
	}
	return page, nil
}

// BadParameter is a query parameter the index refuses, and why. It
// matches ErrBadQuery.
type BadParameter struct {
	Name, Reason string
}

func (e *BadParameter) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrBadQuery, e.Name, e.Reason)
}
func (e *BadParameter) Is(target error) bool { return target == ErrBadQuery }

// check validates q and returns its page size. The values refused are not
// quoted: they are anyone's input.
func (q SubscriberQuery) check() (int, error) {
	switch {
	case q.Tenant == "":
		return 0, &BadParameter{"tenant", "is required"}
	case q.Limit < 0 || q.Limit > MaxLimit:
		return 0, &BadParameter{"limit", fmt.Sprintf("%d is not between 1 and %d", q.Limit, MaxLimit)}
	case q.Email != "" && !event.ValidAddress(event.ChannelEmail, emailKey(q.Email)):
		return 0, &BadParameter{"email", "not an email address"}
	case q.Phone != "" && !event.ValidAddress(event.ChannelSMS, q.Phone):
		return 0, &BadParameter{"phone", "not an E.164 phone number such as +34600111222"}
	case q.Limit == 0:
		return DefaultLimit, nil
	}
	return q.Limit, nil
}

// digest binds a cursor to the query's tenant and filters, as a
// notification listing's is; "subscribers" keeps the two kinds apart.
func (q SubscriberQuery) digest() []byte {
	return digestOf([]string{"subscribers", q.Tenant, emailKey(q.Email), q.Phone})
}

func (s *Store) readSubscribers(ctx context.Context, query string, args []any, capacity int) ([]Subscriber, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]Subscriber, 0, capacity)
	for rows.Next() {
		var r Subscriber
		var revision int64
		if err := rows.Scan(&r.Tenant, &r.ID, &r.Name, &r.Email, &r.Phone, &r.WhatsApp, &r.Locale, &r.Timezone,
			stamp{&r.UpdatedAt}, &revision); err != nil {
			return nil, err
		}
		r.Revision = uint64(revision)
		out = append(out, r)
	}
	return out, rows.Err()
}
