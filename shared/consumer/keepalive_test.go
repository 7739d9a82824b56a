package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// stuck is a handler whose first delivery never returns until the test is
// over; it hands on each delivery's count, and settles the others done.
type stuck struct {
	deliveries chan uint64
	release    chan struct{}
}

func newStuck() *stuck {
	return &stuck{deliveries: make(chan uint64, 4), release: make(chan struct{})}
}

func (s *stuck) handle(_ context.Context, msg jetstream.Msg) consumer.Outcome {
	md, err := msg.Metadata()
	if err != nil {
		return consumer.Leave()
	}
	s.deliveries <- md.NumDelivered
	if md.NumDelivered > 1 {
		return consumer.Done()
	}
	<-s.release
	return consumer.Leave()
}

// A handler that never returns cannot keep its message for ever: past
// MaxHandling the loop stops telling the server it is at work, so the
// message is delivered again — here to the other worker — and that is
// counted. Plain and fair loops alike.
func TestAHandlerStuckPastMaxHandlingLetsItsMessageGo(t *testing.T) {
	t.Parallel()
	const ackWait, maxHandling = 500 * time.Millisecond, 2 * time.Second
	for name, start := range map[string]func(t *testing.T, h consumer.Handler, cfg consumer.Config) string{
		"plain": func(t *testing.T, h consumer.Handler, cfg consumer.Config) string {
			n, _, c := workQueue(t, jetstream.ConsumerConfig{AckWait: ackWait})
			cfg.JetStream = n.JS
			loop, err := consumer.Start(heraldtest.Context(t), c, h, cfg)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, loop.Stop(context.Background())) })
			return "w"
		},
		"fair": func(t *testing.T, h consumer.Handler, cfg consumer.Config) string {
			n := fairQueue(t, map[string]int{"q.low.a": 1})
			low := class("low", 1)
			low.Template.AckWait = ackWait
			startFair(t, n, h, consumer.FairConfig{Config: cfg, Classes: []consumer.Class{low}})
			return "low"
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reader := sdkmetric.NewManualReader()
			s := newStuck()
			name := start(t, s.handle, consumer.Config{Concurrency: 2, MaxHandling: maxHandling,
				MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
			t.Cleanup(func() { close(s.release) }) // before the loop stops: cleanups run last first
			for want := range uint64(2) {
				select {
				case got := <-s.deliveries:
					require.Equal(t, want+1, got)
				case <-time.After(30 * time.Second):
					require.Fail(t, "the stuck handler's message was not delivered again", "delivery %d", want+1)
				}
			}
			require.Equal(t, int64(1), overran(t, reader, name))
		})
	}
}

// overran is herald.consumer.overran for consumer.
func overran(t *testing.T, reader *sdkmetric.ManualReader, consumer string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "herald.consumer.overran" {
				for _, dp := range sum.DataPoints {
					if v, _ := dp.Attributes.Value("consumer"); v.AsString() == consumer {
						return dp.Value
					}
				}
			}
		}
	}
	return 0
}
