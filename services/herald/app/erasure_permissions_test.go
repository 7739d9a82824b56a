package app_test

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/erasure"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
	delivery "github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/suppression"
	"github.com/heraldhq/herald/streams"
)

// The api erases a subscriber — every bucket the erasure reads, purges
// and rewrites, and its audit record — with the NATS permissions the
// docs give it, and nothing is denied.
func TestErasureRunsWithTheAPIsDocumentedPermissions(t *testing.T) {
	t.Parallel()
	denied := &violations{}
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: heraldtest.StoreDir(t), Options: natsUsers(false), Logger: slog.New(denied)})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	connect := func(user string) jetstream.JetStream {
		nc, err := nats.Connect(strings.Replace(srv.URL(), "nats://", "nats://"+user+":"+user+"@", 1))
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		return js
	}
	ctx, admin := heraldtest.Context(t), connect("admin")
	report, err := streams.Apply(ctx, admin, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	seedOlga(t, admin)
	rows, err := history.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rows.Close()) })

	eraser, err := erasure.Open(ctx, connect("api"), erasure.Config{Secret: []byte(strings.Repeat("l", 32)), History: rows})
	require.NoError(t, err)
	r, err := eraser.Erase(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Equal(t, recipient.Erased{Profile: 1, Preferences: 1, TopicMemberships: 1, Accounts: 1, Devices: 1}, r.Erased)
	require.Equal(t, 1, r.Suppressions)
	require.Empty(t, denied.list())
	again, err := erasure.Open(ctx, connect("api"), erasure.Config{Secret: []byte(strings.Repeat("l", 32))})
	require.NoError(t, err)
	_, err = again.Erase(ctx, "acme", "u-olga")
	require.NoError(t, err, "without the index, the ledger is read instead")
	require.Empty(t, denied.list())
}

// seedOlga writes, as an administrator, a subscriber with everything an
// erasure removes.
func seedOlga(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ctx := heraldtest.Context(t)
	dir, err := recipient.Open(ctx, js)
	require.NoError(t, err)
	_, err = dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u-olga", Email: "olga@zarya.example"})
	require.NoError(t, err)
	_, err = dir.PutAccount(ctx, recipient.Account{Tenant: "acme", ID: "zarya", Members: []recipient.Member{{Subscriber: "u-olga"}}})
	require.NoError(t, err)
	_, err = dir.Memberships.Put(ctx, recipient.Membership{Tenant: "acme", Topic: "t", Subscriber: "u-olga"})
	require.NoError(t, err)
	_, err = dir.SetPreferences(ctx, "acme", "u-olga", recipient.Choices{"alerts": {event.ChannelSMS: false}}, nil, false)
	require.NoError(t, err)
	_, _, err = dir.PutDevice(ctx, recipient.Device{Tenant: "acme", Subscriber: "u-olga", ID: "phone", Kind: recipient.DeviceFCM, Token: "olga-fcm"})
	require.NoError(t, err)
	supp, err := suppression.Open(ctx, js)
	require.NoError(t, err)
	_, err = supp.Add(ctx, suppression.Entry{Tenant: "acme", Address: "olga@zarya.example", Reason: suppression.HardBounce})
	require.NoError(t, err)
	l, err := delivery.Open(ctx, js)
	require.NoError(t, err)
	e, err := l.Get(ctx, "acme", "acme:PO-1:1:po:email:olga@zarya.example")
	require.NoError(t, err)
	e.State, e.Recipient, e.UpdatedAt = delivery.Delivered, "olga@zarya.example", time.Now()
	require.NoError(t, l.Put(ctx, &e))
}
