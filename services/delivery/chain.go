package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/telemetry"
)

// chain is one try: a pass over a try's calls in order, stopping at the
// first provider that accepts. A permanent refusal ends the pass at once —
// the next provider would refuse the same address or content. A receipt
// names the provider as the chain knows it, whatever the provider said.
type chain struct {
	timeout time.Duration // per provider call
	// breakers, when set, skip providers that keep failing.
	breakers *breakers
}

// pass is the result of one try.
type pass struct {
	// Receipt is set when a provider accepted.
	Receipt  provider.Receipt
	Accepted bool
	// Failures joins the error of every provider that failed in this pass,
	// in order — also when a later one accepted, because an ambiguous
	// failure before an acceptance is exactly when a message may go out
	// twice. It is permanent if the pass ended on a permanent refusal.
	Failures error
}

func (c chain) send(ctx context.Context, calls []Call) pass {
	var errs []error
	for _, call := range calls {
		r, err := c.call(ctx, call)
		if err == nil {
			return pass{Receipt: r, Accepted: true, Failures: errors.Join(errs...)}
		}
		errs = append(errs, fmt.Errorf("%s: %w", call.Provider, err))
		if provider.IsPermanent(err) || ctx.Err() != nil {
			break
		}
	}
	if len(calls) == 0 {
		errs = append(errs, &provider.TransientError{Err: errors.New("no provider to try")})
	}
	return pass{Failures: errors.Join(errs...)}
}

func (c chain) call(ctx context.Context, call Call) (r provider.Receipt, err error) {
	ctx, span := telemetry.Tracer(ctx).Start(ctx, "send "+call.Provider, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("herald.provider", call.Provider)))
	defer func() {
		switch {
		case err == nil:
			span.SetAttributes(attribute.String("herald.provider_message_id", r.MessageID))
		case provider.IsPermanent(err):
			span.SetAttributes(attribute.String("error.type", "permanent"))
		case provider.IsAmbiguous(err):
			span.SetAttributes(attribute.String("error.type", "ambiguous"))
		default:
			span.SetAttributes(attribute.String("error.type", "transient"))
		}
		telemetry.End(span, err)
	}()
	send := func(ctx context.Context) (provider.Receipt, error) {
		if c.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.timeout)
			defer cancel()
		}
		start := time.Now()
		r, err := call.Send(ctx)
		consumer.Waited(ctx, time.Since(start)) // the fair loop's limit counts the provider's time
		switch {
		case err != nil:
			return r, err
		case r.MessageID == "":
			return r, &provider.TransientError{Err: errors.New("accepted without a message id")}
		}
		r.Provider = call.Provider
		return r, nil
	}
	if c.breakers != nil {
		return c.breakers.call(ctx, call, send)
	}
	return send(ctx)
}
