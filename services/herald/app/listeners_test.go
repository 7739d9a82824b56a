package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

var linkKey = strings.Repeat("k", 32)

// startDev runs the whole pipeline with both listeners on free ports and a
// known link key.
func startDev(t *testing.T) *app.Dev {
	t.Helper()
	var cfg app.Config
	cfg.HTTP.Listen, cfg.API.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Redis.Prefix = heraldtest.Prefix()
	cfg.Documents.LinkSecretEnv = "TEST_LINK_SECRET"
	cfg.Getenv = func(name string) string {
		if name == "TEST_LINK_SECRET" {
			return linkKey
		}
		return ""
	}
	dev, err := app.StartDev(heraldtest.Context(t), app.DevConfig{
		DataDir: t.TempDir(), NATSListen: "127.0.0.1:0", RedisURL: heraldtest.RedisURL(t), Config: cfg,
	}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, dev.Stop(ctx))
	})
	return dev
}

// What faces the internet (api.listen) and what faces operators
// (http.listen) share no route: the metrics (tenant names, volumes) and
// readiness (internal addresses, errors) are not public, and documents are
// not served where only probes and scrapers should come.
func TestPublicAndOperationsListenersShareNoRoute(t *testing.T) {
	t.Parallel()
	dev := startDev(t)
	require.NotEqual(t, dev.App.HTTPAddr(), dev.App.APIAddr())
	ctx := heraldtest.Context(t)
	nc, err := nats.Connect(dev.NATS.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	store, err := documents.Open(ctx, js)
	require.NoError(t, err)
	name := documents.ObjectName("acme", "PO-1", "invoice", 1)
	_, err = store.Put(ctx, name, "invoice", []byte("%PDF-1.7 public"))
	require.NoError(t, err)
	signer, err := documents.NewSigner([]byte(linkKey), "http://"+dev.App.APIAddr(), time.Hour)
	require.NoError(t, err)
	link, _ := signer.Link(name, time.Now())
	linkPath := strings.TrimPrefix(link, "http://"+dev.App.APIAddr())

	client := heraldtest.HTTPClient(t)
	get := func(addr, path string) (int, string) {
		resp, err := client.Get("http://" + addr + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	public, ops := dev.App.APIAddr(), dev.App.HTTPAddr()

	status, body := get(public, linkPath)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "%PDF-1.7 public", body)
	for _, path := range []string{"/metrics", "/readyz", "/healthz"} {
		status, _ := get(public, path)
		require.Equal(t, http.StatusNotFound, status, "%s is not public", path)
	}

	status, _ = get(ops, linkPath)
	require.Equal(t, http.StatusNotFound, status, "no documents on the operations listener")
	for _, path := range []string{"/metrics", "/healthz"} {
		status, _ := get(ops, path)
		require.Equal(t, http.StatusOK, status, path)
	}
	require.Eventually(t, func() bool { status, _ := get(ops, "/readyz"); return status == http.StatusOK }, 30*time.Second, 50*time.Millisecond)
}

// A client that opens a connection and never finishes its request is hung
// up on by either listener, instead of holding the connection for ever.
func TestListenersHangUpOnClientsThatStall(t *testing.T) {
	t.Parallel()
	dev := startDev(t)
	addrs := []string{dev.App.APIAddr(), dev.App.HTTPAddr()}
	conns := make([]net.Conn, len(addrs))
	for i, addr := range addrs {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		_, err = conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: herald\r\n")) // the header never ends
		require.NoError(t, err)
		// Far beyond Herald's timeouts; only a server without one lets it run out.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
		conns[i] = conn
	}
	for i, conn := range conns {
		_, err := io.ReadAll(conn)
		require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "%s kept a stalled request open", addrs[i])
	}
}
