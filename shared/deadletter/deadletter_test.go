package deadletter_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/streams"
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

// padded is a JSON payload of exactly n bytes for tenant acme.
func padded(n int) []byte {
	head := `{"tenant":"acme","pad":"`
	return []byte(head + strings.Repeat("x", n-len(head)-2) + `"}`)
}

// An original that fitted the server's max_payload no longer does once the
// entry's headers are added: its payload is kept in the object store, and
// the entry names it.
func TestAPayloadTooLargeForItsEntryIsKeptInTheObjectStore(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	data := padded(int(n.Conn.MaxPayload()) - 200)
	original := &jetstream.RawStreamMsg{Subject: "orders.created", Sequence: 9, Data: data,
		Header: nats.Header{"Nats-Msg-Id": {"evt-big"}, "Ce-Type": {"order.created"}}}
	require.NoError(t, deadletter.Copy(ctx, n.JS, "ORDERS", "router", original, 1, "invalid: no order"))
	require.NoError(t, deadletter.Copy(ctx, n.JS, "ORDERS", "router", original, 1, "invalid: no order"), "written twice, kept once")

	entries := heraldtest.StreamMessages(t, n.JS, "DLQ")
	require.Len(t, entries, 1)
	m := entries[0]
	require.Empty(t, m.Data)
	require.Equal(t, "ORDERS/9", m.Header.Get(deadletter.HeaderPayloadObject))
	require.Equal(t, strconv.Itoa(len(data)), m.Header.Get(deadletter.HeaderPayloadSize))
	sum := sha256.Sum256(data)
	require.Equal(t, hex.EncodeToString(sum[:]), m.Header.Get(deadletter.HeaderPayloadSHA256))
	require.Equal(t, "acme", m.Header.Get(deadletter.HeaderTenant))
	require.Equal(t, "order.created", m.Header.Get("Ce-Type"))
	got, err := deadletter.Payload(ctx, n.JS, m.Header, m.Data)
	require.NoError(t, err)
	require.Equal(t, data, got, "the original, byte for byte")

	require.NoError(t, deadletter.DeletePayload(ctx, n.JS, m.Header))
	_, err = deadletter.Payload(ctx, n.JS, m.Header, m.Data)
	require.ErrorIs(t, err, jetstream.ErrObjectNotFound)
}

// A payload that fits travels in its entry.
func TestAPayloadThatFitsTravelsInItsEntry(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	data := padded(64 << 10)
	original := &jetstream.RawStreamMsg{Subject: "orders.created", Sequence: 3, Data: data}
	require.NoError(t, deadletter.Copy(ctx, n.JS, "ORDERS", "router", original, 1, "invalid"))
	m := heraldtest.StreamMessages(t, n.JS, "DLQ")[0]
	require.Equal(t, data, m.Data)
	require.Empty(t, m.Header.Get(deadletter.HeaderPayloadObject))
	got, err := deadletter.Payload(ctx, n.JS, m.Header, m.Data)
	require.NoError(t, err)
	require.Equal(t, data, got)
}

// Headers count against max_payload too: a publisher's huge header is
// left out (and counted) rather than stop the entry from being written,
// and its Herald-* headers cannot pass for the entry's own.
func TestAnEntryBoundsTheHeadersItCopies(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	original := &jetstream.RawStreamMsg{Subject: "orders.created", Sequence: 4, Data: []byte(`{"tenant":"acme"}`),
		Header: nats.Header{
			"X-Huge":                {strings.Repeat("h", int(n.Conn.MaxPayload())-1024)},
			"Ce-Id":                 {"evt-1"},
			"herald-payload-object": {"NOTIFY/1"}, deadletter.HeaderPayloadObject: {"NOTIFY/1"},
		}}
	require.NoError(t, deadletter.Copy(ctx, n.JS, "ORDERS", "router", original, 1, "invalid"))
	m := heraldtest.StreamMessages(t, n.JS, "DLQ")[0]
	require.Empty(t, m.Header.Get("X-Huge"))
	require.Equal(t, "1", m.Header.Get(deadletter.HeaderDroppedHeaders))
	require.Equal(t, "evt-1", m.Header.Get("Ce-Id"))
	require.Empty(t, m.Header.Get(deadletter.HeaderPayloadObject))
	require.Empty(t, m.Header.Get("herald-payload-object"))
	require.Equal(t, []byte(`{"tenant":"acme"}`), m.Data)
}

