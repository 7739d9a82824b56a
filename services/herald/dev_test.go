package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
)

// `herald dev`, as the README's first command runs it, runs every service
// — the history service on its SQLite index included — and is ready.
func TestDevRunsEveryService(t *testing.T) {
	t.Setenv("HERALD_CONFIG", "")
	t.Setenv("NATS_URL", "")
	t.Setenv("HISTORY_URL", "")
	t.Setenv("REDIS_URL", heraldtest.RedisURL(t))
	var out heraldtest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cmd := rootCommand()
	cmd.SetArgs([]string{"dev", "--data", t.TempDir(), "--nats-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
		"--api-listen", "127.0.0.1:0", "--shutdown-timeout", "10s"})
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	ops := regexp.MustCompile(`Ops +http://(\S+)/healthz`)
	require.Eventually(t, func() bool { return ops.MatchString(out.String()) }, 30*time.Second, 20*time.Millisecond, "no banner: %s", &out)
	require.Contains(t, out.String(), "History sqlite:")
	readyz := "http://" + ops.FindStringSubmatch(out.String())[1] + "/readyz"
	var ready struct {
		Status string
		Checks map[string]string
	}
	require.Eventually(t, func() bool {
		resp, err := heraldtest.HTTPClient(t).Get(readyz)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&ready))
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, "ok", ready.Checks["history"], "the history service runs, on its index: %v", ready.Checks)
}
