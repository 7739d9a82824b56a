package erasure_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	svchistory "github.com/heraldhq/herald/services/history"
	"github.com/heraldhq/herald/shared/erasure"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/suppression"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

const (
	email = "olga@zarya.example"
	phone = "+79161234567"
)

var secret = []byte(strings.Repeat("s", erasure.MinSecret))

type testBundle struct {
	nats    *heraldtest.NATS
	dir     *recipient.Directory
	ledger  *ledger.Ledger
	supp    *suppression.Store
	history *history.Store
}

func setup(t *testing.T) (context.Context, testBundle) {
	t.Helper()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	b := testBundle{nats: n}
	var err error
	b.dir, err = recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	b.ledger, err = ledger.Open(ctx, n.JS)
	require.NoError(t, err)
	b.supp, err = suppression.Open(ctx, n.JS)
	require.NoError(t, err)
	b.history, err = history.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.history.Close()) })
	return ctx, b
}

// olga registers the subscriber: email and phone (and WhatsApp on it), an
// account's sales contact, on a topic, with preferences.
func (b testBundle) olga(t *testing.T, ctx context.Context) {
	t.Helper()
	_, err := b.dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u-olga", Name: "Olga", Email: email,
		Phone: phone, WhatsApp: phone, Locale: "ru", Timezone: "Europe/Moscow"})
	require.NoError(t, err)
	_, err = b.dir.PutAccount(ctx, recipient.Account{Tenant: "acme", ID: "zarya", Members: []recipient.Member{{Subscriber: "u-olga", Roles: []string{"sales"}}}})
	require.NoError(t, err)
	_, err = b.dir.Memberships.Put(ctx, recipient.Membership{Tenant: "acme", Topic: "warehouse-sevilla", Subscriber: "u-olga"})
	require.NoError(t, err)
	_, err = b.dir.SetPreferences(ctx, "acme", "u-olga", recipient.Choices{"alerts": {event.ChannelSMS: false}}, nil, false)
	require.NoError(t, err)
}

// send records a notification to address in state, as a delivery worker
// does: claimed, then settled (unless state is sending).
func (b testBundle) send(t *testing.T, ctx context.Context, order string, ch event.Channel, address string, state ledger.State) notification.Delivery {
	t.Helper()
	key := notification.Key{Tenant: "acme", Subject: order, Revision: 1, Document: "purchase_order", Channel: ch, Recipient: address}.String()
	d := notification.Delivery{ID: notification.ID(key), DedupeKey: key, Tenant: "acme", Channel: ch,
		Recipient: notification.Recipient{Address: address, Subscriber: "u-olga"}}
	e, err := b.ledger.Get(ctx, "acme", key)
	require.NoError(t, err)
	e.NotificationID, e.Channel, e.State, e.Order, e.Document, e.Recipient = d.ID, string(ch), ledger.Sending, order, "purchase_order", address
	e.Delivery, _ = json.Marshal(d)
	require.NoError(t, b.ledger.Put(ctx, &e))
	if state != ledger.Sending {
		e.State, e.Provider, e.ProviderMessageID = state, "ses", "m-"+order
		e.Record(ledger.Attempt{Time: time.Now(), Delivery: 1, Provider: "ses"})
		require.NoError(t, b.ledger.Put(ctx, &e))
	}
	return d
}

// pendingTo is a notification created but not claimed by any worker.
func pendingTo(ch event.Channel, address string) notification.Delivery {
	key := notification.Key{Tenant: "acme", Subject: "PO-3", Revision: 1, Document: "purchase_order", Channel: ch, Recipient: address}.String()
	return notification.Delivery{ID: notification.ID(key), DedupeKey: key, Tenant: "acme", Channel: ch, Template: "purchase_order",
		Recipient: notification.Recipient{Address: address, Subscriber: "u-olga"}}
}

// row waits until the index shows id as check wants it.
func (b testBundle) row(t *testing.T, id string, check func(c *assert.CollectT, r history.Row)) history.Row {
	t.Helper()
	var r history.Row
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		r, err = b.history.Get(heraldtest.Context(t), "acme", id)
		require.NoError(c, err)
		check(c, r)
	}, 10*time.Second, 10*time.Millisecond)
	return r
}

