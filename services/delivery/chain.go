package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/telemetry"
)

// chain is one try: a pass over the providers in order, stopping at the
// first that accepts. A permanent refusal ends the pass at once — the next
// provider would refuse the same address or content.
type chain struct {
	providers []Provider
	timeout   time.Duration // per provider call
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

func (c chain) send(ctx context.Context, msg email.Message) pass {
	var errs []error
	for _, p := range c.providers {
		r, err := c.call(ctx, p, msg)
		if err == nil {
			return pass{Receipt: r, Accepted: true, Failures: errors.Join(errs...)}
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
		if provider.IsPermanent(err) || ctx.Err() != nil {
			break
		}
	}
	return pass{Failures: errors.Join(errs...)}
}

func (c chain) call(ctx context.Context, p Provider, msg email.Message) (r provider.Receipt, err error) {
	ctx, span := telemetry.Tracer(ctx).Start(ctx, "send "+p.Name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("herald.provider", p.Name), attribute.String("herald.notification_id", msg.ID),
			attribute.Int("herald.attachments", len(msg.Attachments))))
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
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	r, err = p.Send(ctx, msg)
	switch {
	case err != nil:
		return r, err
	case r.MessageID == "":
		return r, &provider.TransientError{Err: errors.New("accepted without a message id")}
	}
	r.Provider = p.Name
	return r, nil
}
