package inbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/inbox"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	feeds "github.com/heraldhq/herald/shared/inbox"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
)

// bundle is a channel on its own store, on NATS with Herald's streams.
type bundle struct {
	n     *heraldtest.NATS
	store *feeds.Store
	c     *inbox.Channel
}

func setup(t *testing.T, cfg inbox.ChannelConfig) bundle {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	c, err := inbox.NewChannel(cfg)
	require.NoError(t, err)
	require.NoError(t, c.Open(heraldtest.Context(t), n.JS))
	store, err := feeds.Open(heraldtest.Context(t), n.JS)
	require.NoError(t, err)
	return bundle{n: n, store: store, c: c}
}

func shipped() notification.Delivery {
	return notification.Delivery{
		ID: "ntf_1", DedupeKey: "acme:PO-2026-0042:1:delivery_note:inbox:sub_1", Tenant: "acme",
		Channel: event.ChannelInbox, Priority: notification.PriorityNormal, Template: "delivery_note", Locale: "es",
		Category:  "documents",
		Recipient: notification.Recipient{Address: "sub_1", Subscriber: "sub_1"},
		Document:  &notification.Document{Type: "delivery_note", Object: "acme/dn-42.pdf", Size: 1024},
		Run:       &notification.RunRef{Key: "acme.UE8tMQ.run_1", Step: 0},
		Order: &notification.OrderSummary{ID: "PO-2026-0042", Kind: event.KindPurchase, Revision: 1, Currency: "EUR",
			Buyer: "Frutas del Sur S.L.", Supplier: "Granja La Aurora S.L.", Totals: event.Totals{Gross: "183.48"}},
	}
}

// try prepares d and makes its one call, as the protocol does.
func try(t *testing.T, c *inbox.Channel, d notification.Delivery) (provider.Receipt, error) {
	t.Helper()
	tr, err := c.Prepare(context.Background(), d)
	require.NoError(t, err)
	require.Len(t, tr.Calls, 1, "one write")
	require.Equal(t, inbox.CallName, tr.Calls[0].Provider)
	return tr.Calls[0].Send(context.Background())
}

func (b bundle) feed(t *testing.T, sub string) []feeds.Item {
	t.Helper()
	page, err := b.store.List(heraldtest.Context(t), "acme", sub, feeds.Query{})
	require.NoError(t, err)
	return page.Items
}

func (b bundle) counts(t *testing.T, sub string) feeds.Counts {
	t.Helper()
	c, err := b.store.Counts(heraldtest.Context(t), "acme", sub)
	require.NoError(t, err)
	return c
}

// The item says what the push says, in the recipient's language, and
// keeps what the feed shows and the run follows.
func TestANotificationIsAnItemInItsSubscribersFeed(t *testing.T) {
	t.Parallel()
	b := setup(t, inbox.ChannelConfig{})
	d := shipped()
	d.ActionURL = "https://app.example/orders/PO-2026-0042"
	receipt, err := try(t, b.c, d)
	require.NoError(t, err)
	require.Equal(t, provider.Receipt{Provider: "inbox", MessageID: "ntf_1"}, receipt)

	items := b.feed(t, "sub_1")
	require.Len(t, items, 1)
	it := items[0]
	require.Equal(t, "ntf_1", it.ID)
	require.Equal(t, "ntf_1", it.Notification)
	require.True(t, strings.HasPrefix(it.Title, "Pedido PO-2026-0042"), "Spanish: %q", it.Title)
	require.NotEmpty(t, it.Body)
	require.Equal(t, "documents", it.Category)
	require.Equal(t, d.Document, it.Document)
	require.Equal(t, d.Run, it.Run)
	require.Equal(t, d.ActionURL, it.ActionURL)
	require.Equal(t, feeds.Counts{Unseen: 1, Unread: 1, Total: 1}, b.counts(t, "sub_1"))
	require.Empty(t, b.feed(t, "sub_2"), "nobody else's feed")
}

// A try made again (the protocol retrying an outcome it did not learn) is
// the same item, left as the subscriber left it.
func TestATryMadeAgainIsTheSameItem(t *testing.T) {
	t.Parallel()
	b := setup(t, inbox.ChannelConfig{})
	_, err := try(t, b.c, shipped())
	require.NoError(t, err)
	_, err = b.store.Mark(heraldtest.Context(t), "acme", "sub_1", "ntf_1", feeds.MarkRead)
	require.NoError(t, err)
	receipt, err := try(t, b.c, shipped())
	require.NoError(t, err)
	require.Equal(t, "ntf_1", receipt.MessageID)
	require.Equal(t, feeds.Counts{Total: 1}, b.counts(t, "sub_1"))
}

