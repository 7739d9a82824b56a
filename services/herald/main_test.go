package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// herald runs the command line as a user would and returns its output.
func herald(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := rootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.Execute()
	return out.String(), err
}

func TestStreamsPrint(t *testing.T) {
	out, err := herald(t, "streams", "print", "ORDERS")
	require.NoError(t, err)
	want, err := os.ReadFile("../../streams/ORDERS/stream.json")
	require.NoError(t, err)
	require.Equal(t, string(want), out, "exactly the file, ready for nats stream add --config")

	out, err = herald(t, "streams", "print", "NOTIFY", "email-normal")
	require.NoError(t, err)
	want, err = os.ReadFile("../../streams/NOTIFY/consumers/email-normal.json")
	require.NoError(t, err)
	require.Equal(t, string(want), out)

	_, err = herald(t, "streams", "print", "ORDER")
	require.ErrorContains(t, err, `no stream "ORDER" is declared (declared: ADVISORIES, AUDIT, DLQ, DOCS`)

	out, err = herald(t, "streams", "print")
	require.NoError(t, err)
	require.Equal(t, 69, strings.Count(out, "# streams/"))
}

func TestStreamsApplyAndPublish(t *testing.T) {
	n := heraldtest.StartNATS(t)
	t.Setenv("NATS_URL", n.Server.URL())
	t.Setenv("HERALD_CONFIG", "")

	// Under fair scheduling (the default) the consumers of NOTIFY (18)
	// and DOCS (1) are templates, made per tenant by the services.
	out, err := herald(t, "streams", "apply")
	require.NoError(t, err)
	require.Equal(t, 50, strings.Count(out, "created "), out)
	require.Equal(t, 19, strings.Count(out, "template "), out)
	require.Contains(t, out, "template  consumer NOTIFY > email-normal (made per tenant from this declaration: scheduling.fair)")
	out, err = herald(t, "streams", "apply")
	require.NoError(t, err)
	require.Equal(t, 50, strings.Count(out, "unchanged "), out)

	out, err = herald(t, "publish", "../../examples/events/order.created.json")
	require.NoError(t, err)
	require.Equal(t, "published evt-2026-11-30-0001 to orders.created (stream ORDERS, sequence 1)\n", out)
	out, err = herald(t, "publish", "../../examples/events/order.created.json")
	require.NoError(t, err)
	require.Contains(t, out, "duplicate: evt-2026-11-30-0001 was already published")

	out, err = herald(t, "publish", "--count", "5", "../../examples/events/order.created.json")
	require.NoError(t, err)
	require.Contains(t, out, "published 5 events to orders.created")
	require.Contains(t, out, "0 duplicates")

	ctx := heraldtest.Context(t)
	stream, err := n.JS.Stream(ctx, "ORDERS")
	require.NoError(t, err)
	for i, want := range []string{"evt-2026-11-30-0001-000001", "evt-2026-11-30-0001-000005"} {
		m, err := stream.GetMsg(ctx, uint64(2+i*4))
		require.NoError(t, err)
		require.Equal(t, event.MsgID("acme", want, m.Data), m.Header.Get(jetstream.MsgIDHeader))
		ev, err := event.Decode(m.Data)
		require.NoError(t, err)
		require.Equal(t, want, ev.ID)
		data, err := ev.OrderData()
		require.NoError(t, err, "a derived copy is still a valid event")
		require.Equal(t, "PO-2026-0042"+strings.TrimPrefix(want, "evt-2026-11-30-0001"), data.Order.ID)
	}

	out, err = herald(t, "publish", "--count", "5", "../../examples/events/order.created.json")
	require.NoError(t, err)
	require.Contains(t, out, "5 duplicates", "copies are derived the same way every time")

	// --binary: the same event in binary content mode, the same Nats-Msg-Id.
	out, err = herald(t, "publish", "--binary", "../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	require.Equal(t, "published evt-2026-11-30-0100 to inventory.low_stock (stream INVENTORY, sequence 1)\n", out)
	inventory, err := n.JS.Stream(ctx, "INVENTORY")
	require.NoError(t, err)
	m, err := inventory.GetMsg(ctx, 1)
	require.NoError(t, err)
	raw, err := os.ReadFile("../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	require.Equal(t, event.MsgID("acme", "evt-2026-11-30-0100", raw), m.Header.Get(jetstream.MsgIDHeader), "the file's, in either mode")
	require.Equal(t, "acme", m.Header.Get("ce-tenant"))
	want, err := event.Decode(raw)
	require.NoError(t, err)
	got, err := event.DecodeMsg(m.Header, m.Data)
	require.NoError(t, err)
	require.Equal(t, want, got)
	out, err = herald(t, "publish", "--binary", "../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	require.Contains(t, out, "duplicate: evt-2026-11-30-0100 was already published")
}

// The configured retentions reach the server, and one too short for the
// ledger stops the command before it expires anything.
func TestStreamsApplyTakesTheConfiguredRetention(t *testing.T) {
	n := heraldtest.StartNATS(t)
	t.Setenv("NATS_URL", n.Server.URL())
	config := filepath.Join(t.TempDir(), "herald.yaml")
	t.Setenv("HERALD_CONFIG", config)

	require.NoError(t, os.WriteFile(config, []byte("ledger: {retention: 24h}\n"), 0o600))
	_, err := herald(t, "streams", "apply")
	require.ErrorContains(t, err, "ledger.retention: 1 day (24h) is shorter than 51 days")
	_, err = n.JS.Stream(heraldtest.Context(t), "KV_deliveries")
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "nothing applied")

	require.NoError(t, os.WriteFile(config, []byte("ledger: {retention: 2400h}\n"), 0o600))
	_, err = herald(t, "streams", "apply")
	require.NoError(t, err)
	s, err := n.JS.Stream(heraldtest.Context(t), "KV_deliveries")
	require.NoError(t, err)
	require.Equal(t, 100*24*time.Hour, s.CachedInfo().Config.MaxAge)
}

func TestPublishRefusesInvalidEvents(t *testing.T) {
	path := t.TempDir() + "/bad.json"
	require.NoError(t, os.WriteFile(path, []byte(`{"specversion":"1.0","id":"x","type":"order.created","source":"/t"}`), 0o600))
	_, err := herald(t, "publish", path)
	require.ErrorContains(t, err, "tenant: is required")
	require.ErrorContains(t, err, "use --no-validate")
}

// herald streams apply refuses a nats-server without message schedules,
// naming the version needed and the one found, before it changes anything.
func TestStreamsApplyRefusesAServerWithoutMessageSchedules(t *testing.T) {
	t.Setenv("NATS_URL", heraldtest.ServerOfVersion(t, "2.13.9"))
	t.Setenv("HERALD_CONFIG", "")
	for _, args := range [][]string{{"streams", "apply"}, {"streams", "apply", "--dry-run"}} {
		_, err := herald(t, args...)
		require.ErrorContains(t, err, "nats-server 2.13.9 is too old: Herald needs nats-server 2.14.0 or newer", args)
	}
}

// A deployment that served first come, first served, checked with
// scheduling.fair on (the default): `herald streams check` reports its
// durables as drift and exits non-zero; `herald streams apply` removes them,
// saying where their unacknowledged deliveries go; the check then passes.
func TestStreamsCheckAndApplySwitchToFair(t *testing.T) {
	n := heraldtest.StartNATSWithStreams(t)
	t.Setenv("NATS_URL", n.Server.URL())
	t.Setenv("HERALD_CONFIG", "")
	out, err := herald(t, "streams", "check")
	require.ErrorContains(t, err, "drifted from the server", out)
	require.Contains(t, out, "extra     consumer NOTIFY > email-normal (first come, first served while scheduling.fair is on: "+
		"apply removes it, and the tenants' consumers take its unacknowledged messages)")

	out, err = herald(t, "streams", "apply")
	require.NoError(t, err, out)
	require.Contains(t, out, "removed   consumer NOTIFY > email-normal (first come, first served → per tenant: "+
		"its unacknowledged messages go to the tenants' consumers)")

	out, err = herald(t, "streams", "check")
	require.NoError(t, err, out)
	require.Contains(t, out, "template  consumer NOTIFY > email-normal")
}
