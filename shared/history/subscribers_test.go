package history_test

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
)

// put is subscriber id of tenant as written at revision rev.
func put(tenant, id, email string, rev uint64) history.SubscriberChange {
	return history.SubscriberChange{Subscriber: history.Subscriber{Tenant: tenant, ID: id, Name: "Olga " + id,
		Email: email, Phone: "+34600111222", Locale: "ru", Timezone: "Europe/Moscow",
		UpdatedAt: base.Add(time.Duration(rev) * time.Second), Revision: rev}}
}

// deleted is the delete of subscriber id at revision rev.
func deleted(tenant, id string, rev uint64) history.SubscriberChange {
	return history.SubscriberChange{Subscriber: history.Subscriber{Tenant: tenant, ID: id, Revision: rev}, Deleted: true}
}

// everyone walks every page of q (page size 7), checking each cursor.
func everyone(t *testing.T, s *history.Store, q history.SubscriberQuery) []history.Subscriber {
	t.Helper()
	ctx := heraldtest.Context(t)
	q.Limit = 7
	var all []history.Subscriber
	for range 1000 {
		page, err := s.Subscribers(ctx, q)
		require.NoError(t, err)
		all = append(all, page.Subscribers...)
		if page.Next == "" {
			return all
		}
		require.Regexp(t, `^[A-Za-z0-9_-]+$`, page.Next, "a cursor is URL-safe")
		q.Cursor = page.Next
	}
	t.Fatal("the listing never ended")
	return nil
}

func subscriberIDs(list []history.Subscriber) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}

// The index follows the bucket: a put lists the subscriber, a changed
// email moves them from one search to the other, a delete takes them out
// of every listing and keeps nothing of theirs but the id.
func TestTheSubscriberIndexFollowsPutsChangesAndDeletes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		url := b.url(t)
		s, err := history.Open(heraldtest.Context(t), url)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		ctx := heraldtest.Context(t)
		acme := history.SubscriberQuery{Tenant: "acme"}
		byEmail := func(email string) []string {
			return subscriberIDs(everyone(t, s, history.SubscriberQuery{Tenant: "acme", Email: email}))
		}

		require.NoError(t, s.ApplySubscribers(ctx, []history.SubscriberChange{put("acme", "u-olga", "olga@zarya.example", 1),
			put("acme", "u-ivan", "ivan@zarya.example", 2), put("globex", "u-olga", "olga@zarya.example", 3)}))
		list := everyone(t, s, acme)
		require.Equal(t, []string{"u-ivan", "u-olga"}, subscriberIDs(list), "by id, the tenant's own")
		want := put("acme", "u-olga", "olga@zarya.example", 1).Subscriber
		want.UpdatedAt = want.UpdatedAt.UTC()
		require.Equal(t, want, list[1])

		require.NoError(t, s.ApplySubscribers(ctx, []history.SubscriberChange{put("acme", "u-olga", "olga@sales.zarya.example", 4)}))
		require.Empty(t, byEmail("olga@zarya.example"), "her old address finds nobody")
		require.Equal(t, []string{"u-olga"}, byEmail("olga@sales.zarya.example"))

		gone := put("acme", "u-olga", "olga@sales.zarya.example", 5) // a delete that says what it deleted
		gone.Deleted = true
		require.NoError(t, s.ApplySubscribers(ctx, []history.SubscriberChange{gone}))
		require.Equal(t, []string{"u-ivan"}, subscriberIDs(everyone(t, s, acme)))
		require.Empty(t, byEmail("olga@sales.zarya.example"))
		require.Equal(t, []string{"u-ivan"}, subscriberIDs(everyone(t, s, history.SubscriberQuery{Tenant: "acme", Phone: "+34600111222"})))
		require.Equal(t, []string{"u-olga"}, subscriberIDs(everyone(t, s, history.SubscriberQuery{Tenant: "globex"})),
			"another tenant's subscriber of the same id stays")

		var name, email, phone string
		require.NoError(t, b.raw(t, url).QueryRow(`SELECT name, email, phone FROM subscribers WHERE tenant = 'acme' AND id = 'u-olga'`).
			Scan(&name, &email, &phone))
		require.Equal(t, []string{"", "", ""}, []string{name, email, phone}, "a deleted subscriber's data is not kept")
	})
}

