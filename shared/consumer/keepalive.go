package consumer

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// maxHandlingAckWaits is MaxHandling's default, in AckWaits.
const maxHandlingAckWaits = 10

// keeper tells the server that a consumer's messages are still being
// handled — InProgress every third of AckWait — for at most MaxHandling
// each. A handler still running then is taken to be stuck: its message is
// no longer kept alive, so the server redelivers it after AckWait, to a
// worker that is not stuck. Without the bound, a handler that never
// returned held its message for ever, and every message like it took
// another worker.
//
// The handler's context is left alone: a handler may wait on purpose for
// as long as it takes (the delivery protocol, for the ledger to record an
// outcome, holding its lease so that a redelivered copy waits too).
type keeper struct {
	every, limit time.Duration
	logger       *slog.Logger
	overran      metric.Int64Counter // nil without a MeterProvider
	attrs        metric.MeasurementOption
}

// newKeeper is the keeper of the messages of consumer, on stream, whose
// AckWait is ackWait.
func newKeeper(cfg Config, stream, consumer string, ackWait time.Duration) (keeper, error) {
	ackWait = cmp.Or(ackWait, 30*time.Second) // a consumer without one has the server's
	k := keeper{
		every:  max(ackWait/3, 100*time.Millisecond),
		limit:  cmp.Or(cfg.MaxHandling, maxHandlingAckWaits*ackWait),
		logger: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)).With("consumer", consumer),
		attrs:  metric.WithAttributes(attribute.String("stream", stream), attribute.String("consumer", consumer)),
	}
	if cfg.MeterProvider == nil {
		return k, nil
	}
	var err error
	k.overran, err = cfg.MeterProvider.Meter("github.com/heraldhq/herald/shared/consumer").Int64Counter("herald.consumer.overran",
		metric.WithDescription("Messages whose handler ran past the consumer's max handling time: no longer kept alive, so the server redelivered them."))
	return k, err
}

// around keeps each message alive while h handles it.
func (k keeper) around(h Handler) Handler {
	return func(ctx context.Context, msg jetstream.Msg) Outcome {
		stop := k.keepAlive(ctx, msg)
		defer stop()
		return h(ctx, msg)
	}
}

// keepAlive sends InProgress for msg every k.every until stopped, or
// until k.limit has passed.
func (k keeper) keepAlive(ctx context.Context, msg jetstream.Msg) (stop func()) {
	var mu sync.Mutex
	stopped := false
	deadline := time.Now().Add(k.limit)
	var timer *time.Timer
	mu.Lock()
	timer = time.AfterFunc(k.every, func() {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case stopped:
		case time.Now().After(deadline):
			k.overrun(ctx, msg)
		default:
			_ = msg.InProgress()
			timer.Reset(k.every)
		}
	})
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		timer.Stop()
	}
}

// overrun says that msg's handler ran past k.limit.
func (k keeper) overrun(ctx context.Context, msg jetstream.Msg) {
	k.logger.ErrorContext(ctx, "handler still running past max handling: its message is no longer kept alive, and comes back",
		"subject", msg.Subject(), "max_handling", k.limit)
	if k.overran != nil {
		k.overran.Add(ctx, 1, k.attrs)
	}
}
