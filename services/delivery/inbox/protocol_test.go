package inbox_test

import (
	"context"
	"encoding/json"
	"github.com/heraldhq/herald/services/delivery/inbox"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/shared/heraldtest"
	feeds "github.com/heraldhq/herald/shared/inbox"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
)

// publish puts d on NOTIFY as the router does, with msgID as its
// Nats-Msg-Id.
func (b bundle) publish(t *testing.T, d notification.Delivery, msgID string) {
	t.Helper()
	body, err := json.Marshal(d)
	require.NoError(t, err)
	msg := nats.NewMsg(notification.Subject(d.Channel, d.Priority, d.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	_, err = b.n.JS.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
}

func (b bundle) delivered(t *testing.T, key string) ledger.Entry {
	t.Helper()
	l, err := ledger.Open(heraldtest.Context(t), b.n.JS)
	require.NoError(t, err)
	var e ledger.Entry
	require.Eventually(t, func() bool {
		e, err = l.Get(heraldtest.Context(t), "acme", key)
		return err == nil && e.State == ledger.Delivered
	}, 60*time.Second, 20*time.Millisecond)
	return e
}

// Through the delivery protocol: a notification on notify.inbox.* is one
// unread item in its subscriber's feed; the same notification published
// again, and a redelivery of it, add none.
func TestANotificationOnNotifyIsOneItem(t *testing.T) {
	t.Parallel()
	b := setup(t, inbox.ChannelConfig{})
	svc, err := delivery.New(b.n.JS, delivery.Config{Channel: b.c, Locker: heraldtest.Locker(t), Concurrency: 1, RetryDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, svc.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	d := shipped()
	d.Run = nil
	d.ID = notification.ID(d.DedupeKey)
	b.publish(t, d, d.DedupeKey)
	e := b.delivered(t, d.DedupeKey)
	require.Equal(t, "inbox", e.Provider)
	require.Equal(t, d.ID, e.ProviderMessageID)

	b.publish(t, d, d.DedupeKey+":again")
	again := d
	again.DedupeKey = d.DedupeKey + ":redelivery:1"
	again.ID, again.RedeliveryOf = notification.ID(again.DedupeKey), d.ID
	b.publish(t, again, again.DedupeKey)
	require.Equal(t, d.ID, b.delivered(t, again.DedupeKey).ProviderMessageID)

	items := b.feed(t, "sub_1")
	require.Len(t, items, 1)
	require.Equal(t, d.ID, items[0].ID)
	require.Equal(t, feeds.Counts{Unseen: 1, Unread: 1, Total: 1}, b.counts(t, "sub_1"))
}