// A redelivery of a notification (a new notification naming the one it
// sends again) is that notification's item again, not a second one.
func TestARedeliveryIsTheSameItem(t *testing.T) {
	t.Parallel()
	b := setup(t, inbox.ChannelConfig{})
	_, err := try(t, b.c, shipped())
	require.NoError(t, err)
	again := shipped()
	again.ID, again.RedeliveryOf = "ntf_2", "ntf_1"
	receipt, err := try(t, b.c, again)
	require.NoError(t, err)
	require.Equal(t, "ntf_1", receipt.MessageID)
	require.Len(t, b.feed(t, "sub_1"), 1)
}

// A notification with no title makes no item: nothing to show in a feed,
// and no retry gives it one.
func TestAnItemWithoutATitleFailsForGood(t *testing.T) {
	t.Parallel()
	c, err := inbox.NewChannel(inbox.ChannelConfig{})
	require.NoError(t, err)
	d := shipped()
	d.Message = &notification.Message{Text: "The delivery note is ready."}
	_, err = c.Prepare(context.Background(), d)
	require.True(t, provider.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "an inbox item needs a title")

	_, err = c.Prepare(context.Background(), shippedTo(""))
	require.True(t, provider.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "names none")
}

func shippedTo(sub string) notification.Delivery {
	d := shipped()
	d.Recipient = notification.Recipient{Address: sub, Subscriber: sub}
	return d
}

// An action URL is an absolute http(s) link of at most 2048 bytes: a
// javascript: or relative link would run or resolve in the app.
func TestTheActionURLIsALink(t *testing.T) {
	t.Parallel()
	c, err := inbox.NewChannel(inbox.ChannelConfig{})
	require.NoError(t, err)
	long := "https://app.example/" + strings.Repeat("a", inbox.MaxActionURL-len("https://app.example/"))
	for _, ok := range []string{"", "http://app.example/x", long} {
		d := shipped()
		d.ActionURL = ok
		_, err := c.Prepare(context.Background(), d)
		require.NoError(t, err, ok)
	}
	for _, bad := range []string{"javascript:alert(1)", "/orders/1", "ftp://app.example/x", "https://", long + "a", "http://a b/%zz"} {
		d := shipped()
		d.ActionURL = bad
		_, err := c.Prepare(context.Background(), d)
		require.True(t, provider.IsPermanent(err), "%q: %v", bad, err)
		require.NotContains(t, err.Error(), bad, "the link is not repeated")
	}
}

// The store failing is retried, not a refusal.
func TestAStoreFailureIsTransient(t *testing.T) {
	t.Parallel()
	b := setup(t, inbox.ChannelConfig{})
	require.NoError(t, b.n.JS.DeleteKeyValue(heraldtest.Context(t), feeds.Bucket))
	_, err := try(t, b.c, shipped())
	require.Error(t, err)
	require.False(t, provider.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "writing the inbox item")
}

// The channel's limits bound every feed it writes to.
func TestTheConfigsLimitsBoundTheFeed(t *testing.T) {
	t.Parallel()
	b := setup(t, inbox.ChannelConfig{MaxItems: 2})
	for _, id := range []string{"ntf_1", "ntf_2", "ntf_3"} {
		d := shipped()
		d.ID = id
		_, err := try(t, b.c, d)
		require.NoError(t, err)
	}
	require.Equal(t, 2, b.counts(t, "sub_1").Total)

	short := setup(t, inbox.ChannelConfig{Retention: time.Nanosecond})
	_, err := try(t, short.c, shipped())
	require.NoError(t, err)
	require.Zero(t, short.counts(t, "sub_1").Total, "older than a nanosecond when its write ends")
}

func TestTheConfigNamesItsFields(t *testing.T) {
	t.Parallel()
	_, err := inbox.NewChannel(inbox.ChannelConfig{Retention: -time.Hour, MaxItems: feeds.MaxCap + 1})
	require.EqualError(t, err, "inbox.retention: must not be negative (got -1h0m0s)\n"+
		"inbox.max_items: 4001 is not a number of items from 1 to 4000")
	_, err = inbox.NewChannel(inbox.ChannelConfig{MaxItems: -1})
	require.ErrorContains(t, err, "inbox.max_items: -1")
	c, err := inbox.NewChannel(inbox.ChannelConfig{})
	require.NoError(t, err)
	require.Equal(t, event.ChannelInbox, c.Name())
	require.Equal(t, 1, c.LongestChain())
}
