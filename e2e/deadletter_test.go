package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/streams"
)

// Copy before terminate, end to end: while the DLQ cannot take a copy, a
// worker that gives up on a message does not terminate it — the message
// comes back, again and again — and once the DLQ is back, the copy is
// written and only then is the message terminated.
func TestNothingIsTerminatedWhileTheDLQIsUnavailable(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		edits    []func(*app.Config)
		subject  string
		event    func(t *testing.T) []byte
		stream   string // where the message waits
		consumer string // the durable its dead letter is filed under
		serving  string // the consumer serving it: the tenant's own, for a fair delivery worker
		reason   string
	}{
		"the router, an invalid event": {
			edits:   []func(*app.Config){func(c *app.Config) { c.Services = []string{"router"} }},
			subject: "orders.created", event: func(*testing.T) []byte { return []byte(`{"specversion":"1.0","id":"bad-1"}`) },
			stream: "ORDERS", consumer: "router", serving: "router", reason: "invalid",
		},
		"a delivery worker, a permanent refusal": {
			edits:   []func(*app.Config){withoutDocuments, func(c *app.Config) { c.Services = []string{"router", "delivery"} }},
			subject: "orders.created", event: func(t *testing.T) []byte { return oneRecipient(t) },
			stream: "NOTIFY", consumer: "email-normal", serving: "email-normal_acme", reason: "Illegal address",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := fakeProviders(t)
			f.ses.Faults(func(int) sestest.Fault { return sestest.InvalidAddress })
			p := startPipeline(t, append([]func(*app.Config){f.configure}, tc.edits...)...)
			ctx := heraldtest.Context(t)
			require.NoError(t, p.js.DeleteStream(ctx, dlq.Stream))

			p.publish(t, tc.subject, "evt-dead-1", tc.event(t))
			require.Eventually(t, func() bool {
				cons, err := p.js.Consumer(ctx, tc.stream, tc.serving) // made on demand, in fair mode
				if errors.Is(err, jetstream.ErrConsumerNotFound) {
					return false
				}
				require.NoError(t, err)
				info, err := cons.Info(ctx)
				require.NoError(t, err)
				return info.Delivered.Consumer >= 3
			}, 60*time.Second, 50*time.Millisecond, "given up on and not copied, the message keeps coming back")
			require.Empty(t, terminatedIn(t, p, tc.stream), "nothing terminated without its copy")

			report, err := streams.Apply(ctx, p.js, p.cfg.StreamOptions()) // as Herald applies them
			require.NoError(t, err)
			require.NoError(t, report.Err())
			require.Eventually(t, func() bool { return len(terminatedIn(t, p, tc.stream)) == 1 }, 60*time.Second, 50*time.Millisecond,
				"once the DLQ is back, the message is terminated")
			entries := p.streamMessages(t, dlq.Stream)
			require.Len(t, entries, 1, "copied before it was terminated")
			require.Equal(t, deadletter.Subject(tc.stream, tc.consumer), entries[0].Subject)
			require.Contains(t, entries[0].Header.Get(deadletter.HeaderReason), tc.reason)
		})
	}
}

// terminatedIn lists the MSG_TERMINATED advisories the server published
// for messages of stream.
func terminatedIn(t *testing.T, p *pipeline, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	var out []*jetstream.RawStreamMsg
	for _, m := range p.streamMessages(t, dlq.AdvisoryStream) {
		if strings.HasPrefix(m.Subject, "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."+stream+".") {
			out = append(out, m)
		}
	}
	return out
}

// oneRecipient is an order for one buyer, by email.
func oneRecipient(t *testing.T) []byte {
	return sample(t, "order.created.json", func(m map[string]any) {
		m["data"].(map[string]any)["recipients"] = []any{
			map[string]any{"name": "Compras", "role": "buyer", "email": "compras@frutasdelsur.example", "channels": []any{"email"}}}
	})
}

// An invalid event near max_payload fitted ORDERS but not a DLQ entry:
// it is dead-lettered with its payload in the object store, and read back
// byte for byte.
func TestAnInvalidEventNearMaxPayloadIsDeadLettered(t *testing.T) {
	t.Parallel()
	p := startPipeline(t, func(c *app.Config) { c.Services = []string{"router"} })
	event := []byte(`{"specversion":"1.0","id":"big-1","pad":"` + strings.Repeat("x", int(p.nc.MaxPayload())-1024) + `"}`)
	p.publish(t, "orders.created", "big-1", event)

	require.Eventually(t, func() bool { return len(p.streamMessages(t, dlq.Stream)) == 1 }, 30*time.Second, 50*time.Millisecond)
	p.settle(t)
	ctx := heraldtest.Context(t)
	x, err := dlq.OpenEntries(ctx, p.js)
	require.NoError(t, err)
	list, total, err := x.List(ctx, dlq.Filter{}, 10)
	require.NoError(t, err)
	require.Equal(t, 1, total)
	e := list[0]
	require.Equal(t, "ORDERS/1", e.PayloadObject)
	require.Equal(t, "big-1", e.Header.Get(deadletter.HeaderMsgID))
	got, err := x.Payload(ctx, e)
	require.NoError(t, err)
	require.True(t, string(got) == string(event), "the original, byte for byte")
}
