// Package consumer runs a handler over durable JetStream pull consumers with
// bounded concurrency, and drains on shutdown: it stops pulling, lets every
// buffered and in-flight message be settled, then returns.
//
// Handlers decide, the loop settles: a handler returns an Outcome — Done,
// Retry after a growing delay, GiveUp with a reason — and one place acks,
// naks with back-off, or copies the message to the DLQ and terminates it.
// Tracing and metrics wrap handlers as Middleware.
//
// The client-side buffer is kept small (twice the concurrency by default) so
// a message does not sit in the buffer past its AckWait, and a handler that
// runs long tells the server so (InProgress every third of AckWait), so its
// message is not redelivered to another worker meanwhile — up to
// Config.MaxHandling, past which the handler is taken to be stuck and its
// message is let go.
package consumer

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Handler processes one message and says how to settle it. Its ctx is
// cancelled only when a shutdown runs out of time.
type Handler func(ctx context.Context, msg jetstream.Msg) Outcome

// Middleware wraps a handler with a cross-cutting concern.
type Middleware func(Handler) Handler

// Config tunes a Loop.
type Config struct {
	// JetStream is where dead letters are written. Required.
	JetStream jetstream.JetStream
	// Concurrency is how many messages are handled at once. Defaults to 1.
	Concurrency int
	// Buffer is how many messages the client pulls ahead. Defaults to
	// twice Concurrency.
	Buffer int
	// Logger reports pull errors (missed heartbeats, a deleted consumer).
	// Defaults to discarding them.
	Logger *slog.Logger
	// TracerProvider, when set, traces each message (Traced).
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, counts settled messages (Counted) and
	// handlers that ran past MaxHandling, and observes the consumer's
	// pending, ack-pending and redelivered counts whenever metrics are
	// collected.
	MeterProvider metric.MeterProvider
	// MaxHandling is how long a handler may hold its message. The loop
	// tells the server the message is still being handled (InProgress)
	// until then and no longer: a handler that never returns cannot keep
	// its message, which the server then redelivers after AckWait. It is
	// logged, and counted (herald.consumer.overran). Defaults to ten times
	// the consumer's AckWait.
	MaxHandling time.Duration
}

// Loop is a running consumer.
type Loop struct {
	cc      jetstream.ConsumeContext
	work    chan jetstream.Msg
	quit    chan struct{}
	workers sync.WaitGroup
	cancel  context.CancelFunc
	gauges  metric.Registration
}

// Start begins consuming. Handlers run with a context derived from ctx's
// values but not its cancellation: stopping is Stop's job, so that a
// shutdown finishes what it started.
func Start(ctx context.Context, c jetstream.Consumer, h Handler, cfg Config) (*Loop, error) {
	if cfg.JetStream == nil {
		return nil, errors.New("consumer: Config.JetStream is required")
	}
	n := max(cfg.Concurrency, 1)
	logger := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &Loop{work: make(chan jetstream.Msg), quit: make(chan struct{}), cancel: cancel}
	info := c.CachedInfo()
	name := info.Name
	handle, err := wrap(cfg, info.Stream, name, info.Config.MaxDeliver, info.Config.AckWait, h)
	if err != nil {
		cancel()
		return nil, err
	}
	for range n {
		l.workers.Go(func() {
			for msg := range l.work {
				handle(hctx, msg)
			}
		})
	}
	opts := []jetstream.PullConsumeOpt{
		jetstream.PullMaxMessages(cmp.Or(cfg.Buffer, 2*n)),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			logger.WarnContext(ctx, "pull consumer", "consumer", name, "error", err)
		}),
	}
	// A consumer declared with priority groups (pinned_client: one
	// process at a time gets every message) is pulled in its first group.
	if groups := c.CachedInfo().Config.PriorityGroups; len(groups) > 0 {
		opts = append(opts, jetstream.PullPriorityGroup(groups[0]))
	}
	cc, err := c.Consume(l.dispatch, opts...)
	if err != nil {
		close(l.work)
		l.workers.Wait()
		cancel()
		return nil, err
	}
	l.cc = cc
	if cfg.MeterProvider != nil {
		if l.gauges, err = observe(cfg.MeterProvider, c); err != nil {
			logger.WarnContext(ctx, "consumer gauges not registered", "consumer", name, "error", err)
		}
	}
	return l, nil
}

// wrap is h as a loop runs it: settled by its outcome, counted and traced
// when cfg says so, and kept alive while it runs (keeper).
func wrap(cfg Config, stream, name string, maxDeliver int, ackWait time.Duration, h Handler) (Handler, error) {
	logger := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	s := settler{js: cfg.JetStream, maxDeliver: maxDeliver, logger: logger.With("consumer", name)}
	handle := func(ctx context.Context, msg jetstream.Msg) Outcome { return s.settle(ctx, msg, h(ctx, msg)) }
	if cfg.MeterProvider != nil {
		counted, err := Counted(cfg.MeterProvider, stream, name)
		if err != nil {
			return nil, err
		}
		handle = counted(handle)
	}
	if cfg.TracerProvider != nil {
		handle = Traced(cfg.TracerProvider, name)(handle)
	}
	keep, err := newKeeper(cfg, stream, name, ackWait)
	if err != nil {
		return nil, err
	}
	return keep.around(handle), nil
}

// dispatch hands a message to a free worker. After a shutdown ran out of
// time it drops the message instead; the server redelivers it after AckWait.
func (l *Loop) dispatch(msg jetstream.Msg) {
	select {
	case l.work <- msg:
	case <-l.quit:
	}
}

// Stop stops pulling and waits until every buffered and in-flight message
// is settled. If ctx ends first — while draining the buffer or while
// handlers still run — handlers are cancelled, unstarted messages are left
// for redelivery, and ctx's error is returned once the handlers returned.
func (l *Loop) Stop(ctx context.Context) error {
	if l.gauges != nil {
		_ = l.gauges.Unregister()
	}
	l.cc.Drain()
	var err error
	select {
	case <-l.cc.Closed():
	case <-ctx.Done():
		err = ctx.Err()
		close(l.quit)
		l.cancel()
		l.cc.Stop()
		<-l.cc.Closed()
	}
	close(l.work)
	if werr := awaitWorkers(ctx, &l.workers, l.cancel); werr != nil {
		err = werr
	}
	return err
}

// awaitWorkers waits until workers are done; if ctx ends first, cancel
// stops their handlers, and ctx's error is returned once they returned.
// cancel is called either way, releasing the handlers' context.
func awaitWorkers(ctx context.Context, workers *sync.WaitGroup, cancel context.CancelFunc) error {
	defer cancel()
	done := make(chan struct{})
	go func() {
		workers.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		cancel()
		<-done
		return ctx.Err()
	}
}