// Email is matched whatever its case, on both sides; a phone number
// matches the SMS number or the WhatsApp one.
func TestSubscribersAreFoundByEmailAnyCaseAndByEitherNumber(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		olga := put("acme", "u-olga", "Olga@Zarya.Example", 1) // as a writer that did not normalize
		ivan := put("acme", "u-ivan", "ivan@zarya.example", 2)
		ivan.Phone, ivan.WhatsApp = "+34600999888", "+34600111222"
		oleg := put("acme", "u-oleg", "oleg@zarya.example", 3)
		oleg.Phone = ""
		require.NoError(t, s.ApplySubscribers(ctx, []history.SubscriberChange{olga, ivan, oleg}))

		for _, email := range []string{"olga@zarya.example", "OLGA@ZARYA.EXAMPLE", "Olga@Zarya.Example"} {
			require.Equal(t, []string{"u-olga"}, subscriberIDs(everyone(t, s, history.SubscriberQuery{Tenant: "acme", Email: email})), email)
		}
		require.Equal(t, []string{"u-ivan", "u-olga"},
			subscriberIDs(everyone(t, s, history.SubscriberQuery{Tenant: "acme", Phone: "+34600111222"})), "SMS or WhatsApp")
		require.Equal(t, []string{"u-ivan"},
			subscriberIDs(everyone(t, s, history.SubscriberQuery{Tenant: "acme", Phone: "+34600999888"})))
		require.Equal(t, []string{"u-ivan"}, subscriberIDs(everyone(t, s,
			history.SubscriberQuery{Tenant: "acme", Phone: "+34600111222", Email: "IVAN@zarya.example"})), "filters combine")
		require.Empty(t, everyone(t, s, history.SubscriberQuery{Tenant: "globex", Email: "olga@zarya.example"}))
	})
}

// Pages visit every subscriber once, by id, however ids sort as text; a
// cursor is refused with another tenant, other filters, or altered.
func TestSubscriberPagesVisitEachOnceAndRefuseAnAlteredCursor(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		var changes []history.SubscriberChange
		var want []string
		for i := range 53 {
			id := fmt.Sprintf("u-%02d", i)
			if i%10 == 0 {
				id = fmt.Sprintf("Ölga %02d", i) // beyond ASCII, a space: ids are opaque
			}
			changes = append(changes, put("acme", id, fmt.Sprintf("buyer%d@zarya.example", i%2), uint64(i+1)))
			want = append(want, id)
		}
		require.NoError(t, s.ApplySubscribers(ctx, changes))
		got := subscriberIDs(everyone(t, s, history.SubscriberQuery{Tenant: "acme"}))
		require.ElementsMatch(t, want, got)
		require.IsIncreasing(t, got, "by id, each once")
		require.Len(t, everyone(t, s, history.SubscriberQuery{Tenant: "acme", Email: "BUYER1@zarya.example"}), 26)

		q := history.SubscriberQuery{Tenant: "acme", Email: "buyer1@zarya.example", Limit: 5}
		page, err := s.Subscribers(ctx, q)
		require.NoError(t, err)
		require.NotEmpty(t, page.Next)
		same := q
		same.Email, same.Limit, same.Cursor = "Buyer1@Zarya.example", 9, page.Next
		_, err = s.Subscribers(ctx, same)
		require.NoError(t, err, "the same query, its email in another case, another page size")

		raw, err := base64.RawURLEncoding.DecodeString(page.Next)
		require.NoError(t, err)
		edit := func(at int, to byte) string {
			b := append([]byte{}, raw...)
			b[at] = to
			return base64.RawURLEncoding.EncodeToString(b)
		}
		for name, bad := range map[string]history.SubscriberQuery{
			"another tenant's":       {Tenant: "globex", Email: q.Email, Cursor: page.Next},
			"without the filter":     {Tenant: "acme", Cursor: page.Next},
			"another email":          {Tenant: "acme", Email: "buyer0@zarya.example", Cursor: page.Next},
			"with a phone":           {Tenant: "acme", Email: q.Email, Phone: "+34600111222", Cursor: page.Next},
			"not base64":             {Tenant: "acme", Email: q.Email, Cursor: "not a cursor!"},
			"too short":              {Tenant: "acme", Email: q.Email, Cursor: page.Next[:8]},
			"with its digest edited": {Tenant: "acme", Email: q.Email, Cursor: edit(3, raw[3]^1)},
			"its id not UTF-8":       {Tenant: "acme", Email: q.Email, Cursor: edit(len(raw)-1, 0xff)},
			"its id holding a NUL":   {Tenant: "acme", Email: q.Email, Cursor: edit(len(raw)-1, 0)},
		} {
			_, err := s.Subscribers(ctx, bad)
			require.ErrorIs(t, err, history.ErrBadCursor, name)
		}
	})
}

