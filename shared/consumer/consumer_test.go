package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// A handler stuck on something that never answers (an ack lost in a
// failover) must not hold a shutdown past its deadline: Stop cancels it.
func TestStopCancelsHandlersStuckPastTheDeadline(t *testing.T) {
	t.Parallel()
	n, _, c := workQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	started, cancelled := make(chan struct{}), make(chan struct{})
	loop, err := consumer.Start(context.Background(), c, func(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
		close(started)
		<-ctx.Done() // waits for what never comes, until cancelled
		close(cancelled)
		return consumer.Leave()
	}, consumer.Config{JetStream: n.JS})
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

// settled runs h over the work queue's one message and returns the loop's
// DLQ stream, once h has run the given number of times.
func settled(t *testing.T, cfg jetstream.ConsumerConfig, runs int, h consumer.Handler) (*heraldtest.NATS, jetstream.Stream, jetstream.Stream) {
	t.Helper()
	n, wq, c := workQueue(t, cfg)
	ctx := heraldtest.Context(t)
	dlq, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}})
	require.NoError(t, err)
	ran := make(chan struct{}, runs)
	loop, err := consumer.Start(ctx, c, func(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
		o := h(ctx, msg)
		ran <- struct{}{}
		return o
	}, consumer.Config{JetStream: n.JS})
	require.NoError(t, err)
	for range runs {
		select {
		case <-ran:
		case <-time.After(30 * time.Second):
			require.Fail(t, "the handler did not run as often as expected")
		}
	}
	require.NoError(t, loop.Stop(ctx))
	return n, wq, dlq
}

func TestDoneRemovesTheMessage(t *testing.T) {
	t.Parallel()
	_, wq, dlq := settled(t, jetstream.ConsumerConfig{}, 1, func(context.Context, jetstream.Msg) consumer.Outcome {
		return consumer.Done()
	})
	// An ack is not confirmed by the server: on a loaded machine the work
	// queue may still hold the message just after the loop stopped.
	require.Eventually(t, func() bool { return info(t, wq).State.Msgs == 0 }, 10*time.Second, 10*time.Millisecond, "done: acknowledged")
	require.Zero(t, info(t, dlq).State.Msgs)
}

func TestRetryComesBackThenGivesUpAtMaxDeliverWithTheReason(t *testing.T) {
	t.Parallel()
	_, wq, dlq := settled(t, jetstream.ConsumerConfig{MaxDeliver: 3}, 3, func(context.Context, jetstream.Msg) consumer.Outcome {
		return consumer.Retry(errors.New("the provider is down"), time.Millisecond, time.Millisecond)
	})
	// Termination is not confirmed by the server: wait for it.
	require.Eventually(t, func() bool { return info(t, wq).State.Msgs == 0 }, 10*time.Second, 10*time.Millisecond, "given up: terminated")
	entry, err := dlq.GetLastMsgForSubject(heraldtest.Context(t), "dlq.WQ.w")
	require.NoError(t, err)
	require.Equal(t, "gave up after 3 deliveries: the provider is down", entry.Header.Get(deadletter.HeaderReason))
	require.Equal(t, "m", string(entry.Data))
}

func TestGiveUpKeepsTheMessageWhenTheDLQCannotTakeIt(t *testing.T) {
	t.Parallel()
	n, wq, c := workQueue(t, jetstream.ConsumerConfig{})
	ctx := heraldtest.Context(t)
	runs := make(chan uint64, 2)
	loop, err := consumer.Start(ctx, c, func(_ context.Context, msg jetstream.Msg) consumer.Outcome {
		md, _ := msg.Metadata()
		runs <- md.NumDelivered
		return consumer.GiveUp(errors.New("malformed"))
	}, consumer.Config{JetStream: n.JS}) // no DLQ stream: the copy fails
	require.NoError(t, err)
	for want := range uint64(2) {
		select {
		case got := <-runs:
			require.Equal(t, want+1, got, "not terminated without its copy: delivered again")
		case <-time.After(30 * time.Second):
			require.Fail(t, "the message did not come back")
		}
	}
	require.NoError(t, loop.Stop(ctx))
	require.EqualValues(t, 1, info(t, wq).State.Msgs)
}

func info(t *testing.T, s jetstream.Stream) *jetstream.StreamInfo {
	t.Helper()
	i, err := s.Info(heraldtest.Context(t))
	require.NoError(t, err)
	return i
}
