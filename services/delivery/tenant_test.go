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
	"github.com/heraldhq/herald/services/delivery/email/maildir"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
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
	svc, err := delivery.New(n.JS, delivery.Config{
		From: "Orders <orders@acme.example>", Providers: []delivery.Provider{{Name: "maildir", Provider: sink}},
		Locker: heraldtest.Locker(t), Concurrency: 1, RetryDelay: 50 * time.Millisecond,
		Links: signer, AttachMaxBytes: 1024,
	})
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

func publishDelivery(t *testing.T, js jetstream.JetStream, subject, tenant, address string, doc notification.Document, n int) {
	t.Helper()
	key := notification.Key{Tenant: tenant, Subject: "PO-1", Revision: 1, Document: notification.PurchaseOrder,
		Channel: event.ChannelEmail, Recipient: address}.String() + ":" + string(rune('a'+n))
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
