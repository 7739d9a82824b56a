// Package heraldtest starts the real servers Herald's tests run against:
// an embedded nats-server on a random loopback port with its store in
// t.TempDir(), and Redis — the server REDIS_URL points at (CI runs a real
// redis-server), or else an embedded Redis-protocol server; for tests that
// restart Redis, a redis-server process of the test's own.
package heraldtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/streams"
)

// NATS is a running test server with a connected client.
type NATS struct {
	Server *embedded.NATS
	Conn   *nats.Conn
	JS     jetstream.JetStream
}

// StartNATS starts a server for this test; it stops when the test ends.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: StoreDir(t)})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return &NATS{Server: srv, Conn: nc, JS: js}
}

// StoreDir is a directory for a test server's JetStream store (or a
// herald dev data directory), removed when the test ends. It is in memory
// (memDir) where the machine has room there: the store writes its
// metadata with O_SYNC, and on a disk every stream a test creates waits
// for the journal — on a shared 2-core machine the tests spent more time
// in those system calls than in NATS. Elsewhere, it is t.TempDir().
func StoreDir(t testing.TB) string {
	t.Helper()
	if parent := memDir(); parent != "" {
		if dir, err := os.MkdirTemp(parent, "herald-test-"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// StartNATSWithStreams also applies Herald's stream declarations.
func StartNATSWithStreams(t testing.TB) *NATS {
	t.Helper()
	n := StartNATS(t)
	report, err := streams.Apply(Context(t), n.JS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	return n
}

// RedisURL is REDIS_URL when set, else the URL of an embedded server
// started for this test.
func RedisURL(t testing.TB) string {
	t.Helper()
	if url := os.Getenv("REDIS_URL"); url != "" {
		return url
	}
	r, err := embedded.StartRedis("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r.URL()
}

// Locker is a Redis lock for this test: on REDIS_URL's server, or an
// embedded one, under a key prefix no other test uses.
func Locker(t testing.TB) *lock.Redis {
	t.Helper()
	return lock.NewRedis(RedisClient(t, RedisURL(t)), Prefix()+"lock:")
}

// RedisClient is a client of the Redis server at url, closed when the test
// ends.
func RedisClient(t testing.TB, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// Prefix is a Redis key prefix unique to its caller.
func Prefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "test:" + hex.EncodeToString(b[:]) + ":"
}

// PDFText extracts a PDF's text with pdftotext (Debian's poppler-utils),
// keeping the layout. Without pdftotext the test is skipped — except in CI
// (CI=true), where .ci/run installs it and its absence is a failure.
func PDFText(t testing.TB, pdf []byte) string {
	t.Helper()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("pdftotext is missing: install poppler-utils")
		}
		t.Skip("pdftotext not installed (apt-get install poppler-utils)")
	}
	cmd := exec.Command("pdftotext", "-layout", "-enc", "UTF-8", "-", "-")
	cmd.Stdin = bytes.NewReader(pdf)
	out, err := cmd.Output()
	require.NoError(t, err, "pdftotext could not read the PDF")
	return string(out)
}

// HTTPClient is a client with a transport of its own: a test server
// closing elsewhere closes http.DefaultTransport's idle connections, which
// breaks requests that share them.
func HTTPClient(t testing.TB) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// Outcomes are the outcomes the ledger's writes told so far (each write
// that settled a notification, oldest first), as the webhook status feed
// reads them.
func Outcomes(t testing.TB, js jetstream.JetStream) []notification.Status {
	t.Helper()
	var out []notification.Status
	for _, m := range StreamMessages(t, js, "KV_"+ledger.Bucket) {
		var e ledger.Entry
		if len(m.Data) > 0 && json.Unmarshal(m.Data, &e) == nil {
			if st, ok := notification.OutcomeOf(e); ok {
				out = append(out, st)
			}
		}
	}
	return out
}

// StreamMessages reads every message a stream holds, oldest first.
func StreamMessages(t testing.TB, js jetstream.JetStream, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := Context(t)
	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		if m, err := s.GetMsg(ctx, seq); err == nil { // deleted ones are gaps
			out = append(out, m)
		}
	}
	return out
}

// LeakOptions are the goroutines goleak must tolerate: library goroutines
// that outlive what owned them by design or by a known quirk, not ours.
var LeakOptions = []goleak.Option{
	// go-redis's idle-connection reaper stops when its client closes, a
	// beat after Close returns.
	goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper"),
	// nats.go's jetstream waits for reconnects on a status channel that is
	// nil when async publishing started as the connection closed.
	goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"),
}

// Context is a context bounded by 30 s, cancelled when the test ends.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
