package delivery_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/preferencepage"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/unsubscribe"
)

// A subscriber who switches a category off on a channel after a
// notification was routed to them is not sent it: the check is made just
// before sending, against the preferences as they are then. It is recorded
// as a suppression is — the ledger says suppressed and why, a status event
// tells it, no provider is called, nothing is dead-lettered. A required
// notification of the category, and one to the same address written
// inline (no subscriber, so no preferences), still go out.
func TestAPreferenceSwitchedOffAfterRoutingHoldsTheDeliveryBack(t *testing.T) {
	t.Parallel()
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	ctx := heraldtest.Context(t)
	dir, err := recipient.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	_, err = dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u-olga", Email: "olga@zarya.example", Locale: "ru"})
	require.NoError(t, err)
	// The worker's own copy of the preferences, which the test watches too.
	cache, err := recipient.WatchPreferences(ctx, b.nats.JS)
	require.NoError(t, err)
	t.Cleanup(cache.Stop)
	b.svc = b.worker(t, b.nats.JS, func(c *config) { c.Config.Preferences = cache })

	toOlga := func(n int, edit func(d *notification.Delivery)) {
		d := purchaseOrder(n, "Ольга", "ru")
		d.Category, d.Recipient.Subscriber = "alerts", "u-olga"
		if edit != nil {
			edit(&d)
		}
		body, err := json.Marshal(d)
		require.NoError(t, err)
		b.publishRaw(t, dedupeKey(n), body)
		b.waitSettled(t)
	}
	toOlga(0, nil)
	require.Equal(t, 1, b.ses.Calls(), "with nothing switched off, it is sent")

	// Routed already (the delivery is built, as the router left it); now
	// she switches alerts off for email.
	_, err = dir.SetPreferences(ctx, "acme", "u-olga", recipient.Choices{"alerts": {event.ChannelEmail: false}}, nil, true)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !cache.Allows("acme", "u-olga", "alerts", event.ChannelEmail) },
		10*time.Second, 5*time.Millisecond, "the worker hears of the choice by watch")
	toOlga(1, nil)
	require.Equal(t, 1, b.ses.Calls(), "no provider was called")
	require.Empty(t, b.dlq(t), "a preference is not a failure")
	e := b.ledgerEntry(t, 1)
	require.Equal(t, ledger.Suppressed, e.State)
	require.Zero(t, e.Tries)
	require.Equal(t, "preference: alerts.email switched off", e.Reason)
	var states []string
	for _, st := range heraldtest.Outcomes(t, b.nats.JS) {
		if st.DedupeKey == e.DedupeKey {
			states = append(states, st.Type)
		}
	}
	require.Equal(t, []string{"notification.suppressed"}, states)

	toOlga(2, func(d *notification.Delivery) { d.Required = true })
	require.Equal(t, 2, b.ses.Calls(), "a required notification is sent whatever the preferences")
	toOlga(3, func(d *notification.Delivery) { d.Recipient.Subscriber = "" })
	require.Equal(t, 3, b.ses.Calls(), "an inline recipient has no preferences")
	require.Equal(t, ledger.Delivered, b.ledgerEntry(t, 3).State)
}

// A worker follows the preferences bucket by itself: given no
// Preferences, it still holds back what a subscriber switched off.
func TestAWorkerFollowsThePreferencesBucketByDefault(t *testing.T) {
	t.Parallel()
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	ctx := heraldtest.Context(t)
	dir, err := recipient.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	_, err = dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u-olga", Email: "olga@zarya.example"})
	require.NoError(t, err)
	// The tenant's default: alerts are not emailed unless one asks.
	_, err = dir.SetPreferences(ctx, "acme", "", recipient.Choices{"alerts": {event.ChannelEmail: false}}, nil, false)
	require.NoError(t, err)
	b.svc = b.worker(t, b.nats.JS, nil)

	d := purchaseOrder(0, "Ольга", "ru")
	d.Category, d.Recipient.Subscriber = "alerts", "u-olga"
	body, err := json.Marshal(d)
	require.NoError(t, err)
	b.publishRaw(t, dedupeKey(0), body)
	b.waitSettled(t)
	require.Zero(t, b.ses.Calls())
	e := b.ledgerEntry(t, 0)
	require.Equal(t, ledger.Suppressed, e.State)
	require.Equal(t, "preference: alerts.email switched off", e.Reason)
}

// Every email to a subscriber carries the link to their preference page
// in its footer, text and HTML, in their language; its unsubscribe link
// names them, so that unsubscribing is their preference. An email to an
// address written inline carries neither name nor page.
func TestAnEmailToASubscriberLinksTheirPreferencePage(t *testing.T) {
	t.Parallel()
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	secret := []byte(strings.Repeat("s", 32))
	prefs, err := preferencepage.NewSigner(secret, "https://herald.example.com")
	require.NoError(t, err)
	unsubscribes, err := unsubscribe.NewSigner(secret, "https://herald.example.com")
	require.NoError(t, err)
	b.svc = b.worker(t, b.nats.JS, func(c *config) { c.ChannelConfig.Preferences, c.Unsubscribe = prefs, unsubscribes })

	for n, subscriber := range []string{"u-olga", ""} {
		d := purchaseOrder(n, "Ольга", "ru")
		d.Category, d.Recipient.Subscriber = "alerts", subscriber
		body, err := json.Marshal(d)
		require.NoError(t, err)
		b.publishRaw(t, dedupeKey(n), body)
		b.waitSettled(t)
	}
	received := b.ses.Received()
	require.Len(t, received, 2)
	olga, inline := emailtest.Parse(t, received[0].Raw), emailtest.Parse(t, received[1].Raw)

	link := prefs.Link(preferencepage.Whose{Tenant: "acme", Subscriber: "u-olga"})
	require.Contains(t, olga.Text, "Выберите, какие уведомления получать: "+link+"\r\n")
	require.Contains(t, olga.HTML, `<a href="`+link+`" style="color:#5f6b7a;">Выберите, какие уведомления получать</a>`)
	o, err := unsubscribes.Verify(token(strings.Trim(olga.Header.Get("List-Unsubscribe"), "<>")))
	require.NoError(t, err)
	require.Equal(t, unsubscribe.Opt{Tenant: "acme", Category: "alerts", Address: "olga@zarya.example", Subscriber: "u-olga"}, o)

	require.NotContains(t, inline.Text, "/p/")
	require.NotContains(t, inline.HTML, "/p/")
	o, err = unsubscribes.Verify(token(strings.Trim(inline.Header.Get("List-Unsubscribe"), "<>")))
	require.NoError(t, err)
	require.Empty(t, o.Subscriber)
}

// token is a link's last segment.
func token(link string) string { return link[strings.LastIndex(link, "/")+1:] }
