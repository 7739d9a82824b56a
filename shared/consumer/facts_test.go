package consumer_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// Facts about JetStream that Herald's design relies on, checked against the
// nats-server version embedded here, so an upgrade that changes one fails
// loudly instead of quietly.

func workQueue(t *testing.T, consumer jetstream.ConsumerConfig) (*heraldtest.NATS, jetstream.Stream, jetstream.Consumer) {
	t.Helper()
	n := heraldtest.StartNATS(t)
	ctx := heraldtest.Context(t)
	s, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "WQ", Subjects: []string{"wq.>"}, Retention: jetstream.WorkQueuePolicy})
	require.NoError(t, err)
	consumer.Durable, consumer.AckPolicy = "w", jetstream.AckExplicitPolicy
	c, err := s.CreateConsumer(ctx, consumer)
	require.NoError(t, err)
	_, err = n.JS.Publish(ctx, "wq.x", []byte("m"))
	require.NoError(t, err)
	return n, s, c
}

func next(t *testing.T, c jetstream.Consumer, wait time.Duration) jetstream.Msg {
	t.Helper()
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(wait))
	require.NoError(t, err)
	for m := range batch.Messages() {
		return m
	}
	return nil
}

// AckTerm deletes the message from a work-queue stream: whoever gives up
// must copy it to the DLQ first.
func TestFactTermDeletesFromAWorkQueue(t *testing.T) {
	t.Parallel()
	_, s, c := workQueue(t, jetstream.ConsumerConfig{})
	m := next(t, c, time.Second)
	require.NoError(t, m.TermWithReason("given up"))
	require.Eventually(t, func() bool {
		info, err := s.Info(heraldtest.Context(t))
		require.NoError(t, err)
		return info.State.Msgs == 0
	}, 2*time.Second, 10*time.Millisecond)
}

// NakWithDelay is honoured when the consumer has no BackOff: the message is
// back within a fetch that waits 5 s, far short of the 30 s AckWait it would
// otherwise wait for.
func TestFactNakDelayWithoutBackOff(t *testing.T) {
	t.Parallel()
	_, _, c := workQueue(t, jetstream.ConsumerConfig{AckWait: 30 * time.Second})
	require.NoError(t, next(t, c, time.Second).NakWithDelay(200*time.Millisecond))
	m := next(t, c, 5*time.Second)
	require.NotNil(t, m, "not back within 5 s: the NAK's 200 ms delay was not honoured")
	meta, err := m.Metadata()
	require.NoError(t, err)
	require.Equal(t, uint64(2), meta.NumDelivered)
}

// With a BackOff, a NAK's delay is counted against BackOff[redeliveries]
// instead of AckWait (= BackOff[0]), so from the second NAK on, a short
// NakWithDelay turns into BackOff[n]-AckWait more: Herald's NOTIFY consumers
// therefore declare no BackOff and grow their own NAK delays.
func TestFactBackOffLengthensNakDelays(t *testing.T) {
	t.Parallel()
	_, _, c := workQueue(t, jetstream.ConsumerConfig{MaxDeliver: 5, BackOff: []time.Duration{time.Second, 4 * time.Second}})
	require.NoError(t, next(t, c, time.Second).NakWithDelay(100*time.Millisecond))
	second := next(t, c, 2*time.Second)
	require.NotNil(t, second, "the first NAK's delay is honoured")
	require.NoError(t, second.NakWithDelay(100*time.Millisecond))
	require.Nil(t, next(t, c, 2*time.Second), "the second is not: not back after the 100ms asked for")
	require.NotNil(t, next(t, c, 5*time.Second), "but after about BackOff[1]-AckWait = 3s more")
}
