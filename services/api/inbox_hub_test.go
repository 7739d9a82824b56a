package api

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/inbox"
)

func TestAStreamThatFallsBehindIsDroppedNotWaitedFor(t *testing.T) {
	t.Parallel()
	h := newHub(Config{InboxStreams: 10, InboxStreamsPerSubscriber: 10, InboxStreamBuffer: 2})
	ana := feed{"acme", "ana"}
	slow, err := h.join(ana)
	require.NoError(t, err)
	keeping, err := h.join(ana)
	require.NoError(t, err)
	for seq := range uint64(5) {
		h.deliver(inbox.Change{Seq: seq + 1, Tenant: "acme", Subscriber: "ana", Kind: inbox.KindState})
		<-keeping.changes
	}
	select {
	case <-slow.gone:
	default:
		t.Fatal("the slow stream is still followed")
	}
	select {
	case <-keeping.gone:
		t.Fatal("the stream that kept up was dropped")
	default:
	}
	require.True(t, h.wants("acme", "ana"))
	h.leave(ana, slow) // after the hub dropped it: counted once
	h.leave(ana, keeping)
	require.False(t, h.wants("acme", "ana"))
	require.Zero(t, h.open)
}
