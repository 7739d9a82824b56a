package api

import (
	"github.com/danielgtaylor/huma/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/shared/telemetry"
)

// requestHeaders carries a request's trace context (traceparent,
// tracestate, baggage) to the propagator.
type requestHeaders struct{ huma.Context }

func (h requestHeaders) Get(key string) string { return h.Header(key) }
func (requestHeaders) Set(string, string)      {}
func (requestHeaders) Keys() []string          { return nil }

// trace is the middleware that makes each request a server span — named
// by its route, continuing the caller's trace when it sends one — so an
// event posted over HTTP is followed from the request through NATS to its
// deliveries, as one published on NATS is. No span carries a key, a
// query or a body.
func (s *Service) trace(ctx huma.Context, next func(huma.Context)) {
	if s.cfg.TracerProvider == nil {
		next(ctx)
		return
	}
	op := ctx.Operation()
	parent := telemetry.Propagator.Extract(ctx.Context(), requestHeaders{ctx})
	c, span := s.cfg.TracerProvider.Tracer(telemetry.Scope).Start(parent, op.Method+" "+op.Path,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(op.Method), semconv.HTTPRoute(op.Path)))
	defer span.End()
	next(huma.WithContext(ctx, c))
	status := ctx.Status()
	span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
	if op.OperationID != "" {
		span.SetAttributes(attribute.String("herald.api.operation", op.OperationID))
	}
}
