package resource_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/resource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// note is the resource these tests keep.
type note struct {
	Tenant string `json:"tenant"`
	ID     string `json:"id"`
	Text   string `json:"text"`
}

var errNoText = errors.New("text: required")

func (n note) validate() error {
	if n.Text == "" {
		return errNoText
	}
	return nil
}

var notes = resource.Kind[note]{Name: "note", Bucket: "notes",
	Key:      func(n note) string { return n.Tenant + "." + n.ID },
	Validate: note.validate, MaxBytes: 256, MaxPerTenant: 3}

type testBundle struct {
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	store *resource.Store[note]
}

func setup(t *testing.T, kind resource.Kind[note]) (context.Context, testBundle) {
	t.Helper()
	n, ctx := heraldtest.StartNATS(t), heraldtest.Context(t)
	kv, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: kind.Bucket, History: 5})
	require.NoError(t, err)
	store, err := resource.Open(ctx, n.JS, kind)
	require.NoError(t, err)
	return ctx, testBundle{js: n.JS, kv: kv, store: store}
}

// A revision-checked write loses to one that came after the read, and
// leaves it standing.
func TestUpdateAtAStaleRevisionIsAConflict(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, notes)
	first, err := b.store.Create(ctx, note{Tenant: "acme", ID: "n1", Text: "one"})
	require.NoError(t, err)
	_, err = b.store.Update(ctx, note{Tenant: "acme", ID: "n1", Text: "two"}, first)
	require.NoError(t, err)

	_, err = b.store.Update(ctx, note{Tenant: "acme", ID: "n1", Text: "stale"}, first)
	require.ErrorIs(t, err, resource.ErrConflict)
	got, _, err := b.store.Get(ctx, "acme.n1")
	require.NoError(t, err)
	require.Equal(t, "two", got.Text, "the later write stands")
}

// Create writes where no record is, and over a deleted one; never over a
// record.
func TestCreateRefusesARecordThatIsThere(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, notes)
	_, err := b.store.Create(ctx, note{Tenant: "acme", ID: "n1", Text: "one"})
	require.NoError(t, err)
	_, err = b.store.Create(ctx, note{Tenant: "acme", ID: "n1", Text: "again"})
	require.ErrorIs(t, err, resource.ErrExists)
	got, _, err := b.store.Get(ctx, "acme.n1")
	require.NoError(t, err)
	require.Equal(t, "one", got.Text)

	require.NoError(t, b.store.Delete(ctx, "acme.n1"))
	_, err = b.store.Create(ctx, note{Tenant: "acme", ID: "n1", Text: "anew"})
	require.NoError(t, err, "a deleted record may be made again")
	require.ErrorIs(t, b.store.Delete(ctx, "acme.n2"), resource.ErrNotFound)
}

// Nothing is written that the kind's Validate refuses; its words are the
// error.
func TestAnInvalidRecordIsNotWritten(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, notes)
	for name, write := range map[string]func(note) error{
		"create": func(n note) error { _, err := b.store.Create(ctx, n); return err },
		"put":    func(n note) error { _, err := b.store.Put(ctx, n); return err },
		"update": func(n note) error { _, err := b.store.Update(ctx, n, 0); return err },
		"patch": func(n note) error {
			_, err := b.store.Patch(ctx, "acme.n1", func(v *note, _ bool) (resource.Write, error) { *v = n; return resource.Save, nil })
			return err
		},
	} {
		err := write(note{Tenant: "acme", ID: "n1"})
		require.ErrorIs(t, err, errNoText, name)
		_, err = b.kv.Get(ctx, "acme.n1")
		require.ErrorIs(t, err, jetstream.ErrKeyNotFound, "%s wrote a record its kind refuses", name)
	}
}

// A record larger than its kind's MaxBytes is refused, and not written.
func TestARecordOverItsSizeIsRefused(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, notes)
	_, err := b.store.Put(ctx, note{Tenant: "acme", ID: "n1", Text: strings.Repeat("x", 256)})
	require.ErrorIs(t, err, resource.ErrTooLarge)
	require.ErrorIs(t, err, resource.ErrInvalid)
	require.ErrorContains(t, err, "a note is at most 256 bytes stored")
	_, err = b.kv.Get(ctx, "acme.n1")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound)
}

