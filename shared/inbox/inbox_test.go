package inbox

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/streams"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// t0 is the tests' clock: items are created a second apart after it.
var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

type testBundle struct {
	store *Store
	js    jetstream.JetStream
	ctx   context.Context
	clock *clock
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// setup starts a server with the declared KV_inbox stream only.
func setup(t testing.TB) testBundle {
	t.Helper()
	n := heraldtest.StartNATS(t)
	ctx := heraldtest.Context(t)
	decl, err := streams.Find("KV_inbox")
	require.NoError(t, err)
	_, err = n.JS.CreateStream(ctx, decl.Config)
	require.NoError(t, err)
	s, err := Open(ctx, n.JS)
	require.NoError(t, err)
	c := &clock{now: t0.Add(24 * time.Hour)}
	s.now = c.Now
	return testBundle{store: s, js: n.JS, ctx: ctx, clock: c}
}

func item(i int) Item {
	return Item{
		ID: fmt.Sprintf("n%03d", i), Notification: fmt.Sprintf("not-%d", i),
		Title: fmt.Sprintf("PO-%d shipped", i), Body: "on its way",
		CreatedAt: t0.Add(time.Duration(i) * time.Second),
	}
}

// add writes items from..to-1 to the feed.
func (b testBundle) add(t testing.TB, tenant, sub string, from, to int, l Limits) {
	t.Helper()
	for i := from; i < to; i++ {
		_, fresh, err := b.store.Add(b.ctx, tenant, sub, item(i), l)
		require.NoError(t, err)
		require.True(t, fresh)
	}
}

func ids(items []Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

// all pages through the feed with q and returns the ids in order.
func (b testBundle) all(t testing.TB, tenant, sub string, q Query) []string {
	t.Helper()
	var out []string
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100)
		p, err := b.store.List(b.ctx, tenant, sub, q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Items), cmp.Or(q.Limit, DefaultLimit))
		out = append(out, ids(p.Items)...)
		if p.Next == "" {
			return out
		}
		q.Cursor = p.Next
	}
}

func TestListNewestFirstInKeysetPagesByState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Written out of order: the order is the items' created time.
	b.add(t, "acme", "ana", 5, 12, Limits{})
	b.add(t, "acme", "ana", 0, 5, Limits{})
	_, err := b.store.Mark(b.ctx, "acme", "ana", "n010", MarkRead)
	require.NoError(t, err)
	_, err = b.store.Mark(b.ctx, "acme", "ana", "n007", Seen)
	require.NoError(t, err)
	_, err = b.store.Mark(b.ctx, "acme", "ana", "n003", Archive)
	require.NoError(t, err)

	first, err := b.store.List(b.ctx, "acme", "ana", Query{})
	require.NoError(t, err)
	require.Equal(t, []string{"n011", "n010", "n009", "n008", "n007", "n006", "n005", "n004", "n002", "n001", "n000"}, ids(first.Items))
	require.Empty(t, first.Next)
	require.Equal(t, "PO-11 shipped", first.Items[0].Title)
	require.NotNil(t, first.Items[1].ReadAt)

	for _, tc := range []struct {
		state Filter
		want  []string
	}{
		{All, []string{"n011", "n010", "n009", "n008", "n007", "n006", "n005", "n004", "n002", "n001", "n000"}},
		{Unread, []string{"n011", "n009", "n008", "n007", "n006", "n005", "n004", "n002", "n001", "n000"}},
		{Unseen, []string{"n011", "n009", "n008", "n006", "n005", "n004", "n002", "n001", "n000"}},
		{Read, []string{"n010"}},
		{Archived, []string{"n003"}},
	} {
		require.Equal(t, tc.want, b.all(t, "acme", "ana", Query{Limit: 3, State: tc.state}), tc.state)
	}
	_, err = b.store.List(b.ctx, "acme", "ana", Query{State: "pinned"})
	require.ErrorIs(t, err, ErrBadFilter)
}

func TestListLimitAndCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.add(t, "acme", "ana", 0, 130, Limits{})
	p, err := b.store.List(b.ctx, "acme", "ana", Query{})
	require.NoError(t, err)
	require.Len(t, p.Items, DefaultLimit)
	p, err = b.store.List(b.ctx, "acme", "ana", Query{Limit: 500})
	require.NoError(t, err)
	require.Len(t, p.Items, MaxLimit)
	require.Equal(t, "n129", p.Items[0].ID)
	last, err := b.store.List(b.ctx, "acme", "ana", Query{Limit: 500, Cursor: p.Next})
	require.NoError(t, err)
	require.Len(t, last.Items, 30)
	require.Equal(t, "n029", last.Items[0].ID)
	require.Empty(t, last.Next)

	for _, bad := range []string{"!!", "bm90IGEgY3Vyc29y" /* "not a cursor" */, p.Next[:len(p.Next)-3] + "***"} {
		_, err = b.store.List(b.ctx, "acme", "ana", Query{Cursor: bad})
		require.ErrorIs(t, err, ErrBadCursor, bad)
	}
}

func TestAddIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.add(t, "acme", "ana", 0, 2, Limits{})
	_, err := b.store.Mark(b.ctx, "acme", "ana", "n001", MarkRead)
	require.NoError(t, err)
	again := item(1)
	again.Title = "written twice"
	got, fresh, err := b.store.Add(b.ctx, "acme", "ana", again, Limits{})
	require.NoError(t, err)
	require.False(t, fresh)
	require.NotNil(t, got.ReadAt, "the item as the feed holds it")
	p, err := b.store.List(b.ctx, "acme", "ana", Query{})
	require.NoError(t, err)
	require.Equal(t, []string{"n001", "n000"}, ids(p.Items))
	require.Equal(t, "PO-1 shipped", p.Items[0].Title)
	c, err := b.store.Counts(b.ctx, "acme", "ana")
	require.NoError(t, err)
	require.Equal(t, Counts{Unseen: 1, Unread: 1, Total: 2}, c)
}

func TestCountsFollowTheState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	counts := func() Counts {
		c, err := b.store.Counts(b.ctx, "acme", "ana")
		require.NoError(t, err)
		return c
	}
	require.Equal(t, Counts{}, counts(), "a subscriber with nothing")
	b.add(t, "acme", "ana", 0, 5, Limits{})
	require.Equal(t, Counts{Unseen: 5, Unread: 5, Total: 5}, counts())
	mark := func(id string, a Action) Item {
		it, err := b.store.Mark(b.ctx, "acme", "ana", id, a)
		require.NoError(t, err)
		return it
	}
	mark("n000", Seen)
	require.Equal(t, Counts{Unseen: 4, Unread: 5, Total: 5}, counts())
	read := mark("n001", MarkRead)
	require.NotNil(t, read.SeenAt, "read implies seen")
	require.Equal(t, "PO-1 shipped", read.Title)
	require.Equal(t, Counts{Unseen: 3, Unread: 4, Total: 5}, counts())
	rev := b.revision(t, "acme", "ana")
	again := mark("n001", MarkRead)
	require.Equal(t, read.ReadAt, again.ReadAt, "marking again changes nothing")
	require.Equal(t, rev, b.revision(t, "acme", "ana"), "and writes nothing")
	mark("n002", Archive)
	require.Equal(t, Counts{Unseen: 2, Unread: 3, Total: 4}, counts())
	mark("n001", MarkUnread)
	require.Equal(t, Counts{Unseen: 2, Unread: 4, Total: 4}, counts())
	n, err := b.store.ReadAll(b.ctx, "acme", "ana")
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.Equal(t, Counts{Unseen: 0, Unread: 0, Total: 4}, counts())
	rev = b.revision(t, "acme", "ana")
	n, err = b.store.ReadAll(b.ctx, "acme", "ana")
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, rev, b.revision(t, "acme", "ana"), "nothing to read: no write")
	mark("n002", Unarchive)
	require.Equal(t, Counts{Unseen: 1, Unread: 1, Total: 5}, counts(), "archived before read all: still unread")
	_, err = b.store.Mark(b.ctx, "acme", "ana", "n002", "pin")
	require.ErrorIs(t, err, ErrBadAction)
}

// revision is the feed's index revision: what tells a write happened.
func (b testBundle) revision(t *testing.T, tenant, sub string) uint64 {
	t.Helper()
	kve, err := b.store.kv.Get(b.ctx, indexKey(tenant, sub))
	require.NoError(t, err)
	return kve.Revision()
}

func TestLimitsDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want Limits }{
		{Limits{}, Limits{Retention: DefaultRetention, Cap: DefaultCap}},
		{Limits{Retention: -time.Hour, Cap: -1}, Limits{Retention: DefaultRetention, Cap: DefaultCap}},
		{Limits{Retention: time.Hour, Cap: 1 << 20}, Limits{Retention: time.Hour, Cap: MaxCap}},
		{Limits{Retention: time.Hour, Cap: 7}, Limits{Retention: time.Hour, Cap: 7}},
	} {
		require.Equal(t, tc.want, tc.in.WithDefaults(), tc.in)
	}
}

