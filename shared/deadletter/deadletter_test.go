package deadletter_test

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
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
