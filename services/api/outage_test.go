package api_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/streams"
)

// restartable is a NATS server a test can stop and start again on the same
// address and store, with a client that reconnects.
type restartable struct {
	*heraldtest.NATS
	listen, dir string
}

func startRestartable(t *testing.T) *restartable {
	t.Helper()
	r := &restartable{dir: heraldtest.StoreDir(t), listen: "127.0.0.1:0"}
	r.start(t)
	u, err := net.ResolveTCPAddr("tcp", r.Server.URL()[len("nats://"):])
	require.NoError(t, err)
	r.listen = u.String()
	nc, err := nats.Connect(r.Server.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	r.Conn, r.JS = nc, js
	report, err := streams.Apply(heraldtest.Context(t), js, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	return r
}

func (r *restartable) start(t *testing.T) {
	t.Helper()
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: r.dir, Listen: r.listen})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	if r.NATS == nil {
		r.NATS = &heraldtest.NATS{}
	}
	r.Server = srv
}

// While NATS is down nothing is published and nothing recorded: the caller
// is told to come back, and when it does, the event goes through.
func TestNATSDownIsA503ThenTheRetrySucceeds(t *testing.T) {
	t.Parallel()
	n := startRestartable(t)
	b := serve(t, n.NATS, api.Config{})
	body := sampleOrder(t)

	n.Server.Shutdown()
	require.Eventually(t, func() bool { return n.Conn.Status() != nats.CONNECTED }, 10*time.Second, 10*time.Millisecond)
	got := b.do(t, http.MethodPost, "/v1/events", acmeSend, body)
	require.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
	require.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
	require.Equal(t, "5", got.header.Get("Retry-After"))

	n.start(t)
	require.Eventually(t, func() bool { return n.Conn.Status() == nats.CONNECTED }, 10*time.Second, 10*time.Millisecond)
	got = b.do(t, http.MethodPost, "/v1/events", acmeSend, body)
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	require.Empty(t, got.header.Get("Idempotent-Replayed"))
	require.Len(t, heraldtest.StreamMessages(t, n.JS, "ORDERS"), 1)
}

// A publish JetStream does not acknowledge (here: no stream takes the
// subject) gives the Idempotency-Key back: the retry publishes, where a
// claim left behind would answer 409, or a recorded failure replay it.
func TestAFailedPublishLeavesNoRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	ctx := heraldtest.Context(t)
	body := sampleOrder(t)
	require.NoError(t, b.nats.JS.DeleteStream(ctx, "ORDERS"))

	got := b.do(t, http.MethodPost, "/v1/events", acmeSend, body)
	require.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
	require.Equal(t, "5", got.header.Get("Retry-After"))

	report, err := streams.Apply(ctx, b.nats.JS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	got = b.do(t, http.MethodPost, "/v1/events", acmeSend, body)
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	require.Empty(t, got.header.Get("Idempotent-Replayed"))
	require.Len(t, heraldtest.StreamMessages(t, b.nats.JS, "ORDERS"), 1)
}
