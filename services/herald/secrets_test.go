package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
)

// password is in every URL below; no output may show it.
const password = "Pa55-w0rd-4-herald"

// Whatever fails — a URL that does not parse, a server that refuses — the
// password of NATS_URL and REDIS_URL appears nowhere: not in the error, the
// command's output, the log, or anything a library prints on its own.
// Not parallel: it sets the environment and captures the process's output.
func TestFailuresNeverShowAPassword(t *testing.T) {
	n := heraldtest.StartNATS(t)
	running := "nats://herald:" + password + "@" + strings.TrimPrefix(n.Server.URL(), "nats://")
	refused := refusingAddress(t)
	event := "../../examples/events/order.created.json"
	config := t.TempDir() + "/herald.yaml"
	require.NoError(t, os.WriteFile(config, []byte(`
email:
  from: Herald <herald@example.com>
  providers: [{type: maildir, dir: `+t.TempDir()+`}]
`), 0o600))
	for _, c := range []struct {
		name, natsURL, redisURL string
		args                    []string
	}{
		{"run, Redis URL does not parse", running, "redis://herald:" + password + "@redis:port/0", []string{"run"}},
		{"run, NATS URL does not parse", "nats://herald:" + password + "@nats:port", "redis://herald:" + password + "@" + refused, []string{"run"}},
		{"run, NATS refuses", "nats://herald:" + password + "@" + refused, "redis://herald:" + password + "@" + refused, []string{"run"}},
		{"run, Redis refuses, then start fails", running, "redis://herald:" + password + "@" + refused,
			[]string{"run", "--http-listen", "127.0.0.1:port"}},
		{"publish, NATS refuses", "nats://herald:" + password + "@" + refused, "", []string{"publish", event}},
		{"publish, NATS token refused", "nats://" + password + "@" + refused, "", []string{"publish", event}},
		{"dlq list, NATS refuses", "nats://herald:" + password + "@" + refused, "", []string{"dlq", "list"}},
		{"dlq list, NATS URL does not parse", "nats://herald:" + password + "@nats:port", "", []string{"dlq", "list"}},
		{"streams apply, NATS refuses", "nats://herald:" + password + "@" + refused, "", []string{"streams", "apply"}},
		{"bench, Redis URL does not parse", running, "redis://herald:" + password + "@redis:port/0", []string{"bench", "--orders", "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("NATS_URL", c.natsURL)
			t.Setenv("REDIS_URL", c.redisURL)
			t.Setenv("HERALD_CONFIG", config)
			out, err := heraldCapturingProcessOutput(t, c.args...)
			require.Error(t, err, out)
			require.NotContains(t, err.Error(), password)
			require.NotContains(t, out, password)
			if strings.Contains(err.Error(), "://") {
				require.Contains(t, err.Error(), "***", "a URL the error names keeps its user, not its password")
			}
		})
	}
}

// refusingAddress is a server that hangs up on every connection. It stays
// bound until the test ends: a port closed and dialled later could be
// bound meanwhile by any other test.
func refusingAddress(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.Close()
		}
	})
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// heraldCapturingProcessOutput runs the command line and returns everything
// it printed anywhere: its own output, os.Stdout and os.Stderr, the log
// package and go-redis's logger.
func heraldCapturingProcessOutput(t *testing.T, args ...string) (string, error) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	var captured bytes.Buffer
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(&captured, r) })
	stdout, stderr, logOut := os.Stdout, os.Stderr, log.Writer()
	os.Stdout, os.Stderr = w, w
	log.SetOutput(w)
	redis.SetLogger(printer{w})
	out, runErr := herald(t, args...)
	os.Stdout, os.Stderr = stdout, stderr
	log.SetOutput(logOut)
	redis.SetLogger(printer{os.Stderr})
	require.NoError(t, w.Close())
	wg.Wait()
	require.NoError(t, r.Close())
	return out + captured.String(), runErr
}

type printer struct{ w io.Writer }

func (p printer) Printf(_ context.Context, format string, v ...any) {
	fmt.Fprintf(p.w, "redis: "+format+"\n", v...)
}
