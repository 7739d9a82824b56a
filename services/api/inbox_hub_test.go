package api

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

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

// lockedBuffer is a stream's body the test reads while relay writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestARelayedStreamSkipsWhatCatchingUpSent(t *testing.T) {
	t.Parallel()
	s := &Service{cfg: Config{InboxHeartbeat: time.Hour}}
	fl := &follower{changes: make(chan *inbox.Change, 4), gone: make(chan struct{})}
	// Joined before catching up: the live log holds what Since also read.
	fl.changes <- &inbox.Change{Seq: 5, Kind: inbox.KindState}
	fl.changes <- &inbox.Change{Seq: 6, Kind: inbox.KindState}
	fl.changes <- &inbox.Change{Seq: 7, Kind: inbox.KindState}
	body := &lockedBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.relay(ctx, &sse{w: body}, fl, 6)
	}()
	require.Eventually(t, func() bool { return strings.Contains(body.String(), "id: 7\n") }, 10*time.Second, time.Millisecond)
	cancel()
	<-done
	require.NotContains(t, body.String(), "id: 5\n")
	require.NotContains(t, body.String(), "id: 6\n")
}
