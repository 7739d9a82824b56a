package alert

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/heraldhq/herald/shared/provider"
)

// queueSize is how many summaries may wait for one slow sender before newer
// ones are dropped: with a one-minute window, a quarter of an hour of alerts.
const queueSize = 16

// maxTries bounds the tries of one summary on one sender.
const maxTries = 4

// maxRetryWait caps a server's Retry-After, so one answer cannot hold a
// sender's queue for long.
const maxRetryWait = 30 * time.Second

// outbox gives each sender its own queue and goroutine, so a slow or failing
// sender delays nobody but itself.
type outbox struct {
	a      *Aggregator
	queues []chan Summary
	kinds  []string
	wg     sync.WaitGroup
}

func (a *Aggregator) startSenders(ctx context.Context) *outbox {
	out := &outbox{a: a}
	for i, s := range a.cfg.Senders {
		q := make(chan Summary, queueSize)
		kind := kindOf(s)
		out.queues = append(out.queues, q)
		out.kinds = append(out.kinds, kind)
		log := a.cfg.Logger.With("sender", kind, "sender_index", i)
		out.wg.Go(func() {
			for sum := range q {
				a.deliver(ctx, s, kind, log.With("count", sum.Count), sum)
			}
		})
	}
	return out
}

// queue hands s to every sender without waiting for any of them.
func (o *outbox) queue(ctx context.Context, s Summary) {
	for i, q := range o.queues {
		select {
		case q <- s:
		default:
			o.a.metrics.record(ctx, o.kinds[i], "dropped")
			o.a.cfg.Logger.WarnContext(ctx, "alert dropped: the sender is still busy with earlier ones",
				"sender", o.kinds[i], "sender_index", i, "count", s.Count)
		}
	}
}

// close tells the senders no more summaries are coming.
func (o *outbox) close() {
	for _, q := range o.queues {
		close(q)
	}
}

func (o *outbox) wait() { o.wg.Wait() }

// deliver sends one summary with one sender, retrying, and logs and counts
// the outcome.
func (a *Aggregator) deliver(ctx context.Context, s Sender, kind string, log *slog.Logger, sum Summary) {
	if ctx.Err() != nil {
		a.metrics.record(ctx, kind, "dropped")
		log.WarnContext(ctx, "alert not sent: shutting down, and the flush timeout has passed")
		return
	}
	if err := a.sendWithRetries(ctx, s, log, sum); err != nil {
		a.metrics.record(ctx, kind, "failed")
		log.ErrorContext(ctx, "alert not sent", "error", err)
		return
	}
	a.metrics.record(ctx, kind, "sent")
}

func (a *Aggregator) sendWithRetries(ctx context.Context, s Sender, log *slog.Logger, sum Summary) error {
	delay := a.cfg.RetryDelay
	for try := 1; ; try++ {
		tryCtx, cancel := withTimeout(ctx, a.cfg.Clock, a.cfg.SendTimeout)
		err := s.Send(tryCtx, sum)
		cancel()
		switch {
		case err == nil:
			return nil
		case !retryable(err):
			return err
		case try == maxTries:
			return fmt.Errorf("%d tries failed, the last with: %w", try, err)
		}
		wait := retryWait(err, delay)
		log.InfoContext(ctx, "alert not sent yet; trying again", "try", try, "retry_in", wait, "error", err)
		if !sleep(ctx, a.cfg.Clock, wait) {
			return fmt.Errorf("stopped by shutdown after try %d, which failed with: %w", try, err)
		}
		delay *= 2
	}
}

// retryable tells a passing trouble (a network error, a timeout, a busy or
// broken server) from an answer that will not change, such as Slack's 404
// no_service or 410 channel_is_archived.
func retryable(err error) bool { return !provider.IsPermanent(err) }

// retryWait is delay, or the server's Retry-After if it asks for longer.
func retryWait(err error, delay time.Duration) time.Duration {
	return min(max(delay, provider.RetryAfter(err)), maxRetryWait)
}

// kinded is implemented by this package's senders, so metrics and logs can
// name them without their URLs.
type kinded interface{ kind() string }

func kindOf(s Sender) string {
	if k, ok := s.(kinded); ok {
		return k.kind()
	}
	return fmt.Sprintf("%T", s)
}

type metrics struct {
	alerts metric.Int64Counter
}

func newMetrics(cfg Config) metrics {
	m := cfg.MeterProvider.Meter("github.com/heraldhq/herald/services/dlq/alert")
	alerts, err := m.Int64Counter("herald.dlq.alerts",
		metric.WithDescription("Alerts by sender kind (slack, webhook…) and outcome: sent, failed (every try failed), dropped (the sender was still busy with earlier alerts, or shutdown came first)."))
	if err != nil {
		// New has no error to return, and alerting matters more than counting it.
		cfg.Logger.Warn("alerts will not be counted", "error", err)
		return metrics{alerts: noop.Int64Counter{}}
	}
	return metrics{alerts: alerts}
}

func (m metrics) record(ctx context.Context, kind, outcome string) {
	m.alerts.Add(ctx, 1, metric.WithAttributes(attribute.String("sender", kind), attribute.String("outcome", outcome)))
}