// An entry the DLQ stream refuses for good says so: whoever retries it
// can tell that retrying cannot help.
func TestAnEntryTheDLQRefusesIsReportedAsRefused(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	s, err := n.JS.Stream(ctx, "DLQ")
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.MaxMsgSize = 4 << 10
	_, err = n.JS.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	original := &jetstream.RawStreamMsg{Subject: "orders.created", Sequence: 5, Data: padded(8 << 10)}
	err = deadletter.Copy(ctx, n.JS, "ORDERS", "router", original, 1, "invalid")
	require.ErrorIs(t, err, deadletter.ErrRefused)

	err = deadletter.Copy(ctx, n.JS, "ORDERS", "router", &jetstream.RawStreamMsg{Subject: "orders.created", Sequence: 6, Data: padded(100)}, 1, "invalid")
	require.NoError(t, err)
}

// The copy comes before the termination: with the DLQ unavailable, a
// worker's message is not terminated — it comes back — and once the DLQ is
// back, the copy is written and then the message is terminated.
func TestNothingIsTerminatedUntilItsCopyIsStored(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	_, err := n.JS.Publish(ctx, "notify.email.normal.acme", []byte(`{"tenant":"acme","id":"ntf_1"}`))
	require.NoError(t, err)
	cons, err := n.JS.Consumer(ctx, "NOTIFY", "email-normal")
	require.NoError(t, err)
	next := func() jetstream.Msg {
		t.Helper()
		msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		require.NoError(t, err, "the message came back")
		return msg
	}
	terminated := func() []*jetstream.RawStreamMsg {
		var out []*jetstream.RawStreamMsg
		for _, m := range heraldtest.StreamMessages(t, n.JS, "ADVISORIES") {
			if strings.HasPrefix(m.Subject, "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.NOTIFY.") {
				out = append(out, m)
			}
		}
		return out
	}

	require.NoError(t, n.JS.DeleteStream(ctx, "DLQ"))
	msg := next()
	require.Error(t, deadletter.Terminate(ctx, n.JS, msg, "permanent: 550 mailbox unavailable"))
	require.NoError(t, msg.Nak()) // as every caller does when Terminate fails
	msg = next()
	md, err := msg.Metadata()
	require.NoError(t, err)
	require.Equal(t, uint64(2), md.NumDelivered)
	require.Empty(t, terminated())
	require.Len(t, heraldtest.StreamMessages(t, n.JS, "NOTIFY"), 1)

	report, err := streams.Apply(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	require.NoError(t, deadletter.Terminate(ctx, n.JS, msg, "permanent: 550 mailbox unavailable"))
	entries := heraldtest.StreamMessages(t, n.JS, "DLQ")
	require.Len(t, entries, 1)
	require.Equal(t, "permanent: 550 mailbox unavailable", entries[0].Header.Get(deadletter.HeaderReason))
	require.Eventually(t, func() bool { return len(terminated()) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "NOTIFY"), "terminated, it left its work queue")
}

// The router refuses an event that names its tenant twice; its dead letter
// must not be filed under the tenant a later key chose either, or
// `herald dlq list --tenant victim` would show it to the wrong tenant.
func TestAnEntryIsFiledUnderAnUnambiguousTenantOnly(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	payloads := map[string]string{
		`{"tenant":"acme","id":"e1"}`:                        "acme",
		`{"tenant":"acme","deliveries":[{"tenant":"acme"}]}`: "acme",
		`{"tenant":"acme","TENANT":"victim"}`:                "",
		`{"tenant":"acme","tenant":"victim"}`:                "",
		`{"Tenant":"victim"}`:                                "",
		`{"tenant":"not a tenant"}`:                          "",
		`not json`:                                           "",
	}
	seq := uint64(0)
	for payload, want := range payloads {
		seq++
		original := &jetstream.RawStreamMsg{Subject: "orders.created", Sequence: seq, Data: []byte(payload), Header: nats.Header{}}
		require.NoError(t, deadletter.Copy(ctx, n.JS, "ORDERS", "router", original, 1, "invalid event"))
		m, err := n.JS.Stream(ctx, "DLQ")
		require.NoError(t, err)
		got, err := m.GetLastMsgForSubject(ctx, "dlq.ORDERS.router")
		require.NoError(t, err)
		require.Equal(t, want, got.Header.Get(deadletter.HeaderTenant), payload)
	}
}
