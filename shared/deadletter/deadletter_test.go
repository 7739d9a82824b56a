package deadletter_test

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// A message read back by sequence carries the server's Nats-* stamps, and
// may carry instructions (Nats-Rollup, Nats-Expected-*): none may reach or
// act on the dead letter.
func TestCopyKeepsHeadersButNotServerInstructions(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	original := &jetstream.RawStreamMsg{
		Subject: "notify.email.normal.acme", Sequence: 42, Data: []byte(`{"tenant":"acme","id":"ntf_1"}`),
		Header: nats.Header{
			"Traceparent": {"00-abc-def-01"}, "Nats-Msg-Id": {"acme:PO-1:1:purchase_order:email:a@b.example"},
			"Nats-Subject": {"notify.email.normal.acme"}, "Nats-Sequence": {"42"}, "Nats-Rollup": {"all"},
			"Nats-Expected-Stream": {"NOTIFY"},
		},
	}
	require.NoError(t, deadletter.Copy(ctx, n.JS, "NOTIFY", "email-normal", original, 10, "exhausted"))
	// A second copy of the same message is the same entry.
	require.NoError(t, deadletter.Copy(ctx, n.JS, "NOTIFY", "email-normal", original, 10, "exhausted"))

	s, err := n.JS.Stream(ctx, "DLQ")
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1), info.State.Msgs)
	m, err := s.GetMsg(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, "dlq.NOTIFY.email-normal", m.Subject)
	require.Equal(t, "00-abc-def-01", m.Header.Get("Traceparent"))
	require.Equal(t, "acme:PO-1:1:purchase_order:email:a@b.example", m.Header.Get(deadletter.HeaderMsgID))
	require.Equal(t, "42", m.Header.Get(deadletter.HeaderSequence))
	require.Equal(t, "acme", m.Header.Get(deadletter.HeaderTenant))
	require.Empty(t, m.Header.Get("Nats-Rollup"))
	require.Empty(t, m.Header.Get("Nats-Expected-Stream"))
}

// A message that ran out of deliveries is copied while handling the server's
// advisory, in another trace; the dead letter joins the message's own trace,
// linked to the advisory's.
func TestCopyJoinsTheTraceOfTheMessageItKeeps(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, advisory := tp.Tracer("test").Start(heraldtest.Context(t), "process $JS.EVENT.ADVISORY…")
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	original := &jetstream.RawStreamMsg{
		Subject: "notify.email.normal.acme", Sequence: 7, Data: []byte(`{"tenant":"acme"}`),
		Header: nats.Header{"traceparent": {parent}},
	}
	require.NoError(t, deadletter.Copy(ctx, n.JS, "NOTIFY", "email-normal", original, 100, "exhausted"))
	advisory.End()

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	dead, publish := spans["dead-letter NOTIFY > email-normal"], spans["publish dlq.NOTIFY.email-normal"]
	require.NotNil(t, dead)
	require.NotNil(t, publish)
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", dead.SpanContext().TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", dead.Parent().SpanID().String())
	require.Len(t, dead.Links(), 1)
	require.Equal(t, advisory.SpanContext().SpanID(), dead.Links()[0].SpanContext.SpanID())
	require.Equal(t, dead.SpanContext().SpanID(), publish.Parent().SpanID())
}
