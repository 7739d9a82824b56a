package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/pdf"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(relayProcess) != "" {
		os.Exit(runRelayProcess())
	}
	if os.Getenv(workflowProcess) != "" {
		os.Exit(runWorkflowProcess())
	}
	removeCA, err := trustHTTPTestCertificate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "trusting httptest's certificate:", err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, append(heraldtest.LeakOptions, goleak.Cleanup(func(int) { removeCA() }))...)
}

// pipeline is Herald as `herald dev` runs it, on random ports.
type pipeline struct {
	dev   *app.Dev
	nc    *nats.Conn
	js    jetstream.JetStream
	redis string // URL
	cfg   app.Config
}

func startPipeline(t *testing.T, edits ...func(*app.Config)) *pipeline {
	t.Helper()
	return startPipelineLogging(t, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})), edits...)
}

// startPipelineLogging is startPipeline with the logger every piece,
// the NATS server included, logs to.
func startPipelineLogging(t *testing.T, logger *slog.Logger, edits ...func(*app.Config)) *pipeline {
	t.Helper()
	var cfg app.Config
	cfg.HTTP.Listen, cfg.API.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Redis.Prefix = heraldtest.Prefix()
	cfg.Breakers.Cooldown = 250 * time.Millisecond // a provider back up is probed soon
	for _, edit := range edits {
		edit(&cfg)
	}
	redisURL := cfg.Redis.URL // an edit's own Redis (a Sentinel set, say)
	if redisURL == "" {
		redisURL = heraldtest.RedisURL(t)
	}
	dev, err := app.StartDev(context.Background(), app.DevConfig{
		DataDir: heraldtest.StoreDir(t), NATSListen: "127.0.0.1:0", RedisURL: redisURL, Config: cfg,
	}, logger)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, dev.Stop(ctx))
	})
	nc, err := nats.Connect(dev.NATS.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return &pipeline{dev: dev, nc: nc, js: js, redis: redisURL, cfg: cfg}
}

// publish sends an event as a publisher does, with Nats-Msg-Id.
func (p *pipeline) publish(t *testing.T, subject, msgID string, payload []byte) *jetstream.PubAck {
	t.Helper()
	msg := nats.NewMsg(subject)
	msg.Data = payload
	if msgID != "" {
		msg.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	ack, err := p.js.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
	return ack
}

// startApp runs more Herald services on the pipeline's NATS and Redis, as
// another process would.
func (p *pipeline) startApp(t *testing.T, services ...string) *app.App {
	t.Helper()
	cfg := p.cfg
	cfg.NATS.URL = p.dev.NATS.URL()
	cfg.Redis.URL = p.redis
	cfg.HTTP.Listen, cfg.API.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Services = services
	cfg.Streams.SkipApply = true
	a, err := app.New(cfg, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, err)
	require.NoError(t, a.Start(heraldtest.Context(t)))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, a.Stop(ctx))
	})
	return a
}

func newMsg(subject, msgID string, payload []byte) *nats.Msg {
	msg := nats.NewMsg(subject)
	msg.Data = payload
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	return msg
}

// publishAsync publishes without waiting for the stream's ack; waitPublished
// waits for all of them. When the client's window of unacknowledged
// publishes is full (a loaded machine), it waits for the window to drain,
// as a well-behaved publisher does.
func (p *pipeline) publishAsync(t *testing.T, subject, msgID string, payload []byte) {
	t.Helper()
	msg := nats.NewMsg(subject)
	msg.Data = payload
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	_, err := p.js.PublishMsgAsync(msg)
	if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
		p.waitPublished(t)
		_, err = p.js.PublishMsgAsync(msg)
	}
	require.NoError(t, err)
}

func (p *pipeline) waitPublished(t *testing.T) {
	t.Helper()
	select {
	case <-p.js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("publishes not acknowledged")
	}
}

// shrinkDuplicateWindows lets a test publish "after the window" in seconds
// rather than the production hour.
func shrinkDuplicateWindows(t *testing.T, p *pipeline, window time.Duration) {
	t.Helper()
	ctx := heraldtest.Context(t)
	for _, name := range []string{"ORDERS", "INVENTORY", "NOTIFY"} {
		s, err := p.js.Stream(ctx, name)
		require.NoError(t, err)
		cfg := s.CachedInfo().Config
		cfg.Duplicates = window
		_, err = p.js.UpdateStream(ctx, cfg)
		require.NoError(t, err)
	}
}