func TestFeedsAreApart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.add(t, "acme", "ana", 0, 3, Limits{})
	b.add(t, "acme", "bob", 10, 12, Limits{})
	b.add(t, "globex", "ana", 20, 21, Limits{})

	p, err := b.store.List(b.ctx, "acme", "bob", Query{})
	require.NoError(t, err)
	require.Equal(t, []string{"n011", "n010"}, ids(p.Items))
	p, err = b.store.List(b.ctx, "globex", "ana", Query{})
	require.NoError(t, err)
	require.Equal(t, []string{"n020"}, ids(p.Items))

	for _, tc := range []struct{ tenant, sub, id string }{
		{"acme", "bob", "n000"},   // another subscriber's
		{"globex", "ana", "n000"}, // the same subscriber id in another tenant
		{"acme", "ana", "n020"},   // another tenant's
		{"acme", "ana", "made-up"},
		{"acme", "nobody", "n000"},
	} {
		_, err := b.store.Mark(b.ctx, tc.tenant, tc.sub, tc.id, MarkRead)
		require.Equal(t, ErrNotFound, err, tc)
		_, err = b.store.Item(b.ctx, tc.tenant, tc.sub, tc.id)
		require.Equal(t, ErrNotFound, err, tc)
	}
	c, err := b.store.Counts(b.ctx, "acme", "ana")
	require.NoError(t, err)
	require.Equal(t, Counts{Unseen: 3, Unread: 3, Total: 3}, c)
}

// Two writers to one feed at once: each compare-and-set that loses reads
// again, so both changes land and the counts are exact.
func TestConcurrentMarksBothLand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.add(t, "acme", "ana", 0, 40, Limits{})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < 40; i += 2 {
				_, err := b.store.Mark(b.ctx, "acme", "ana", item(i).ID, MarkRead)
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	c, err := b.store.Counts(b.ctx, "acme", "ana")
	require.NoError(t, err)
	require.Equal(t, Counts{Unseen: 0, Unread: 0, Total: 40}, c)
}

func TestCapDropsOldestArchivedFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := Limits{Cap: 5}
	b.add(t, "acme", "ana", 0, 5, l)
	_, err := b.store.Mark(b.ctx, "acme", "ana", "n003", Archive)
	require.NoError(t, err)
	_, err = b.store.Mark(b.ctx, "acme", "ana", "n002", Archive)
	require.NoError(t, err)

	b.add(t, "acme", "ana", 5, 6, l)
	require.Equal(t, []string{"n003"}, b.all(t, "acme", "ana", Query{State: Archived}), "the oldest archived went")
	b.add(t, "acme", "ana", 6, 7, l)
	require.Equal(t, []string{"n006", "n005", "n004", "n001", "n000"}, b.all(t, "acme", "ana", Query{}))
	b.add(t, "acme", "ana", 7, 8, l)
	require.Equal(t, []string{"n007", "n006", "n005", "n004", "n001"}, b.all(t, "acme", "ana", Query{}), "then the oldest")
	b.requireNoContents(t, "acme", "ana", "n000", "n002", "n003")
}

// requireNoContents checks that the items' contents are gone from the
// stream, markers and all.
func (b testBundle) requireNoContents(t *testing.T, tenant, sub string, ids ...string) {
	t.Helper()
	str, err := b.js.Stream(b.ctx, stream)
	require.NoError(t, err)
	for _, id := range ids {
		_, err := str.GetLastMsgForSubject(b.ctx, "$KV."+Bucket+"."+itemKey(tenant, sub, id))
		require.ErrorIs(t, err, jetstream.ErrMsgNotFound, id)
	}
}

func TestRetentionDropsOldItemsAndContents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := Limits{Retention: 30 * 24 * time.Hour}
	b.add(t, "acme", "ana", 0, 3, l)
	b.add(t, "acme", "bob", 0, 1, l)
	b.clock.Set(t0.Add(30*24*time.Hour + 1500*time.Millisecond))

	// A write drops what is past the retention: n000 and n001.
	b.add(t, "acme", "ana", 100, 101, l)
	require.Equal(t, []string{"n100", "n002"}, b.all(t, "acme", "ana", Query{}))
	b.requireNoContents(t, "acme", "ana", "n000", "n001")
	_, err := b.store.Mark(b.ctx, "acme", "ana", "n000", MarkRead)
	require.ErrorIs(t, err, ErrNotFound)

	// Nobody writes to bob's feed: the sweep applies the retention.
	n, err := b.store.Sweep(b.ctx, "acme", l)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, b.all(t, "acme", "bob", Query{}))
	b.requireNoContents(t, "acme", "bob", "n000")
	c, err := b.store.Counts(b.ctx, "acme", "bob")
	require.NoError(t, err)
	require.Equal(t, Counts{}, c)

	// A feed with nothing to drop is read, not written.
	before := b.revision(t, "acme", "ana")
	n, err = b.store.Sweep(b.ctx, "acme", l)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, before, b.revision(t, "acme", "ana"))
}

func TestErase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.add(t, "acme", "ana", 0, 3, Limits{})
	b.add(t, "acme", "anabel", 0, 1, Limits{})
	require.NoError(t, b.store.Erase(b.ctx, "acme", "ana"))
	require.Empty(t, b.all(t, "acme", "ana", Query{}))
	b.requireNoContents(t, "acme", "ana", "n000", "n001", "n002")
	_, err := b.store.kv.Get(b.ctx, indexKey("acme", "ana"))
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound)
	require.Equal(t, []string{"n000"}, b.all(t, "acme", "anabel", Query{}), "another feed is left")
}
