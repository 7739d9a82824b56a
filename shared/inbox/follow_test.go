package inbox

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFollowSeesAnAddAndAMark(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.add(t, "acme", "ana", 0, 1, Limits{}) // before the follower: not seen
	changes := make(chan Change, 16)
	stop, err := Follow(b.ctx, b.js, func(tenant, sub string) bool { return tenant == "acme" && sub == "ana" },
		func(c Change) { changes <- c })
	require.NoError(t, err)
	defer stop()

	b.add(t, "acme", "bob", 5, 6, Limits{}) // not wanted
	b.add(t, "acme", "ana", 1, 2, Limits{})
	_, err = b.store.Mark(b.ctx, "acme", "ana", "n001", MarkRead)
	require.NoError(t, err)

	added := <-changes
	require.Equal(t, KindItem, added.Kind)
	require.Equal(t, "ana", added.Subscriber)
	require.Equal(t, "PO-1 shipped", added.Item.Title)
	require.Equal(t, Counts{Unseen: 2, Unread: 2, Total: 2}, added.Counts, "told with the index that lists it")
	marked := <-changes
	require.Equal(t, KindState, marked.Kind)
	require.Equal(t, Counts{Unseen: 1, Unread: 1, Total: 2}, marked.Counts)
	require.Len(t, marked.States, 1)
	require.Equal(t, "n001", marked.States[0].ID)
	require.NotNil(t, marked.States[0].ReadAt)
	require.Less(t, added.Seq, marked.Seq)
	require.Empty(t, changes)
}

func TestSinceIsWhatWasMissed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.add(t, "acme", "ana", 0, 2, Limits{})
	seq, err := b.store.Since(b.ctx, "acme", "ana", 0)
	require.NoError(t, err)
	last := seq[len(seq)-1]
	require.Equal(t, KindSync, last.Kind)

	b.add(t, "acme", "ana", 2, 4, Limits{})
	_, err = b.store.Mark(b.ctx, "acme", "ana", "n000", Archive)
	require.NoError(t, err)
	missed, err := b.store.Since(b.ctx, "acme", "ana", last.Seq)
	require.NoError(t, err)
	require.Len(t, missed, 3)
	require.Equal(t, "n002", missed[0].Item.ID)
	require.Equal(t, "n003", missed[1].Item.ID)
	require.Less(t, last.Seq, missed[0].Seq)
	sync := missed[2]
	require.Equal(t, KindSync, sync.Kind)
	require.Equal(t, Counts{Unseen: 3, Unread: 3, Total: 3}, sync.Counts)
	require.Len(t, sync.States, 4)

	none, err := b.store.Since(b.ctx, "acme", "ana", sync.Seq)
	require.NoError(t, err)
	require.Empty(t, none)
}

// Contents whose index write never came — a writer that died between the
// two — are never told: the feed does not hold the item.
func TestFollowTellsNoItemTheIndexDoesNotList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	changes := make(chan Change, 16)
	stop, err := Follow(b.ctx, b.js, func(string, string) bool { return true }, func(c Change) { changes <- c })
	require.NoError(t, err)
	defer stop()
	kv, err := b.js.KeyValue(b.ctx, Bucket)
	require.NoError(t, err)
	orphan, err := json.Marshal(Item{ID: "orphan", Title: "never listed"})
	require.NoError(t, err)
	_, err = kv.Put(b.ctx, itemKey("acme", "ana", "orphan"), orphan)
	require.NoError(t, err)
	b.add(t, "acme", "ana", 0, 1, Limits{})

	added := <-changes
	require.Equal(t, KindItem, added.Kind)
	require.NotEqual(t, "orphan", added.Item.ID)
	require.Empty(t, changes)
}