// settle waits until every Herald consumer has nothing pending and nothing
// unacknowledged, twice in a row: then nothing more will come out.
func (p *pipeline) settle(t *testing.T) {
	t.Helper()
	consumers := [][2]string{}
	for _, s := range router.Streams {
		consumers = append(consumers, [2]string{s, router.Durable})
	}
	// backlog is what the consumers have yet to finish.
	backlog := func() (n uint64) {
		for _, c := range consumers {
			info, err := p.js.Consumer(heraldtest.Context(t), c[0], c[1])
			require.NoError(t, err)
			ci := info.CachedInfo()
			n += ci.NumPending + uint64(ci.NumAckPending)
		}
		// DOCS and NOTIFY are work queues: a message leaves when
		// acknowledged, whichever consumer — shared, or per tenant — took it.
		for _, name := range []string{pdf.Stream, delivery.Stream} {
			queue, err := p.js.Stream(heraldtest.Context(t), name)
			require.NoError(t, err)
			n += queue.CachedInfo().State.Msgs
		}
		return n
	}
	// A pipeline whose backlog keeps moving is waited for (a loaded CI
	// machine is slow, not stuck); one whose backlog stands still for a
	// minute failed.
	const stalled = time.Minute
	quiet, last, moved := 0, uint64(math.MaxUint64), time.Now()
	for start := time.Now(); time.Since(start) < 5*time.Minute; time.Sleep(50 * time.Millisecond) {
		n := backlog()
		if n != last {
			last, moved = n, time.Now()
		}
		if n > 0 {
			quiet = 0
		} else if quiet++; quiet >= 2 {
			return
		}
		if time.Since(moved) > stalled {
			t.Fatalf("the pipeline did not settle: %d messages pending, unchanged for %s", n, stalled)
		}
	}
	t.Fatalf("the pipeline did not settle in 5 minutes")
}

// mail reads every .eml in the sink, as a mail client would.
func (p *pipeline) mail(t *testing.T) []emailtest.Parsed {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(p.dev.MailDir, "*.eml"))
	require.NoError(t, err)
	var out []emailtest.Parsed
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		out = append(out, emailtest.Parse(t, raw))
	}
	return out
}

// streamMessages reads every message stored in a stream.
func (p *pipeline) streamMessages(t *testing.T, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	return heraldtest.StreamMessages(t, p.js, stream)
}

func (p *pipeline) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := heraldtest.HTTPClient(t).Get("http://" + p.dev.App.HTTPAddr() + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// sample returns an example event, edited.
func sample(t *testing.T, name string, edit func(m map[string]any)) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", "events", name))
	require.NoError(t, err)
	if edit == nil {
		return b
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	edit(m)
	b, err = json.Marshal(m)
	require.NoError(t, err)
	return b
}

// testWriter sends logs to the test's output, shown only on failure.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(b))
	return len(b), nil
}

// processes runs a Herald service as a child process of the test binary
// (TestMain makes it one, as env says), kills it with SIGKILL and starts
// another: a crash, not a shutdown. stop kills the last; a failed test
// shows every process's log.
type processes struct {
	t        *testing.T
	env      []string
	mu       sync.Mutex
	cmd      *exec.Cmd
	logs     []string
	started  int
	finished sync.WaitGroup
}

func (r *processes) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started++
	log := filepath.Join(r.t.TempDir(), fmt.Sprintf("process-%d.log", r.started))
	f, err := os.Create(log)
	require.NoError(r.t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), r.env...)
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(r.t, cmd.Start())
	r.cmd, r.logs = cmd, append(r.logs, log)
	r.finished.Go(func() {
		_ = cmd.Wait()
		_ = f.Close()
	})
}

// kill kills the running process at once: no drain, no last commit.
func (r *processes) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.cmd.Process.Kill()
}

func (r *processes) stop() {
	r.kill()
	r.finished.Wait()
	if r.t.Failed() {
		for _, l := range r.logs {
			b, _ := os.ReadFile(l)
			r.t.Logf("%s:\n%s", filepath.Base(l), b)
		}
	}
}
