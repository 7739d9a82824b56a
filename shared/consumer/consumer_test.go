package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/consumer"
)

// A handler stuck on something that never answers (an ack lost in a
// failover) must not hold a shutdown past its deadline: Stop cancels it.
func TestStopCancelsHandlersStuckPastTheDeadline(t *testing.T) {
	t.Parallel()
	_, _, c := workQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	started, cancelled := make(chan struct{}), make(chan struct{})
	loop, err := consumer.Start(context.Background(), c, func(ctx context.Context, msg jetstream.Msg) {
		close(started)
		<-ctx.Done() // waits for what never comes, until cancelled
		close(cancelled)
		_ = msg.Nak()
	}, consumer.Config{})
	require.NoError(t, err)
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- loop.Stop(ctx) }()
	// The handler never returns by itself: only Stop cancelling it lets
	// either of these happen.
	select {
	case err := <-stopped:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(30 * time.Second):
		require.Fail(t, "Stop waited on a handler stuck past its deadline")
	}
	select {
	case <-cancelled:
	case <-time.After(30 * time.Second):
		require.Fail(t, "the stuck handler's context was never cancelled")
	}
}
