package telemetry_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/shared/telemetry"
)

// cased spells name with the letters whose bit is set in mask in upper
// case: the casing a publisher's client happened to use.
func cased(name string, mask uint64) string {
	out := []rune(name)
	for i, r := range out {
		if mask&(1<<(i%64)) != 0 {
			out[i] = unicode.ToUpper(r)
		}
	}
	return string(out)
}

// members is ctx's baggage in a stable order (String follows map order).
func members(ctx context.Context) string {
	var list []string
	for _, m := range baggage.FromContext(ctx).Members() {
		list = append(list, m.String())
	}
	slices.Sort(list)
	return strings.Join(list, ",")
}

// FuzzHeaderCarrier: the trace headers Herald reads from a NATS message —
// traceparent, tracestate, baggage, in whatever case the publisher wrote
// them and with whatever values — never panic; they yield exactly the
// context the propagator yields from the same values under their
// canonical names; and a context read is written back and read again
// unchanged, so one event stays one trace from service to service.
func FuzzHeaderCarrier(f *testing.F) {
	f.Add(uint64(0), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "congo=t61rcWkgMzE", "tenant=acme")
	f.Fuzz(func(t *testing.T, mask uint64, traceparent, tracestate, bag string) {
		values := map[string]string{"traceparent": traceparent, "tracestate": tracestate, "baggage": bag}
		h := nats.Header{}
		canonical := propagation.MapCarrier{}
		for i, name := range []string{"traceparent", "tracestate", "baggage"} {
			if values[name] != "" {
				h[cased(name, mask>>(i*16))] = []string{values[name]}
				canonical[name] = values[name]
			}
		}
		ctx := telemetry.Propagator.Extract(context.Background(), telemetry.Header(h))
		want := telemetry.Propagator.Extract(context.Background(), canonical)
		sc := trace.SpanContextFromContext(ctx)
		if !sc.Equal(trace.SpanContextFromContext(want)) {
			t.Fatalf("header case changed the span context: %v, want %v", sc, trace.SpanContextFromContext(want))
		}
		if got, w := members(ctx), members(want); got != w {
			t.Fatalf("header case changed the baggage: %q, want %q", got, w)
		}

		out := telemetry.Header(nats.Header{})
		telemetry.Propagator.Inject(ctx, out)
		if sc.IsValid() && out.Get("traceparent") == "" {
			t.Fatalf("a valid context was not written back: %v", out)
		}
		again := telemetry.Propagator.Extract(context.Background(), out)
		if !trace.SpanContextFromContext(again).Equal(sc) {
			t.Fatalf("the round trip changed the span context: %v, want %v", trace.SpanContextFromContext(again), sc)
		}
		if got, w := members(again), members(ctx); got != w {
			t.Fatalf("the round trip changed the baggage: %q, want %q", got, w)
		}
		for _, k := range out.Keys() {
			if k != strings.ToLower(k) {
				t.Fatalf("written under %q: the propagator's names are lower case", k)
			}
		}

		// Set replaces a header whatever case it was received in.
		h2 := telemetry.Header(h)
		h2.Set("traceparent", "x")
		n := 0
		for k := range h2 {
			if strings.EqualFold(k, "traceparent") {
				n++
			}
		}
		if n != 1 || h2.Get(cased("traceparent", ^mask)) != "x" {
			t.Fatalf("Set left %d traceparent headers: %v", n, h2)
		}
	})
}