// A tenant at its kind's MaxPerTenant makes no new record; it may still
// change the ones it has, and another tenant is not counted against it.
func TestATenantAtItsCountMakesNoNewRecord(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, notes)
	for i := range 3 {
		_, err := b.store.Create(ctx, note{Tenant: "acme", ID: fmt.Sprint("n", i), Text: "x"})
		require.NoError(t, err)
	}
	_, err := b.store.Create(ctx, note{Tenant: "acme", ID: "n3", Text: "x"})
	require.ErrorIs(t, err, resource.ErrTooMany)
	_, err = b.store.Put(ctx, note{Tenant: "acme", ID: "n3", Text: "x"})
	require.ErrorIs(t, err, resource.ErrTooMany)
	_, err = b.store.Patch(ctx, "acme.n3", func(v *note, _ bool) (resource.Write, error) {
		*v = note{Tenant: "acme", ID: "n3", Text: "x"}
		return resource.Save, nil
	})
	require.ErrorIs(t, err, resource.ErrTooMany)

	_, err = b.store.Put(ctx, note{Tenant: "acme", ID: "n0", Text: "changed"})
	require.NoError(t, err, "a record the tenant has is not a new one")
	_, err = b.store.Create(ctx, note{Tenant: "globex", ID: "n3", Text: "x"})
	require.NoError(t, err)
	list, _, err := b.store.List(ctx, "acme", resource.Page{})
	require.NoError(t, err)
	require.Len(t, list, 3)
}

// A tenant lists its own records only, a page at a time in key order; a
// tenant that would be a wildcard or several tokens is refused.
func TestAListIsTheTenantsOwnPageByPage(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, resource.Kind[note]{Name: "note", Bucket: "notes", Key: notes.Key})
	for _, n := range []note{{"acme", "c", "3"}, {"acme", "a", "1"}, {"globex", "b", "x"}, {"acme", "b", "2"},
		{"acmecorp", "a", "y"}, {"acme", "d", "4"}, {"acme", "e", "5"}} {
		_, err := b.store.Put(ctx, n)
		require.NoError(t, err)
	}
	var texts []string
	next := ""
	for page := 0; ; page++ {
		list, after, err := b.store.List(ctx, "acme", resource.Page{After: next, Limit: 2})
		require.NoError(t, err)
		require.LessOrEqual(t, len(list), 2)
		for _, n := range list {
			require.Equal(t, "acme", n.Tenant)
			texts = append(texts, n.Text)
		}
		if next = after; next == "" {
			break
		}
		require.Less(t, page, 3, "the pages end")
	}
	require.Equal(t, []string{"1", "2", "3", "4", "5"}, texts)

	all, err := b.store.All(ctx, "globex")
	require.NoError(t, err)
	require.Equal(t, []note{{"globex", "b", "x"}}, all)
	for _, tenant := range []string{"*", ">", "acme.*", "acme.a", "", "acme corp"} {
		_, _, err := b.store.List(ctx, tenant, resource.Page{})
		require.ErrorIs(t, err, resource.ErrInvalid, "tenant %q", tenant)
		_, err = b.store.All(ctx, tenant)
		require.ErrorIs(t, err, resource.ErrInvalid, "tenant %q", tenant)
	}
}

// Patch writes its edit over what another writer did between its read
// and its write, not instead of it.
func TestPatchEditsTheLatestRecord(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, notes)
	_, err := b.store.Put(ctx, note{Tenant: "acme", ID: "n1", Text: "a"})
	require.NoError(t, err)
	calls := 0
	got, err := b.store.Patch(ctx, "acme.n1", func(v *note, found bool) (resource.Write, error) {
		require.True(t, found)
		if calls++; calls == 1 { // another writer gets in after this read
			_, err := b.store.Put(ctx, note{Tenant: "acme", ID: "n1", Text: v.Text + "b"})
			require.NoError(t, err)
		}
		v.Text += "c"
		return resource.Save, nil
	})
	require.NoError(t, err)
	require.Equal(t, "abc", got.Text)
	stored, _, err := b.store.Get(ctx, "acme.n1")
	require.NoError(t, err)
	require.Equal(t, "abc", stored.Text, "both writers' changes are kept")
	require.Equal(t, 2, calls)

	_, err = b.store.Patch(ctx, "acme.n1", func(v *note, _ bool) (resource.Write, error) {
		_, err := b.store.Put(ctx, note{Tenant: "acme", ID: "n1", Text: "again"}) // every time
		require.NoError(t, err)
		return resource.Save, nil
	})
	require.ErrorIs(t, err, resource.ErrConflict, "a record that keeps changing is given up on")
}

