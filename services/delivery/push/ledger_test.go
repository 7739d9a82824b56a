package push_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/apns/apnstest"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
)

func TestEachDevicesOutcomeReachesTheLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.apns.Refuse(iPadToken, apnstest.Answer{Status: http.StatusGone, Reason: "Unregistered", Timestamp: time.Now()})
	c := b.channel(t, b.browser(t, "laptop", ""), device("ipad", recipient.DeviceAPNs, iPadToken))
	n := heraldtest.StartNATSWithStreams(t) // NOTIFY declares push's subjects and consumers
	svc, err := delivery.New(n.JS, delivery.Config{Channel: c, Locker: heraldtest.Locker(t), Concurrency: 1, RetryDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, svc.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	d := shipped()
	d.DedupeKey = notification.Key{Tenant: "acme", Subject: "PO-2026-0042", Revision: 1, Document: "delivery_note",
		Channel: event.ChannelPush, Recipient: "sub_1"}.String()
	d.ID, d.Priority = notification.ID(d.DedupeKey), notification.PriorityNormal
	body, err := json.Marshal(d)
	require.NoError(t, err)
	msg := nats.NewMsg(notification.Subject(event.ChannelPush, d.Priority, d.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, d.DedupeKey)
	_, err = n.JS.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)

	l, err := ledger.Open(heraldtest.Context(t), n.JS)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		e, err := l.Get(heraldtest.Context(t), "acme", d.DedupeKey)
		return err == nil && e.State == ledger.Delivered
	}, 60*time.Second, 20*time.Millisecond)
	e, err := l.Get(heraldtest.Context(t), "acme", d.DedupeKey)
	require.NoError(t, err)
	require.Equal(t, push.CallName, e.Provider)
	require.Len(t, e.Attempts, 1)
	require.Equal(t, "webpush:laptop accepted; apns:ipad gone (removed)", e.Attempts[0].Note)
	require.Equal(t, []string{"laptop"}, b.directory.ids("sub_1"))
}
