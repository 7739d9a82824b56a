package history_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	svchistory "github.com/heraldhq/herald/services/history"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/report"
	"github.com/heraldhq/herald/shared/suppression"
)

// bounce is a hard bounce of d's message, as the inbound webhooks store it.
func bounce(d notification.Delivery, eventID string) report.Report {
	return report.Report{Provider: "ses", MessageID: "ses-" + d.ID[4:12], EventID: eventID, Kind: report.Bounced,
		Hard: true, Recipient: d.Recipient.Address, Detail: "smtp; 550 5.1.1 user unknown", Time: time.Now().UTC().Truncate(time.Second)}
}

// reported waits until d's ledger entry keeps n reports.
func (b *bundle) reported(t *testing.T, d notification.Delivery, n int) ledger.Entry {
	t.Helper()
	var e ledger.Entry
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		e, err = b.ledger.ByID(heraldtest.Context(t), d.Tenant, d.ID)
		require.NoError(c, err)
		require.Len(c, e.Reports, n)
	}, 15*time.Second, 20*time.Millisecond)
	return e
}

// statusEvents are the report events told on notify.status.acme.
func statusEvents(t *testing.T, b *bundle) []notification.Status {
	t.Helper()
	var out []notification.Status
	for _, m := range heraldtest.StreamMessages(t, b.nats.JS, "STATUS") {
		var st notification.Status
		require.NoError(t, json.Unmarshal(m.Data, &st))
		if st.Report != nil {
			out = append(out, st)
		}
	}
	return out
}

// A hard bounce that arrives before its notification is indexed waits for
// it; then the entry keeps it, the tenant hears report.bounced, and the
// address is suppressed, saying which provider event did it.
func TestAHardBounceIsJoinedAndSuppressesTheAddress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	start(t, b, openStore(t))
	olga := delivery("PO-1", "olga@zarya.example")
	rep := bounce(olga, "sns-1:olga@zarya.example")
	require.NoError(t, report.Publish(ctx, b.nats.JS, []report.Report{rep}))
	b.record(t, olga, ledger.Delivered)

	e := b.reported(t, olga, 1)
	require.Equal(t, rep, e.Reports[0])
	require.Equal(t, ledger.Delivered, e.State, "accepted by the provider it stays")

	events := statusEvents(t, b)
	require.Len(t, events, 1)
	require.Equal(t, "report.bounced", events[0].Type)
	require.Equal(t, olga.ID, events[0].NotificationID)
	require.Equal(t, "bounced", events[0].State)

	store, err := suppression.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	s, err := store.Get(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "")
	require.NoError(t, err)
	require.Equal(t, suppression.HardBounce, s.Reason)
	require.Equal(t, "smtp; 550 5.1.1 user unknown", s.Detail)
	require.Contains(t, s.Source, "ses event sns-1:olga@zarya.example")
	require.Contains(t, s.Source, olga.ID)
}

// A soft bounce, an open and a complaint: all kept; only the complaint
// suppresses. A report told again — past the stream's duplicate window,
// as a provider's retry days later is — is kept once and told once.
func TestOnlyPermanentSignalsSuppressAndRepeatsAreKeptOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	start(t, b, openStore(t))
	ivan, olga := delivery("PO-2", "ivan@zarya.example"), delivery("PO-3", "olga@zarya.example")
	b.record(t, ivan, ledger.Delivered)
	b.record(t, olga, ledger.Delivered)

	soft := bounce(ivan, "e-soft")
	soft.Hard = false
	opened := bounce(ivan, "e-open")
	opened.Kind, opened.Hard = report.Opened, false
	require.NoError(t, report.Publish(ctx, b.nats.JS, []report.Report{soft, opened}))
	b.reported(t, ivan, 2)

	complaint := bounce(olga, "e-complaint")
	complaint.Kind, complaint.Hard, complaint.Detail = report.Complained, false, "abuse"
	require.NoError(t, report.Publish(ctx, b.nats.JS, []report.Report{complaint}))
	b.reported(t, olga, 1)
	// The same event again under another message id: the stream cannot
	// tell, the ledger can.
	body, err := json.Marshal(complaint)
	require.NoError(t, err)
	_, err = b.nats.JS.Publish(ctx, report.Subject("ses"), body)
	require.NoError(t, err)
	marker := bounce(olga, "e-delivered")
	marker.Kind, marker.Hard = report.Delivered, false
	require.NoError(t, report.Publish(ctx, b.nats.JS, []report.Report{marker}))
	e := b.reported(t, olga, 2)
	require.Equal(t, []string{"e-complaint", "e-delivered"}, []string{e.Reports[0].EventID, e.Reports[1].EventID})

	store, err := suppression.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	_, err = store.Get(ctx, "acme", event.ChannelEmail, "ivan@zarya.example", "")
	require.ErrorIs(t, err, suppression.ErrNotFound, "a soft bounce is only recorded")
	s, err := store.Get(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "")
	require.NoError(t, err)
	require.Equal(t, suppression.Complaint, s.Reason)

	complaints := 0
	for _, st := range statusEvents(t, b) {
		if st.Type == "report.complained" {
			complaints++
		}
	}
	require.Equal(t, 1, complaints)
}

