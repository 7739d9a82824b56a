package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/deadletter"
)

// Outcome is what a handler decided for its message; the loop settles it.
type Outcome struct {
	settle settlement
	reason error
	// first and limit bound a retry's delay; after is the delay the
	// settler asked for, once it naked the message.
	first, limit, after time.Duration
}

type settlement int

const (
	done settlement = iota
	retry
	giveUp
	leave
)

// Done acknowledges the message; the server's answer is not waited for
// (settle says why).
func Done() Outcome { return Outcome{settle: done} }

// Retry asks for the message again after a delay that starts near first
// and doubles with each delivery, up to limit; reason says why. On the
// consumer's last allowed delivery (MaxDeliver) it gives up instead, with
// reason: a message the server stops redelivering is never left without a
// word.
func Retry(reason error, first, limit time.Duration) Outcome {
	return Outcome{settle: retry, reason: reason, first: first, limit: max(first, limit)}
}

// GiveUp copies the message to the DLQ with reason, then terminates it. If
// the DLQ cannot be written, the message is retried: it is never
// terminated without its copy.
func GiveUp(reason error) Outcome { return Outcome{settle: giveUp, reason: reason} }

// Leave settles nothing: the server redelivers the message after AckWait.
// It is for a handler cancelled by a shutdown that ran out of time.
func Leave() Outcome { return Outcome{settle: leave} }

// Reason is why the message was retried or given up; nil when done.
func (o Outcome) Reason() error { return o.reason }

// String names the outcome in metrics and traces.
func (o Outcome) String() string {
	return [...]string{"done", "retry", "gave_up", "left"}[o.settle]
}

// settleTimeout bounds each of the round trips that settle a message: it
// runs detached from the handler's context, so that a shutdown does not
// cut short the settling of work already done.
const settleTimeout = 15 * time.Second

// settler settles messages by their outcomes.
type settler struct {
	js         jetstream.JetStream
	maxDeliver int
	logger     *slog.Logger
}

// settle carries out o on msg and returns what was done, which differs
// from o when a retry reached MaxDeliver or a dead letter could not be
// written.
func (s settler) settle(ctx context.Context, msg jetstream.Msg, o Outcome) Outcome {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	md, _ := msg.Metadata()
	if o.settle == retry && md != nil && s.maxDeliver > 0 && md.NumDelivered >= uint64(s.maxDeliver) {
		o = GiveUp(fmt.Errorf("gave up after %d deliveries: %w", md.NumDelivered, o.reason))
	}
	switch o.settle {
	case done:
		// Not waited for: an ack the server never gets brings the message
		// back after AckWait, and every handler finds what it did already
		// done (the ledger, the streams' duplicate windows) — so waiting
		// for the server's answer would cost a round trip per message and
		// protect nothing.
		if err := msg.Ack(); err != nil {
			s.logger.WarnContext(ctx, "ack not sent; the message comes back and its handler finds it done",
				"subject", msg.Subject(), "error", err)
		}
	case retry:
		o.after = nakWithBackoff(msg, md, o.first, o.limit)
		s.logger.WarnContext(ctx, "will retry", "subject", msg.Subject(), "retry_in", o.after, "error", o.reason)
	case giveUp:
		reason := o.reason
		if reason == nil {
			reason = errors.New("given up without a reason")
		}
		s.logger.WarnContext(ctx, "giving up; dead-lettering", "subject", msg.Subject(), "reason", reason)
		if err := deadletter.Terminate(ctx, s.js, msg, reason.Error()); err != nil {
			delay := nakWithBackoff(msg, md, time.Second, time.Minute)
			s.logger.ErrorContext(ctx, "dead-lettering failed; the message will come back", "subject", msg.Subject(),
				"retry_in", delay, "error", err)
			o = Retry(fmt.Errorf("dead-lettering failed: %w", err), time.Second, time.Minute)
			o.after = delay
			return o
		}
	}
	return o
}

// nakWithBackoff asks for redelivery after a delay that starts near first
// and doubles with each delivery of msg, up to limit; it returns the delay.
// A consumer's BackOff applies only to ack timeouts, not to naks.
//
// The delay is jittered (between half and all of it): messages that failed
// together would otherwise come back together, every time — copies of one
// notification then keep colliding on its lease.
func nakWithBackoff(msg jetstream.Msg, md *jetstream.MsgMetadata, first, limit time.Duration) time.Duration {
	n := uint64(1)
	if md != nil && md.NumDelivered > 0 {
		n = md.NumDelivered
	}
	delay := min(first<<min(n-1, 20), limit)
	delay = delay/2 + rand.N(delay/2+1)
	_ = msg.NakWithDelay(delay)
	return delay
}