// Changes applied in any order, in any batches, any number of times —
// a replay from the start, a late redelivery — leave the same index: a
// subscriber deleted stays deleted whatever older put comes after.
func TestSubscriberChangesEndTheSameInAnyOrderAndReplayed(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		var history1 []history.SubscriberChange
		for i := range 20 {
			id := fmt.Sprintf("u-%02d", i)
			history1 = append(history1, put("acme", id, id+"@old.example", uint64(3*i+1)),
				put("acme", id, id+"@new.example", uint64(3*i+2)))
			if i%4 == 0 {
				history1 = append(history1, deleted("acme", id, uint64(3*i+3)))
			}
		}
		inOrder := b.open(t)
		require.NoError(t, inOrder.ApplySubscribers(heraldtest.Context(t), history1))
		want := everyone(t, inOrder, history.SubscriberQuery{Tenant: "acme"})
		require.Len(t, want, 15)
		for _, s := range want {
			require.Equal(t, s.ID+"@new.example", s.Email)
		}

		ctx := heraldtest.Context(t)
		backwards := b.open(t)
		reversed := slices.Clone(history1)
		slices.Reverse(reversed)
		require.NoError(t, backwards.ApplySubscribers(ctx, reversed))
		require.Equal(t, want, everyone(t, backwards, history.SubscriberQuery{Tenant: "acme"}), "newest first, in one batch")

		s := b.open(t)
		for round := range 3 {
			shuffled := append([]history.SubscriberChange{}, history1...)
			rng := rand.New(rand.NewPCG(uint64(round), 7))
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			for len(shuffled) > 0 {
				n := min(len(shuffled), 1+rng.IntN(6))
				require.NoError(t, s.ApplySubscribers(ctx, shuffled[:n]))
				shuffled = shuffled[n:]
			}
			require.Equal(t, want, everyone(t, s, history.SubscriberQuery{Tenant: "acme"}), "round %d", round)
		}
		require.NoError(t, inOrder.ApplySubscribers(ctx, history1))
		require.Equal(t, want, everyone(t, inOrder, history.SubscriberQuery{Tenant: "acme"}), "replayed")
	})
}

func TestSubscriberQueriesAndChangesAreChecked(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		s, ctx := b.open(t), heraldtest.Context(t)
		for field, q := range map[string]history.SubscriberQuery{
			"tenant":             {Email: "olga@zarya.example"},
			"limit":              {Tenant: "acme", Limit: history.MaxLimit + 1},
			"negative limit":     {Tenant: "acme", Limit: -1},
			"email":              {Tenant: "acme", Email: "olga"},
			"email with control": {Tenant: "acme", Email: "olga@zarya.example\r\nBcc: x@y.example"},
			"phone":              {Tenant: "acme", Phone: "600111222"},
			"phone with letters": {Tenant: "acme", Phone: "+34 600 111 222"},
		} {
			_, err := s.Subscribers(ctx, q)
			require.ErrorIs(t, err, history.ErrBadQuery, field)
		}
		for name, c := range map[string]history.SubscriberChange{
			"no tenant":         put("", "u-olga", "", 1),
			"no id":             put("acme", "", "", 1),
			"no revision":       put("acme", "u-olga", "", 0),
			"revision too high": put("acme", "u-olga", "", 1<<63),
		} {
			require.Error(t, s.ApplySubscribers(ctx, []history.SubscriberChange{c}), name)
		}
		require.Empty(t, everyone(t, s, history.SubscriberQuery{Tenant: "acme"}))
	})
}
