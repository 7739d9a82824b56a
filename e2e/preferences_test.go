package e2e

import (
	"os"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
)

// A subscriber's email links her preference page, in her language. In
// Chromium she unticks alerts by SMS and saves, with no JavaScript on the
// page: her preference is stored as the API would store it, the page
// shows it saved, and the required documents stay ticked and cannot be
// unticked. The page's policy refuses nothing of its own.
// HERALD_SCREENSHOTS=1 writes docs/preferences-page.png.
func TestThePreferencePageInTheBrowser(t *testing.T) {
	t.Parallel()
	browserPath := chromium(t)
	p := startPipeline(t)
	ctx := heraldtest.Context(t)
	dir, err := recipient.Open(ctx, p.js)
	require.NoError(t, err)
	_, err = dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u-olga", Name: "Ольга", Email: "olga@zarya.example",
		Phone: "+79160000001", WhatsApp: "+79160000001", Locale: "ru", Timezone: "Europe/Moscow"})
	require.NoError(t, err)

	// A stock alert to her, as the router makes one for a subscriber.
	key := notification.Key{Tenant: "acme", Subject: "evt-prefs-1", Document: "low_stock", Channel: event.ChannelEmail,
		Recipient: "olga@zarya.example"}.String()
	_, err = notification.Publish(ctx, p.js, []notification.Delivery{{ID: notification.ID(key), DedupeKey: key, Tenant: "acme",
		Channel: event.ChannelEmail, Priority: notification.PriorityCritical, Template: "low_stock", Locale: "ru", Category: "alerts",
		Recipient: notification.Recipient{Name: "Ольга", Address: "olga@zarya.example", Subscriber: "u-olga"},
		Stock:     &event.Stock{SKU: "MILK-1L", Warehouse: "SEV-01", OnHand: "12", ReorderPoint: "40", Unit: "шт"}}})
	require.NoError(t, err)
	p.settle(t)
	mail := p.mail(t)
	require.Len(t, mail, 1)
	link := regexp.MustCompile(`Выберите, какие уведомления получать: (http://\S+/p/\S+)`).FindStringSubmatch(mail[0].Text)
	require.NotNil(t, link, "her footer links the page: %s", mail[0].Text)

	b := openBrowser(t, browserPath, "")
	b.do(chromedp.Navigate(link[1]))
	require.Equal(t, "Настройки уведомлений", b.text("h1"))
	require.Equal(t, "true true", b.evaluate(`String(document.querySelector('input[aria-label="documents: SMS"]').checked) + " " + `+
		`String(document.querySelector('input[aria-label="documents: SMS"]').disabled)`), "the documents are required")
	b.do(chromedp.Click(chromedp.CSS(`input[type="checkbox"][name="alerts.sms"]`), chromedp.NodeVisible))
	b.follow(`button[type="submit"]`)
	require.Equal(t, "Настройки сохранены.", b.text("p.saved"))
	require.Equal(t, "false true", b.evaluate(`String(document.querySelector('input[type="checkbox"][name="alerts.sms"]').checked) + " " + `+
		`String(document.querySelector('input[type="checkbox"][name="alerts.whatsapp"]').checked)`))
	b.requireNoErrors()

	own, _, err := dir.Choices(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Equal(t, recipient.Choices{"alerts": {event.ChannelEmail: true, event.ChannelSMS: false, event.ChannelWhatsApp: true,
		event.ChannelInbox: true, event.ChannelPush: true}}, own)
	if os.Getenv(screenshotsEnv) != "" {
		writePNG(t, "preferences-page.png", run(b, chromedp.FullScreenshot(100)))
	}
}
