package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// NATS publishes events on Herald's streams through JetStream.
type NATS struct {
	js jetstream.Publisher
}

// NewNATS publishes through js, whose connection the caller owns. A
// publisher confined by NATS permissions to its own inbox prefix sets it on
// the connection (nats.CustomInboxPrefix), where the acknowledgements come.
func NewNATS(js jetstream.JetStream) *NATS { return &NATS{js: js} }

// Publish publishes ev and waits for the stream's acknowledgement — until
// ctx is done, or JetStream's default timeout (5 s) when ctx has no
// deadline. A second publish of the same event within the stream's
// duplicate window (an hour) is acknowledged as a Duplicate and stored
// once. When ctx carries a span, the publish is a producer span of its
// trace, "publish <subject>", whose context the message carries.
func (p *NATS) Publish(ctx context.Context, ev *Event) (Receipt, error) {
	if _, err := ev.Build(); err != nil {
		return Receipt{}, err
	}
	ctx, span := startPublish(ctx, ev)
	msg, err := ev.Msg(ctx)
	if err != nil {
		endPublish(span, nil, err)
		return Receipt{}, err
	}
	ack, err := p.js.PublishMsg(ctx, msg)
	endPublish(span, ack, err)
	if err != nil {
		return Receipt{}, natsError(ev.Subject(), err)
	}
	return Receipt{ID: ev.ID(), Subject: ev.Subject(), Stream: ack.Stream, Sequence: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// natsError says whether a failed publish may succeed if tried again. The
// server stored nothing it did not acknowledge, and a copy it did store is
// a duplicate next time, so only what can never succeed is permanent: a
// message over the server's max payload, a closed connection, a caller
// that gave up, or the stream refusing the message for good.
func natsError(subject string, err error) error {
	err = fmt.Errorf("herald: publishing %s: %w", subject, err)
	var refused *jetstream.APIError
	switch {
	case errors.Is(err, nats.ErrMaxPayload), errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &refused) && refused.Code < http.StatusInternalServerError:
		return err
	}
	return &RetryableError{Err: err}
}

// scope is the instrumentation scope of the client's spans.
const scope = "github.com/heraldhq/herald/client"

// startPublish starts the producer span of publishing ev with the tracer
// of the span in ctx, following the messaging conventions Herald's own
// publishes follow. Nothing traces a publish whose ctx has no span.
func startPublish(ctx context.Context, ev *Event) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(scope).Start(ctx, "publish "+ev.Subject(),
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			semconv.MessagingSystemKey.String("nats"),
			semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName("publish"),
			semconv.MessagingDestinationName(ev.Subject()),
			semconv.MessagingMessageID(ev.ID())))
}

// endPublish ends a producer span with the stream's answer.
func endPublish(span trace.Span, ack *jetstream.PubAck, err error) {
	if ack != nil {
		span.SetAttributes(
			attribute.String("messaging.nats.stream", ack.Stream),
			attribute.String("messaging.nats.stream_sequence", strconv.FormatUint(ack.Sequence, 10)),
			attribute.Bool("messaging.nats.duplicate", ack.Duplicate))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
