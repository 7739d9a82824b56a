package inbox

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/streams"
)

// withRuns adds the workflow service's RUNS stream, where runs.in.<tenant>
// is kept.
func (b testBundle) withRuns(t *testing.T) {
	t.Helper()
	decl, err := streams.Find("RUNS")
	require.NoError(t, err)
	_, err = b.js.CreateStream(b.ctx, decl.Config)
	require.NoError(t, err)
}

// told are the run statuses RUNS holds, with their Nats-Msg-Ids.
func (b testBundle) told(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range heraldtest.StreamMessages(t, b.js, "RUNS") {
		var msg struct {
			Kind   string                 `json:"kind"`
			Status notification.RunStatus `json:"status"`
		}
		require.NoError(t, json.Unmarshal(m.Data, &msg))
		s := msg.Status
		require.Equal(t, notification.RunStatusKind, msg.Kind)
		require.Equal(t, "runs.in.acme", m.Subject)
		require.Equal(t, "runstatus:"+s.NotificationID+":read", m.Header.Get(jetstream.MsgIDHeader))
		require.Equal(t, b.clock.Now(), s.Time)
		out = append(out, s.Key+"/"+s.NotificationID+"/"+s.State)
	}
	return out
}

func ranItem(i int) Item {
	it := item(i)
	it.Run = &notification.RunRef{Key: "acme.UE8tMQ.run_" + it.ID, Step: 0}
	return it
}

// Reading an item a workflow's send wrote tells its run; marking it read
// again tells it again, so a word lost the first time (here: no RUNS to
// take it) reaches the run on the next mark. Other marks, and items of no
// run, tell nothing.
func TestReadingAnItemTellsItsRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, it := range []Item{ranItem(1), item(2)} {
		_, _, err := b.store.Add(b.ctx, "acme", "u1", it, Limits{})
		require.NoError(t, err)
	}
	_, err := b.store.Mark(b.ctx, "acme", "u1", "n001", MarkRead)
	require.ErrorContains(t, err, "the item is read, but telling its workflow run failed")
	c, err := b.store.Counts(b.ctx, "acme", "u1")
	require.NoError(t, err)
	require.Equal(t, 1, c.Unread, "read all the same")

	b.withRuns(t)
	for _, a := range []Action{Seen, MarkUnread, Archive} {
		_, err := b.store.Mark(b.ctx, "acme", "u1", "n001", a)
		require.NoError(t, err)
	}
	_, err = b.store.Mark(b.ctx, "acme", "u1", "n002", MarkRead)
	require.NoError(t, err)
	require.Empty(t, b.told(t), "no item of a run was read")

	_, err = b.store.Mark(b.ctx, "acme", "u1", "n001", MarkRead)
	require.NoError(t, err)
	require.Equal(t, []string{"acme.UE8tMQ.run_n001/not-1/read"}, b.told(t))
}

// Reading the feed at once tells the runs of the items it read, and only
// theirs.
func TestReadingAllTellsTheRunsOfWhatItRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.withRuns(t)
	for _, it := range []Item{ranItem(1), item(2), ranItem(3), ranItem(4)} {
		_, _, err := b.store.Add(b.ctx, "acme", "u1", it, Limits{})
		require.NoError(t, err)
	}
	_, err := b.store.Mark(b.ctx, "acme", "u1", "n004", Archive)
	require.NoError(t, err)
	n, err := b.store.ReadAll(b.ctx, "acme", "u1")
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.ElementsMatch(t, []string{"acme.UE8tMQ.run_n001/not-1/read", "acme.UE8tMQ.run_n003/not-3/read"}, b.told(t))
}
