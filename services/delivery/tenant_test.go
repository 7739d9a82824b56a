package delivery_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/email/maildir"
	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/services/delivery/sms/textdir"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/tenant"
)

// A message on notify.> is trusted to say whose it is only as far as it
// stays inside one tenant: a hand-made delivery naming another tenant's
// document, or published on another tenant's subject, is dead-lettered and
// nothing is sent — whether the document would be attached or linked.
func TestDeliveryOutsideItsTenantIsRefused(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	store, err := documents.Open(ctx, n.JS)
	require.NoError(t, err)
	acmePDF, err := store.Put(ctx, documents.ObjectName("acme", "PO-1", notification.PurchaseOrder, 1), notification.PurchaseOrder, []byte("%PDF-1.7 acme's"))
	require.NoError(t, err)
	signer, err := documents.NewSigner([]byte(strings.Repeat("k", 32)), "https://herald.test", time.Hour)
	require.NoError(t, err)

	mailDir := t.TempDir()
	sink, err := maildir.New(mailDir)
	require.NoError(t, err)
	svc, err := newEmail(t, n.JS, config{ChannelConfig: email.ChannelConfig{From: "Orders <orders@acme.example>", Providers: []email.Named{{Name: "maildir", Provider: sink}}, Links: signer, AttachMaxBytes: 1024}, Config: delivery.Config{Locker: heraldtest.Locker(t), Concurrency: 1, RetryDelay: 50 * time.Millisecond}})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	linked := acmePDF
	linked.Size = 1 << 20 // claims to be too large to attach: the link path
	forged := []struct {
		subject, tenant string
		doc             notification.Document
		reason          string
	}{
		{"notify.email.normal.evil", "evil", acmePDF, `forged delivery: document acme/PO-1/purchase_order-r1.pdf is not tenant "evil"'s`},
		{"notify.email.normal.evil", "evil", linked, `forged delivery: document acme/PO-1/purchase_order-r1.pdf is not tenant "evil"'s`},
		{"notify.email.normal.evil", "acme", acmePDF, `forged delivery: tenant "acme" published on notify.email.normal.evil`},
	}
	for i, f := range forged {
		publishDelivery(t, n.JS, f.subject, f.tenant, "thief@evil.example", f.doc, i)
	}
	// The genuine one, last: once it is mailed, the worker has been past
	// every forged one.
	publishDelivery(t, n.JS, "notify.email.normal.acme", "acme", "olga@zarya.example", acmePDF, len(forged))

	mails := func() []string {
		files, err := filepath.Glob(filepath.Join(mailDir, "*.eml"))
		require.NoError(t, err)
		return files
	}
	require.Eventually(t, func() bool {
		return len(mails()) == 1 && len(heraldtest.StreamMessages(t, n.JS, "DLQ")) == len(forged)
	}, 60*time.Second, 20*time.Millisecond)
	var reasons []string
	for _, e := range heraldtest.StreamMessages(t, n.JS, "DLQ") {
		reasons = append(reasons, e.Header.Get(deadletter.HeaderReason))
	}
	for _, f := range forged {
		require.Contains(t, reasons, f.reason)
	}
	mail, err := os.ReadFile(mails()[0])
	require.NoError(t, err)
	require.Contains(t, string(mail), "To: <olga@zarya.example>", "only the genuine delivery was sent")
	require.NotContains(t, string(mail), "evil.example")
}