// A report made with a tenant's own account speaks of that tenant's
// messages only: another tenant's message id joins nothing.
func TestATenantsAccountCannotReportAnothersMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	start(t, b, openStore(t))
	olga := delivery("PO-4", "olga@zarya.example") // acme's
	b.record(t, olga, ledger.Delivered)

	forged := bounce(olga, "forged")
	forged.Tenant, forged.Account = "globex", "sg"
	own := bounce(olga, "own")
	own.Tenant, own.Account, own.Kind, own.Hard = "acme", "sg", report.Delivered, false
	require.NoError(t, report.Publish(ctx, b.nats.JS, []report.Report{forged, own}))
	e := b.reported(t, olga, 1)
	require.Equal(t, "own", e.Reports[0].EventID)
	// The forged one was looked at, found no notification of globex's, and
	// waits to be asked again — joined to nothing.
	cons, err := b.nats.JS.Consumer(ctx, report.Stream, svchistory.Durable)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		info, err := cons.Info(ctx)
		require.NoError(c, err)
		require.Positive(c, info.NumRedelivered, "the forged report was asked again")
	}, 15*time.Second, 50*time.Millisecond)
	e = b.reported(t, olga, 1)
	require.Equal(t, "own", e.Reports[0].EventID)

	store, err := suppression.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	_, err = store.Get(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "")
	require.ErrorIs(t, err, suppression.ErrNotFound)
}

// A recipient who unsubscribed through the provider (SendGrid's link,
// Twilio's STOP) leaves the notification's category; one that cannot be
// left is only recorded.
func TestAnUnsubscribeReportLeavesTheCategory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	start(t, b, openStore(t))
	alert, doc := delivery("PO-5", "olga@zarya.example"), delivery("PO-6", "ivan@zarya.example")
	alert.Category = "alerts"
	doc.Category, doc.Required = "documents", true
	for _, d := range []notification.Delivery{alert, doc} {
		e, err := b.ledger.Get(ctx, d.Tenant, d.DedupeKey)
		require.NoError(t, err)
		e.NotificationID, e.Channel, e.State, e.Recipient = d.ID, string(d.Channel), ledger.Delivered, d.Recipient.Address
		e.Provider, e.ProviderMessageID, e.Unsubscribable = "sendgrid", "ses-"+d.ID[4:12], d.Unsubscribable()
		require.NoError(t, b.ledger.Put(ctx, &e))
	}
	left := bounce(alert, "u-1")
	left.Kind, left.Hard = report.Unsubscribed, false
	stayed := bounce(doc, "u-2")
	stayed.Kind, stayed.Hard = report.Unsubscribed, false
	require.NoError(t, report.Publish(ctx, b.nats.JS, []report.Report{left, stayed}))
	b.reported(t, alert, 1)
	b.reported(t, doc, 1)

	store, err := suppression.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	s, err := store.Blocks(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "alerts")
	require.NoError(t, err)
	require.Equal(t, suppression.Unsubscribed, s.Reason)
	require.Equal(t, "alerts", s.Category)
	_, err = store.Blocks(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "documents")
	require.ErrorIs(t, err, suppression.ErrNotFound, "only the category she left")
	_, err = store.Blocks(ctx, "acme", event.ChannelEmail, "ivan@zarya.example", "documents")
	require.ErrorIs(t, err, suppression.ErrNotFound, "a required notification's category is not left")
}

// textDelivery is a text message of order to number on channel.
func textDelivery(order string, channel event.Channel, number string) notification.Delivery {
	d := delivery(order, number)
	key := notification.Key{Tenant: "acme", Subject: order, Revision: 1, Document: "low_stock", Channel: channel, Recipient: number}.String()
	d.ID, d.DedupeKey, d.Channel = notification.ID(key), key, channel
	return d
}

// An SMS hard bounce suppresses the number for SMS only: the SMS carrier
// has no word on WhatsApp. A provider that says the number itself is bad
// has it suppressed on every channel. The provider's words are kept, made
// printable, rather than refused with the suppression.
func TestAnSMSBounceSuppressesTheNumberForSMSOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	start(t, b, openStore(t))
	landline, invalid := textDelivery("PO-7", event.ChannelSMS, "+34600111222"), textDelivery("PO-8", event.ChannelSMS, "+34600999888")
	b.record(t, landline, ledger.Delivered)
	b.record(t, invalid, ledger.Delivered)
	bounced := bounce(landline, "SM1:undelivered:30006")
	bounced.Provider, bounced.Detail = "twilio", "error 30006: Landline\x1b[2J"
	noNumber := bounce(invalid, "SM2:failed:21211")
	noNumber.Provider, noNumber.Detail, noNumber.EveryChannel = "twilio", "error 21211", true
	require.NoError(t, report.Publish(ctx, b.nats.JS, []report.Report{bounced, noNumber}))
	b.reported(t, landline, 1)
	b.reported(t, invalid, 1)

	store, err := suppression.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	s, err := store.Blocks(ctx, "acme", event.ChannelSMS, "+34600111222", "")
	require.NoError(t, err)
	require.Equal(t, event.ChannelSMS, s.Channel)
	require.Equal(t, `error 30006: Landline\x1b[2J`, s.Detail)
	_, err = store.Blocks(ctx, "acme", event.ChannelWhatsApp, "+34600111222", "")
	require.ErrorIs(t, err, suppression.ErrNotFound, "WhatsApp to the landline is still sent")
	for _, ch := range []event.Channel{event.ChannelSMS, event.ChannelWhatsApp} {
		s, err := store.Blocks(ctx, "acme", ch, "+34600999888", "")
		require.NoError(t, err, ch)
		require.Empty(t, s.Channel, "every channel")
	}
}
