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
	started := make(chan struct{})
	loop, err := consumer.Start(context.Background(), c, func(ctx context.Context, msg jetstream.Msg) {
		close(started)
		<-ctx.Done() // waits for what never comes, until cancelled
		_ = msg.Nak()
	}, consumer.Config{})
	require.NoError(t, err)
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	require.ErrorIs(t, loop.Stop(ctx), context.DeadlineExceeded)
	require.Less(t, time.Since(begin), 5*time.Second)
}