// Every write says who made it, and a key's changes list who did what
// when; a Replace leaves no revision before it.
func TestChangesSayWhoDidWhat(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, notes)
	_, err := b.store.Create(resource.WithActor(ctx, "api:key_1"), note{Tenant: "acme", ID: "n1", Text: "a"})
	require.NoError(t, err)
	_, err = b.store.Put(ctx, note{Tenant: "acme", ID: "n1", Text: "b"})
	require.NoError(t, err)
	require.NoError(t, b.store.Delete(resource.WithActor(ctx, "cli\r\nX-Forged: 1"), "acme.n1"))

	changes, err := b.store.Changes(ctx, "acme.n1")
	require.NoError(t, err)
	require.Len(t, changes, 3)
	require.Equal(t, []string{"api:key_1", "", "cliX-Forged: 1"}, []string{changes[0].Actor, changes[1].Actor, changes[2].Actor})
	require.Equal(t, []bool{false, false, true}, []bool{changes[0].Deleted, changes[1].Deleted, changes[2].Deleted})
	require.False(t, changes[0].Time.IsZero())
	_, err = b.store.Changes(ctx, "acme.none")
	require.ErrorIs(t, err, resource.ErrNotFound)

	_, err = b.store.Create(ctx, note{Tenant: "acme", ID: "n1", Text: "c"})
	require.NoError(t, err)
	_, err = b.store.Patch(resource.WithActor(ctx, "reseal"), "acme.n1", func(v *note, _ bool) (resource.Write, error) {
		v.Text = "d"
		return resource.Replace, nil
	})
	require.NoError(t, err)
	changes, err = b.store.Changes(ctx, "acme.n1")
	require.NoError(t, err)
	require.Len(t, changes, 1, "a Replace forgets the revisions before it")
	require.Equal(t, "reseal", changes[0].Actor)
}

// The cache follows the bucket; a value that does not decode is what the
// kind says.
func TestTheCacheFollowsTheBucket(t *testing.T) {
	t.Parallel()
	kind := notes
	kind.Unreadable = func(key string, err error) (note, bool) { return note{ID: key, Text: "unreadable"}, true }
	ctx, b := setup(t, kind)
	_, err := b.store.Put(ctx, note{Tenant: "acme", ID: "n1", Text: "a"})
	require.NoError(t, err)
	_, err = b.kv.Put(ctx, "acme.broken", []byte("{"))
	require.NoError(t, err)

	cache, err := resource.Watch(ctx, b.js, kind)
	require.NoError(t, err)
	defer cache.Stop()
	got, ok := cache.Get("acme.n1")
	require.True(t, ok)
	require.Equal(t, "a", got.Text)
	got, ok = cache.Get("acme.broken")
	require.True(t, ok)
	require.Equal(t, note{ID: "acme.broken", Text: "unreadable"}, got)

	require.NoError(t, b.store.Delete(ctx, "acme.n1"))
	require.Eventually(t, func() bool { _, ok := cache.Get("acme.n1"); return !ok }, 10*time.Second, 5*time.Millisecond)
}

// A missing record is the kind's NotFound, which matches ErrNotFound.
func TestAMissingRecordIsTheKindsNotFound(t *testing.T) {
	t.Parallel()
	errNoNote := errors.New("notes: no such note")
	kind := notes
	kind.NotFound = errNoNote
	ctx, b := setup(t, kind)
	for _, key := range []string{"acme.n1", "acme.*", ""} {
		_, _, err := b.store.Get(ctx, key)
		require.ErrorIs(t, err, errNoNote, key)
		require.ErrorIs(t, err, resource.ErrNotFound, key)
		require.EqualError(t, err, "notes: no such note")
	}
}
