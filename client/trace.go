package client

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// herald is what Herald reads: W3C Trace Context and Baggage. It is
// injected after the process's global propagator, which by default injects
// nothing, so the router always finds the trace whatever the publisher
// configured, and the publisher's own consumers find theirs.
var herald = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// injectTrace writes the trace context of ctx into carrier.
func injectTrace(ctx context.Context, carrier propagation.TextMapCarrier) {
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	herald.Inject(ctx, carrier)
}

// natsHeader carries trace context in NATS headers, which keep the case
// they are given: Set writes the propagator's lower-case names, as Herald's
// own publishers do, replacing a value under any other case. (Herald reads
// them in any case; shared/telemetry.Header is the same carrier, but that
// package would bring Herald's exporters into every publisher.)
type natsHeader nats.Header

func (h natsHeader) Get(key string) string {
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

func (h natsHeader) Set(key, value string) {
	for k := range h {
		if strings.EqualFold(k, key) {
			delete(h, k)
		}
	}
	h[key] = []string{value}
}

func (h natsHeader) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}
