package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/unsubscribe"
	"github.com/heraldhq/herald/streams"
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
		DataDir: heraldtest.StoreDir(t), NATSListen: "127.0.0.1:0", RedisURL: heraldtest.RedisURL(t), Config: cfg,
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

// A process opens only the listeners its services use: the operations
// listener always (probes and scrapes), the public one only for a service
// that answers outsiders (the api). Workers alone — the outbox relay, every
// channel's workers — leave the public address alone, so a process of them
// starts while something else holds it; their emails' links still point at
// documents.public_url, and the api's process serves them.
func TestOnlyAProcessServingOutsidersOpensThePublicListener(t *testing.T) {
	t.Parallel()
	ctx := heraldtest.Context(t)
	n := heraldtest.StartNATS(t)
	workers := []string{"router", "workflow", "pdf", "delivery", "sms", "whatsapp", "webhook", "push", "inbox", "dlq", "history", "outbox-relay"}
	require.ElementsMatch(t, app.Targets, append(slices.Clone(workers), "api"), "a new service: say whether it answers outsiders")

	outboxDB := "sqlite:" + filepath.Join(t.TempDir(), "outbox.db")
	table, err := outbox.Open(ctx, outboxDB)
	require.NoError(t, err)
	require.NoError(t, table.Init(ctx))
	table.Close()
	mailDir := t.TempDir()
	vapidPrivate, vapidPublic, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	configFor := func(services ...string) app.Config {
		var cfg app.Config
		cfg.NATS.URL, cfg.Redis.URL, cfg.Redis.Prefix = n.Server.URL(), heraldtest.RedisURL(t), heraldtest.Prefix()
		cfg.Services, cfg.Streams.SkipApply = services, true
		cfg.HTTP.Listen, cfg.API.Listen = "127.0.0.1:0", "127.0.0.1:0"
		cfg.Email.From = "Herald <herald@example.com>"
		cfg.Email.Providers = []app.ProviderConfig{{Type: "maildir", Dir: mailDir}}
		cfg.SMS.Providers = []app.ProviderConfig{{Type: "textdir", Dir: t.TempDir()}}
		cfg.WhatsApp.Providers = cfg.SMS.Providers
		cfg.History.URL = "sqlite:" + filepath.Join(t.TempDir(), "history.db")
		cfg.Outbox.URL = outboxDB
		cfg.Documents.LinkSecretEnv = "TEST_LINK_SECRET"
		cfg.Push.WebPush = &app.WebPushConfig{VAPIDPublicKey: vapidPublic, VAPIDPrivateKeyEnv: "TEST_VAPID", Contact: "mailto:ops@example.com"}
		cfg.Getenv = func(name string) string {
			return map[string]string{"TEST_LINK_SECRET": linkKey, "TEST_VAPID": vapidPrivate}[name]
		}
		return cfg
	}
	report, err := streams.Apply(ctx, n.JS, configFor().WithDefaults().StreamOptions())
	require.NoError(t, err)
	require.NoError(t, report.Err())
	heraldtest.RegisterTenants(t, n.JS, "acme")
	start := func(cfg app.Config) (*app.App, error) {
		a, err := app.New(cfg, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, a.Stop(ctx))
		})
		return a, a.Start(ctx)
	}
	client := heraldtest.HTTPClient(t)
	status := func(url string) int {
		resp, err := client.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		return resp.StatusCode
	}

	api, err := start(configFor("api"))
	require.NoError(t, err)
	require.NotEmpty(t, api.APIAddr())
	require.NotEqual(t, api.HTTPAddr(), api.APIAddr())
	require.Equal(t, http.StatusOK, status("http://"+api.APIAddr()+"/v1/openapi.json"))
	require.Equal(t, http.StatusOK, status("http://"+api.HTTPAddr()+"/healthz"))

	// Whatever else holds the public address, the workers do not need it.
	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close() })
	for _, services := range [][]string{{"outbox-relay"}, workers} {
		cfg := configFor(services...)
		cfg.API.Listen = held.Addr().String()
		cfg.Documents.PublicURL = "http://" + api.APIAddr()
		a, err := start(cfg)
		require.NoError(t, err, "%v opened the public listener", services)
		require.Empty(t, a.APIAddr(), "%v serve no outsider", services)
		require.Equal(t, http.StatusOK, status("http://"+a.HTTPAddr()+"/healthz"), "the operations listener stays")
	}

	// The workers' delivery signs the links; the api serves them.
	d := notification.Delivery{ID: "acme:listeners", DedupeKey: "acme:listeners", Tenant: "acme", Channel: event.ChannelEmail,
		Priority: notification.PriorityNormal, Recipient: notification.Recipient{Address: "olga@zarya.example"}, Locale: "en",
		Category: "updates", Message: &notification.Message{Subject: "Hello", Text: "Hello.\n"},
		Event: notification.EventRef{ID: "listeners", Type: "job"}, CreatedAt: time.Now()}
	body, err := json.Marshal(d)
	require.NoError(t, err)
	msg := nats.NewMsg(notification.Subject(d.Channel, d.Priority, d.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, d.DedupeKey)
	_, err = n.JS.PublishMsg(ctx, msg)
	require.NoError(t, err)
	var mails []string
	require.Eventually(t, func() bool {
		mails, err = filepath.Glob(filepath.Join(mailDir, "*.eml"))
		require.NoError(t, err)
		return len(mails) > 0
	}, 30*time.Second, 50*time.Millisecond, "the workers' delivery sent nothing")
	f, err := os.Open(mails[0])
	require.NoError(t, err)
	defer f.Close()
	m, err := mail.ReadMessage(f)
	require.NoError(t, err)
	link := strings.Trim(m.Header.Get("List-Unsubscribe"), "<>")
	require.True(t, strings.HasPrefix(link, "http://"+api.APIAddr()+unsubscribe.Path), link)
	require.Equal(t, http.StatusOK, status(link), "the api's process serves the workers' links")
}
