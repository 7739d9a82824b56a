package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push/apns/apnstest"
	"github.com/heraldhq/herald/services/delivery/push/fcm/fcmtest"
	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/services/herald/app"
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

// The push keys — FCM's service account key, the APNs signing key, the
// VAPID private key — appear in no output of a push service that fails to
// start, whether a key is refused or NATS is: not in the error, the
// command's output, the log, or anything a library prints on its own.
// Not parallel: it sets the environment and captures the process's output.
func TestFailuresNeverShowAPushKey(t *testing.T) {
	fcmKey := string(fcmtest.New(t).ServiceAccountJSON())
	apnsKey, _ := apnstest.NewKey(t)
	vapidKey, vapidPublic, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	refused := refusingAddress(t)
	config := filepath.Join(t.TempDir(), "herald.yaml")
	require.NoError(t, os.WriteFile(config, []byte(`
push:
  fcm: {credentials_env: HERALD_TEST_FCM, project_id: acme-app}
  apns: {key_env: HERALD_TEST_APNS, key_id: ABC123DEFG, team_id: DEF123GHIJ, topic: com.example.app}
  webpush: {vapid_public_key: `+vapidPublic+`, vapid_private_key_env: HERALD_TEST_VAPID, contact: "mailto:ops@example.com"}
`), 0o600))
	// A broken key's private part: enough of a key to be read as one.
	brokenFCM := fcmKey[:len(fcmKey)*2/3] // cut inside its private key
	brokenAPNs := "-----BEGIN PRIVATE KEY-----\nbrokenAPNskeyPart0123456789abcdef\n-----END PRIVATE KEY-----\n"
	brokenVAPID := "brokenVAPIDkeyPart0123456789abcdef"
	for _, c := range []struct{ name, fcm, apns, vapid string }{
		{"NATS refuses", fcmKey, apnsKey, vapidKey},
		{"FCM's key refused", brokenFCM, apnsKey, vapidKey},
		{"the APNs key refused", fcmKey, brokenAPNs, vapidKey},
		{"the VAPID key refused", fcmKey, apnsKey, brokenVAPID},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("NATS_URL", "nats://"+refused)
			t.Setenv("REDIS_URL", "redis://"+refused)
			t.Setenv("HERALD_CONFIG", config)
			t.Setenv("HERALD_TEST_FCM", c.fcm)
			t.Setenv("HERALD_TEST_APNS", c.apns)
			t.Setenv("HERALD_TEST_VAPID", c.vapid)
			out, err := heraldCapturingProcessOutput(t, "run", "push")
			require.Error(t, err, out)
			for _, part := range secretParts(c.fcm, c.apns, c.vapid) {
				require.NotContains(t, err.Error(), part)
				require.NotContains(t, out, part)
			}
		})
	}
}

// `herald dev` prints its Web Push public key, never the private one it
// keeps beside it.
func TestDevBannerNeverShowsTheVAPIDKey(t *testing.T) {
	banner, data := startDev(t)
	private, public := app.DevVAPIDKeyFiles(data)
	pub, err := os.ReadFile(public)
	require.NoError(t, err)
	require.Contains(t, banner, strings.TrimSpace(string(pub)))
	key, err := os.ReadFile(private)
	require.NoError(t, err)
	for _, part := range secretParts(string(key)) {
		require.NotContains(t, banner, part)
	}
}

// secretParts are the parts of secrets an output must not show: each line (and
// each JSON-escaped line) of 16 characters or more, headers aside.
func secretParts(secrets ...string) []string {
	var parts []string
	for _, s := range secrets {
		for _, line := range strings.FieldsFunc(strings.ReplaceAll(s, `\n`, "\n"), func(r rune) bool { return r == '\n' || r == '"' }) {
			if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
				parts = append(parts, line)
			}
		}
	}
	return parts
}