// Each channel's worker takes only its own channel's deliveries: an SMS
// delivery published on an email subject, or an email delivery on an SMS
// subject, is dead-lettered with the reason before anything of it is
// leased, recorded or sent — whichever worker it reaches.
func TestADeliveryOnAnotherChannelsSubjectIsRefused(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	mailDir := t.TempDir()
	mailSink, err := maildir.New(mailDir)
	require.NoError(t, err)
	mail, err := newEmail(t, n.JS, config{ChannelConfig: email.ChannelConfig{From: "Orders <orders@acme.example>", Providers: []email.Named{{Name: "maildir", Provider: mailSink}}},
		Config: delivery.Config{Locker: heraldtest.Locker(t), Concurrency: 1, RetryDelay: 50 * time.Millisecond}})
	require.NoError(t, err)
	textSink, err := textdir.New(t.TempDir())
	require.NoError(t, err)
	ch, err := sms.NewChannel(sms.ChannelConfig{Channel: event.ChannelSMS, Providers: []sms.Named{{Name: textdir.Name, Provider: textSink}}})
	require.NoError(t, err)
	text, err := delivery.New(n.JS, delivery.Config{Channel: ch, Locker: heraldtest.Locker(t), Concurrency: 1, RetryDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	for _, svc := range []*delivery.Service{mail, text} {
		require.NoError(t, svc.Start(ctx))
		t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	}

	noDocument := notification.Document{Type: notification.PurchaseOrder}
	publishDelivery(t, n.JS, "notify.sms.normal.acme", "acme", "olga@zarya.example", noDocument, 0)
	publishTextOn(t, n.JS, "notify.email.normal.acme", "acme", "+34600111220")
	// The genuine ones, last on each subject.
	publishDelivery(t, n.JS, "notify.email.normal.acme", "acme", "ivan@zarya.example", noDocument, 1)
	publishText(t, n.JS, "acme", "+34600111221")

	require.Eventually(t, func() bool {
		info, err := n.JS.Stream(ctx, "NOTIFY")
		require.NoError(t, err)
		return info.CachedInfo().State.Msgs == 0
	}, 60*time.Second, 20*time.Millisecond, "every delivery acknowledged or dead-lettered")
	var reasons []string
	for _, e := range heraldtest.StreamMessages(t, n.JS, "DLQ") {
		reasons = append(reasons, e.Header.Get(deadletter.HeaderReason))
	}
	require.ElementsMatch(t, []string{
		`forged delivery: a "email" delivery published on notify.sms.normal.acme`,
		`forged delivery: a "sms" delivery published on notify.email.normal.acme`,
	}, reasons)

	mails, err := filepath.Glob(filepath.Join(mailDir, "*.eml"))
	require.NoError(t, err)
	require.Len(t, mails, 1)
	sent, err := os.ReadFile(mails[0])
	require.NoError(t, err)
	require.Contains(t, string(sent), "To: <ivan@zarya.example>")
	texts, err := textdir.Read(textSink.Dir())
	require.NoError(t, err)
	require.Len(t, texts, 1)
	require.Equal(t, "+34600111221", texts[0].To)

	entries, err := ledger.Open(ctx, n.JS)
	require.NoError(t, err)
	for _, key := range []string{emailKey("acme", "olga@zarya.example", 0), textKey("acme", "+34600111220")} {
		e, err := entries.Get(ctx, "acme", key)
		require.NoError(t, err)
		require.Equal(t, ledger.Entry{DedupeKey: key, Tenant: "acme"}, e, "nothing recorded of %s", key)
	}
}

func publishDelivery(t *testing.T, js jetstream.JetStream, subject, tenant, address string, doc notification.Document, n int) {
	t.Helper()
	key := emailKey(tenant, address, n)
	d := notification.Delivery{
		ID: notification.ID(key), DedupeKey: key, Tenant: tenant, Channel: event.ChannelEmail, Priority: notification.PriorityNormal,
		Recipient: notification.Recipient{Address: address}, Template: "purchase_order", Locale: "en", Document: &doc,
		Order: &notification.OrderSummary{ID: "PO-1", Revision: 1, Currency: "EUR", Totals: event.Totals{Gross: "1.00"}},
	}
	body, err := json.Marshal(d)
	require.NoError(t, err)
	msg := nats.NewMsg(subject)
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, key)
	_, err = js.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
}

// A suspended tenant's notifications are dead-lettered with the registry's
// reason before anything is leased or recorded, so they can be redriven
// once it is active again; an active tenant's are sent. Registration is the
// router's check: a tenant the registry does not know is served.
func TestASuspendedTenantsNotificationsAreDeadLettered(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	reg, err := tenant.Open(ctx, n.JS, tenant.BuiltinPlans())
	require.NoError(t, err)
	for _, id := range []string{"acme", "globex"} {
		_, err = reg.Create(ctx, tenant.Tenant{ID: id, Plan: "startup"})
		require.NoError(t, err)
	}
	cache, err := tenant.Watch(ctx, n.JS)
	require.NoError(t, err)
	t.Cleanup(cache.Stop)

	mailDir := t.TempDir()
	sink, err := maildir.New(mailDir)
	require.NoError(t, err)
	svc, err := newEmail(t, n.JS, config{ChannelConfig: email.ChannelConfig{From: "Orders <orders@acme.example>", Providers: []email.Named{{Name: "maildir", Provider: sink}}}, Config: delivery.Config{Locker: heraldtest.Locker(t), Concurrency: 1, Registry: cache}})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	_, err = reg.Update(ctx, "globex", func(x *tenant.Tenant) error {
		x.Status = tenant.Suspended
		return nil
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return cache.Admit("globex", false) != nil }, 10*time.Second, 10*time.Millisecond)

	noDocument := notification.Document{Type: notification.PurchaseOrder}
	publishDelivery(t, n.JS, "notify.email.normal.globex", "globex", "hans@globex.example", noDocument, 0)
	publishDelivery(t, n.JS, "notify.email.normal.initech", "initech", "peter@initech.example", noDocument, 1)
	publishDelivery(t, n.JS, "notify.email.normal.acme", "acme", "olga@zarya.example", noDocument, 2)

	mailed := func() string {
		files, err := filepath.Glob(filepath.Join(mailDir, "*.eml"))
		require.NoError(t, err)
		var all strings.Builder
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			all.Write(b)
		}
		return all.String()
	}
	require.Eventually(t, func() bool {
		return strings.Count(mailed(), "\nTo: ") == 2 && len(heraldtest.StreamMessages(t, n.JS, "DLQ")) == 1
	}, 60*time.Second, 20*time.Millisecond)
	require.Contains(t, mailed(), "To: <olga@zarya.example>")
	require.Contains(t, mailed(), "To: <peter@initech.example>")
	require.NotContains(t, mailed(), "globex.example")
	entry := heraldtest.StreamMessages(t, n.JS, "DLQ")[0]
	require.Equal(t, "notify.email.normal.globex", entry.Header.Get(deadletter.HeaderSubject))
	require.Equal(t, `tenant "globex" is suspended`, entry.Header.Get(deadletter.HeaderReason))
	for _, m := range heraldtest.StreamMessages(t, n.JS, "KV_deliveries") {
		require.NotContains(t, m.Subject, ".globex.", "nothing recorded for globex")
	}
}

// emailKey is the dedupe key of publishDelivery's n-th delivery.
func emailKey(tenant, address string, n int) string {
	return notification.Key{Tenant: tenant, Subject: "PO-1", Revision: 1, Document: notification.PurchaseOrder,
		Channel: event.ChannelEmail, Recipient: address}.String() + ":" + string(rune('a'+n))
}