// The whole erasure: the subscriber, delivered to by email and failed by
// SMS, her email suppressed after a hard bounce, a member of an account
// and a topic, with preferences — once erased, no revision of any bucket
// holds her address or her records; her notifications are still listed,
// in their state, with a mask for the address, and still delivered to the
// worker that gets one again, no outcome told twice; her address is still
// suppressed, listed without it; the receipt counts it all and the audit
// stream has it. Erasing again finds nothing, and is no error.
func TestErasureLeavesHerNotificationsCountedAndHerAddressNowhere(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc, err := svchistory.New(b.nats.JS, svchistory.Config{Store: b.history, RetryDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	b.olga(t, ctx)
	po := b.send(t, ctx, "PO-1", event.ChannelEmail, "Olga@Zarya.example", ledger.Delivered)
	sms := b.send(t, ctx, "PO-1", event.ChannelSMS, phone, ledger.Failed)
	_, err = b.supp.Add(ctx, suppression.Entry{Tenant: "acme", Channel: event.ChannelEmail, Address: email, Reason: suppression.HardBounce,
		Detail: "550 5.1.1 <" + email + ">: user unknown", Source: "ses:ev-1"})
	require.NoError(t, err)
	b.row(t, po.ID, func(c *assert.CollectT, r history.Row) { require.Equal(c, history.Delivered, r.State) })
	b.row(t, sms.ID, func(c *assert.CollectT, r history.Row) { require.Equal(c, history.Failed, r.State) })
	wa := pendingTo(event.ChannelWhatsApp, phone)
	require.NoError(t, notification.PublishAccepted(ctx, b.nats.JS, notification.AcceptedOf("evt-3", []notification.Delivery{wa}, time.Now())))
	b.row(t, wa.ID, func(c *assert.CollectT, r history.Row) { require.Equal(c, history.Pending, r.State) })
	eraser, err := erasure.Open(ctx, b.nats.JS, erasure.Config{Secret: secret, History: b.history})
	require.NoError(t, err)

	receipt, err := eraser.Erase(resource.WithActor(ctx, "key:k1"), "acme", "u-olga")
	require.NoError(t, err)
	require.Equal(t, recipient.Erased{Profile: 1, Preferences: 1, TopicMemberships: 1, Accounts: 1}, receipt.Erased)
	require.Equal(t, []any{2, int64(3), 2, 0, 1, true}, []any{receipt.Addresses, receipt.HistoryRows, receipt.LedgerEntries,
		receipt.InFlight, receipt.Suppressions, receipt.Complete})

	_, _, err = b.dir.Subscribers.Get(ctx, recipient.SubscriberKey("acme", "u-olga"))
	require.ErrorIs(t, err, recipient.ErrNoSubscriber)
	for _, stream := range []string{"KV_subscribers", "KV_accounts", "KV_topic_members", "KV_preferences", "KV_deliveries", "KV_suppressions", "AUDIT"} {
		for _, m := range heraldtest.StreamMessages(t, b.nats.JS, stream) {
			for _, trace := range []string{"olga@", "Olga@", phone} {
				require.NotContains(t, string(m.Data), trace, "%s revision %d (%s)", stream, m.Sequence, m.Subject)
			}
		}
	}

	for _, d := range []notification.Delivery{po, sms} {
		again, err := b.ledger.Get(ctx, "acme", d.DedupeKey)
		require.NoError(t, err)
		require.True(t, again.State.Settled(), "the worker that gets %s again finds it settled, and sends nothing", d.ID)
		require.Equal(t, eraser.Mask(d.Recipient.Address), again.Recipient)
	}
	require.Empty(t, heraldtest.Outcomes(t, b.nats.JS), "no outcome is told again by the rewrites")
	var rewrite uint64
	for _, m := range heraldtest.StreamMessages(t, b.nats.JS, "KV_deliveries") {
		if m.Subject == "$KV.deliveries."+ledger.Key("acme", po.DedupeKey) {
			rewrite = m.Sequence
		}
	}
	r := b.row(t, po.ID, func(c *assert.CollectT, r history.Row) {
		require.Equal(c, rewrite, r.Revision, "the index took the rewrite")
	})
	require.Equal(t, history.Delivered, r.State, "not moved back")
	require.Equal(t, eraser.Mask(email), r.Recipient)
	pending, err := b.history.Get(ctx, "acme", wa.ID)
	require.NoError(t, err)
	require.Equal(t, eraser.Mask(phone), pending.Recipient, "a row the ledger has no entry for yet")
	page, err := b.history.List(ctx, history.Query{Tenant: "acme", Recipient: email})
	require.NoError(t, err)
	require.Empty(t, page.Rows)

	blocked, err := b.supp.Blocks(ctx, "acme", event.ChannelEmail, email, "")
	require.NoError(t, err, "her address is still suppressed")
	require.Equal(t, eraser.Hash(email), blocked.AddressHash, "an operator asking with the address finds its hash")
	list, err := b.supp.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Empty(t, list[0].Address)

	audit := heraldtest.StreamMessages(t, b.nats.JS, "AUDIT")
	require.Len(t, audit, 1)
	require.Equal(t, erasure.AuditSubject, audit[0].Subject)
	var entry erasure.AuditEntry
	require.NoError(t, json.Unmarshal(audit[0].Data, &entry))
	require.Equal(t, "key:k1", entry.Who)
	require.Equal(t, receipt.Erased, entry.Receipt.Erased)

	second, err := eraser.Erase(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Equal(t, erasure.Receipt{Tenant: "acme", Subscriber: "u-olga", Complete: true, Time: second.Time}, second, "nothing left")
	unknown, err := eraser.Erase(ctx, "acme", "u-nobody")
	require.NoError(t, err)
	require.Equal(t, erasure.Receipt{Tenant: "acme", Subscriber: "u-nobody", Complete: true, Time: unknown.Time}, unknown,
		"one never known is answered as one erased before")
}

// A notification still being sent is not rewritten under its worker: the
// receipt counts it, the profile is gone but its revisions kept, and the
// erasure run again once it settled completes — here without an index,
// finding her notifications in the ledger itself.
func TestAnErasureCutShortByANotificationInFlightCompletesWhenRunAgain(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.olga(t, ctx)
	d := b.send(t, ctx, "PO-2", event.ChannelEmail, email, ledger.Sending)
	eraser, err := erasure.Open(ctx, b.nats.JS, erasure.Config{Secret: secret})
	require.NoError(t, err)

	first, err := eraser.Erase(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Equal(t, 1, first.InFlight)
	require.False(t, first.Complete)
	require.Equal(t, 1, first.Profile)
	_, _, err = b.dir.Subscribers.Get(ctx, recipient.SubscriberKey("acme", "u-olga"))
	require.ErrorIs(t, err, recipient.ErrNoSubscriber, "gone at once")

	e, err := b.ledger.Get(ctx, "acme", d.DedupeKey)
	require.NoError(t, err)
	e.State = ledger.Delivered
	require.NoError(t, b.ledger.Put(ctx, &e), "the worker's own write stands")
	second, err := eraser.Erase(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Equal(t, []any{2, 1, 0, true}, []any{second.Addresses, second.LedgerEntries, second.InFlight, second.Complete})
	for _, stream := range []string{"KV_subscribers", "KV_deliveries"} {
		for _, m := range heraldtest.StreamMessages(t, b.nats.JS, stream) {
			require.NotContains(t, string(m.Data), "olga@", "%s revision %d", stream, m.Sequence)
		}
	}
}

// Without a secret to key the hashes with, there is no eraser.
func TestAnEraserNeedsASecret(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	_, err := erasure.Open(ctx, n.JS, erasure.Config{Secret: secret[:erasure.MinSecret-1]})
	require.ErrorIs(t, err, erasure.ErrNoSecret)
}
