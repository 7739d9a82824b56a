package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of Herald's spans.
const Scope = "github.com/heraldhq/herald"

// messagingSystem is messaging.system for NATS, which the semantic
// conventions do not enumerate.
var messagingSystem = semconv.MessagingSystemKey.String("nats")

// Propagator carries trace context in message headers: W3C Trace Context
// and Baggage, whatever the process's global propagator is.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(
	propagation.TraceContext{}, propagation.Baggage{})

// Header is a propagation carrier over NATS headers. NATS header names are
// case-sensitive and kept as sent, so a publisher's "Traceparent" (a Go
// http.Header habit) is found as well as "traceparent"; Set writes the
// propagator's lower-case names.
type Header nats.Header

// Get returns the first value of key, matched exactly, else ignoring case.
func (h Header) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Set replaces every value of key, whatever its case.
func (h Header) Set(key, value string) {
	for k := range h {
		if strings.EqualFold(k, key) {
			delete(h, k)
		}
	}
	h[key] = []string{value}
}

// Keys lists the header names.
func (h Header) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// Tracer is the tracer of the span in ctx — so code that publishes inside a
// handler traces with whatever provider traces the handler, and with none
// when nothing does.
func Tracer(ctx context.Context) trace.Tracer {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(Scope)
}

// StartPublish starts the producer span of publishing msg — named
// "publish <subject>", following the messaging semantic conventions — and
// writes its context into msg's headers, so the consumer's span continues
// the trace. The caller ends the span when the server has acknowledged.
func StartPublish(ctx context.Context, msg *nats.Msg) (context.Context, trace.Span) {
	if parent := trace.SpanFromContext(ctx); !parent.SpanContext().IsValid() {
		return ctx, parent // nothing traces this publish, and there is no context to carry
	}
	attrs := []attribute.KeyValue{
		messagingSystem,
		semconv.MessagingOperationTypeSend,
		semconv.MessagingOperationName("publish"),
		semconv.MessagingDestinationName(msg.Subject),
		semconv.MessagingMessageBodySize(len(msg.Data)),
	}
	if id := msg.Header.Get(jetstream.MsgIDHeader); id != "" {
		attrs = append(attrs, semconv.MessagingMessageID(id))
	}
	ctx, span := Tracer(ctx).Start(ctx, "publish "+msg.Subject,
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	Propagator.Inject(ctx, Header(msg.Header))
	return ctx, span
}

// StartProcess starts the consumer span of handling msg from the durable
// consumer named consumer, as a child of the context its publisher put in
// the headers (a new trace when there is none).
func StartProcess(ctx context.Context, tracer trace.Tracer, msg jetstream.Msg, consumer string) (context.Context, trace.Span) {
	if h := msg.Headers(); h != nil {
		ctx = Propagator.Extract(ctx, Header(h))
	}
	attrs := []attribute.KeyValue{
		messagingSystem,
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		semconv.MessagingDestinationName(msg.Subject()),
		semconv.MessagingConsumerGroupName(consumer),
		semconv.MessagingMessageBodySize(len(msg.Data())),
	}
	if h := msg.Headers(); h != nil && h.Get(jetstream.MsgIDHeader) != "" {
		attrs = append(attrs, semconv.MessagingMessageID(h.Get(jetstream.MsgIDHeader)))
	}
	if md, err := msg.Metadata(); err == nil {
		attrs = append(attrs,
			attribute.String("messaging.nats.stream", md.Stream),
			attribute.String("messaging.nats.stream_sequence", strconv.FormatUint(md.Sequence.Stream, 10)),
			attribute.Int64("messaging.nats.delivered", int64(md.NumDelivered)))
	}
	return tracer.Start(ctx, "process "+msg.Subject(),
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// End ends span, marking it failed with err when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// PublishMsg publishes msg to JetStream inside its producer span (see
// StartPublish) and waits for the stream's acknowledgement.
func PublishMsg(ctx context.Context, js jetstream.Publisher, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ctx, span := StartPublish(ctx, msg)
	ack, err := js.PublishMsg(ctx, msg, opts...)
	EndPublish(span, ack, err)
	return ack, err
}

// EndPublish ends a producer span with the stream's answer: the stored
// sequence, whether the stream already had the message (a duplicate), or
// the error.
func EndPublish(span trace.Span, ack *jetstream.PubAck, err error) {
	if ack != nil {
		span.SetAttributes(
			attribute.String("messaging.nats.stream", ack.Stream),
			attribute.String("messaging.nats.stream_sequence", strconv.FormatUint(ack.Sequence, 10)),
			attribute.Bool("messaging.nats.duplicate", ack.Duplicate))
	}
	End(span, err)
}

// Start starts an internal span — a step of Herald's own, such as routing
// or rendering — with the tracer of the span in ctx.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return Tracer(ctx).Start(ctx, name, trace.WithAttributes(attrs...))
}

// errNotAwaited ends the span of a publish whose answer nobody waited for.
var errNotAwaited = errors.New("acknowledgement not awaited")

// PublishMsgs publishes msgs asynchronously, each inside its producer span,
// then waits until the stream has stored (or recognised as a duplicate)
// every one, for timeout at most: an ack lost in a failover never comes,
// and nats.go's async futures have no deadline of their own. The acks come
// back in the messages' order.
func PublishMsgs(ctx context.Context, js jetstream.Publisher, msgs []*nats.Msg, timeout time.Duration) ([]*jetstream.PubAck, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	spans := make([]trace.Span, 0, len(msgs))
	answered := 0
	defer func() {
		for _, span := range spans[answered:] {
			End(span, errNotAwaited)
		}
	}()
	for _, msg := range msgs {
		_, span := StartPublish(ctx, msg)
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			End(span, err)
			return nil, fmt.Errorf("publishing %s: %w", msg.Subject, err)
		}
		futures, spans = append(futures, f), append(spans, span)
	}
	acks := make([]*jetstream.PubAck, len(futures))
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			acks[i] = ack
			EndPublish(spans[i], ack, nil)
		case err := <-f.Err():
			EndPublish(spans[i], nil, err)
			answered = i + 1
			return nil, fmt.Errorf("publishing %s: %w", f.Msg().Subject, err)
		case <-ctx.Done():
			return nil, fmt.Errorf("publishing %s: no acknowledgement: %w", f.Msg().Subject, ctx.Err())
		}
		answered = i + 1
	}
	return acks, nil
}
