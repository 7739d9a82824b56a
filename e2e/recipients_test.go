package e2e

import (
	"cmp"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
)

const (
	olgaEmail = "olga@zarya.example"
	olgaPhone = "+79161234567" // her phone and her WhatsApp
)

// recipientsWorld is a pipeline that emails through a SendGrid fake, whose
// signed Event Webhook reports bounces, and texts through Twilio.
type recipientsWorld struct {
	*pipeline
	sg      *sendgridtest.Server
	texting texting
	bounces *ecdsa.PrivateKey // signs SendGrid's Event Webhook
	key     string            // acme's, send and read
}

func startRecipientsWorld(t *testing.T) *recipientsWorld {
	t.Helper()
	w := &recipientsWorld{sg: sendgridtest.New(t, "SG.e2e-secret"), texting: fakeTexting(t)}
	var err error
	w.bounces, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&w.bounces.PublicKey)
	require.NoError(t, err)
	w.pipeline = startPipeline(t, w.texting.configure, func(c *app.Config) {
		c.Email.From = "Orders <orders@acme.example>"
		c.Email.Providers = []app.ProviderConfig{{Type: "sendgrid", Endpoint: w.sg.URL(), APIKeyEnv: "SG_KEY"}}
		texting := c.Getenv
		c.Getenv = func(k string) string { return cmp.Or(map[string]string{"SG_KEY": "SG.e2e-secret"}[k], texting(k)) }
		c.Inbound.SendGrid.PublicKey = base64.StdEncoding.EncodeToString(der)
	})
	w.key, _ = w.createKey(t, openKeys(t, w.pipeline), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send, apikey.Read}})
	return w
}

// api calls the API with acme's key and requires the status given.
func (w *recipientsWorld) api(t *testing.T, method, path string, status int, body string) []byte {
	t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	a := w.call(t, method, path, w.key, b, http.Header{"Content-Type": {"application/json"}})
	require.Equal(t, status, a.status, "%s %s: %s", method, path, a.body)
	return a.body
}

// post publishes an event over HTTP, as a publisher outside does.
func (w *recipientsWorld) post(t *testing.T, id string, body []byte) {
	t.Helper()
	a := w.postEvent(t, w.key, id, body)
	require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
}

// bounce reports, as SendGrid's signed Event Webhook does, that the
// message sent to address bounced for good.
func (w *recipientsWorld) bounce(t *testing.T, address string, sent sendgridtest.Received) {
	t.Helper()
	events, err := json.Marshal([]map[string]any{{
		"email": address, "timestamp": time.Now().Unix(), "event": "bounce", "type": "bounce",
		"status": "5.1.1", "reason": "550 5.1.1 <" + address + ">: Recipient address rejected: User unknown", "sg_event_id": "Ym91bmNlZA",
		"sg_message_id":          sent.MessageID + ".filterdrecv-5645d9c87f-2mxvh-1-5F5FC92A-4.0",
		"herald_notification_id": sent.Headers["X-Herald-Notification-Id"],
	}})
	require.NoError(t, err)
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	signature, err := sendgridtest.EventSignature(w.bounces, stamp, events)
	require.NoError(t, err)
	a := w.call(t, http.MethodPost, "/v1/inbound/sendgrid", "", events, http.Header{
		"X-Twilio-Email-Event-Webhook-Signature": {signature}, "X-Twilio-Email-Event-Webhook-Timestamp": {stamp}})
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
}

// row is a notification as GET /v1/notifications lists it.
type row struct{ ID, Order, Document, Channel, Recipient, State, Reason string }

// listed is GET /v1/notifications with a query; c collects what fails.
func (w *recipientsWorld) listed(t *testing.T, c require.TestingT, query string) []row {
	t.Helper()
	a := w.call(t, http.MethodGet, "/v1/notifications?"+query, w.key, nil, nil)
	require.Equal(c, http.StatusOK, a.status, "%s", a.body)
	var page struct{ Notifications []row }
	require.NoError(c, json.Unmarshal(a.body, &page))
	return page.Notifications
}

// The story, from outside: Olga is registered over the API as a
// sales contact of supplier Zarya; a purchase order naming only the
// account reaches her in Russian with its PDF; on the page her email
// links she switches alerts by SMS off, and a stock alert then reaches
// her by WhatsApp only; her address bounces for good, she is erased, and
// what is left of her — history, suppressions — names her address no
// more, while the address stays suppressed.
func TestRecipientsFromRegistrationToErasure(t *testing.T) {
	t.Parallel()
	browserPath := chromium(t)
	w := startRecipientsWorld(t)

	w.api(t, http.MethodPut, "/v1/subscribers/u-olga", http.StatusCreated, `{"name":"Ольга Петрова","email":"`+olgaEmail+
		`","phone":"`+olgaPhone+`","whatsapp":"`+olgaPhone+`","locale":"ru","timezone":"Europe/Moscow"}`)
	w.api(t, http.MethodPut, "/v1/accounts/zarya", http.StatusCreated,
		`{"name":"Zarya LLC","members":[{"subscriber":"u-olga","roles":["sales"]}]}`)

	order := purchaseOrderToZarya(t)
	w.post(t, "rcpt-po-0043", order)
	w.settle(t)
	po := requirePurchaseOrderInRussian(t, w.sg.Received())

	page := preferenceLink(t, po)
	switchAlertsBySMSOff(t, browserPath, page)
	w.post(t, "rcpt-alert", sample(t, "inventory.low_stock.json", func(m map[string]any) {
		m["id"] = "evt-rcpt-alert"
		m["data"].(map[string]any)["recipients"] = []map[string]any{{"role": "warehouse", "subscriber": "u-olga"}}
	}))
	w.settle(t)
	requireAlertByWhatsAppOnly(t, w)

	w.bounce(t, olgaEmail, w.sg.Received()[0])
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		body := string(w.api(t, http.MethodGet, "/v1/suppressions", http.StatusOK, ""))
		require.Contains(c, body, `"address":"`+olgaEmail+`"`)
		require.Contains(c, body, `"reason":"hard_bounce"`)
	}, 20*time.Second, 50*time.Millisecond, "the bounce suppresses her address")
	eraseOlga(t, w)
	resp, err := heraldtest.HTTPClient(t).Get(page)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "her page is gone with her")
	requireNothingOfOlgaInTheClear(t, w)

	// Named by her id again, she is nobody: nothing is sent, and the
	// history says why.
	w.post(t, "rcpt-alert-after", sample(t, "inventory.low_stock.json", func(m map[string]any) {
		m["id"] = "evt-rcpt-alert-after"
		m["data"].(map[string]any)["recipients"] = []map[string]any{{"role": "warehouse", "subscriber": "u-olga"}}
	}))
	w.settle(t)
	require.Len(t, w.texting.twilio.Received(), 1, "nothing more was texted")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var reasons []string
		for _, n := range w.listed(t, c, "state=skipped") {
			reasons = append(reasons, n.Reason)
		}
		require.Contains(c, reasons, `skipped: no recipient: subscriber "u-olga"`)
	}, 20*time.Second, 50*time.Millisecond, "the alert to nobody is recorded")

	// Her address, written inline in a new order, is still not mailed.
	w.post(t, "rcpt-po-0044", sample(t, "order.created.json", func(m map[string]any) {
		m["id"] = "evt-rcpt-po-0044"
		m["data"].(map[string]any)["order"].(map[string]any)["id"] = "PO-2026-0044"
		m["data"].(map[string]any)["recipients"] = []map[string]any{
			{"name": "Ольга Петрова", "role": "supplier", "email": olgaEmail, "channels": []string{"email"}, "locale": "ru"}}
	}))
	w.settle(t)
	require.Len(t, w.sg.Received(), 1, "nothing more was mailed")
	next := w.ledgerEntry(t, "acme:PO-2026-0044:1:purchase_order:email:"+olgaEmail)
	require.Equal(t, ledger.Suppressed, next.State)
	require.Contains(t, next.Reason, "hard bounce")
	require.Zero(t, next.Tries, "no try spent")
}

// purchaseOrderToZarya is an order whose supplier party names only the
// account, and which lists no recipient.
func purchaseOrderToZarya(t *testing.T) []byte {
	t.Helper()
	return sample(t, "order.created.account.json", func(m map[string]any) {
		data := m["data"].(map[string]any)
		delete(data, "recipients")
		require.Equal(t, "zarya", data["order"].(map[string]any)["supplier"].(map[string]any)["account"])
	})
}

// requirePurchaseOrderInRussian finds Olga's one email: the order, in her
// language, with its PDF.
func requirePurchaseOrderInRussian(t *testing.T, received []sendgridtest.Received) sendgridtest.Received {
	t.Helper()
	require.Len(t, received, 1, "one email: Olga's, as Zarya's sales contact")
	po := received[0]
	require.Equal(t, olgaEmail, po.To)
	require.Equal(t, "Заказ на закупку PO-2026-0043 от Frutas del Sur S.L.", po.Subject)
	require.Contains(t, po.Text, "Здравствуйте, Ольга Петрова!")
	require.Contains(t, po.Text, "Документ приложен в формате PDF.")
	require.Len(t, po.Attachments, 1)
	pdf := po.Attachments["PO-2026-0043_purchase_order_r1.pdf"]
	require.NotEmpty(t, pdf, "the purchase order, attached under its name")
	text := heraldtest.PDFText(t, pdf)
	require.Contains(t, text, "PO-2026-0043")
	require.Contains(t, text, "Кефир 0,5 л")
	require.Contains(t, text, "183,48")
	return po
}

// preferenceLink is the link to her preference page in the email's
// footer.
func preferenceLink(t *testing.T, po sendgridtest.Received) string {
	t.Helper()
	link := regexp.MustCompile(`Выберите, какие уведомления получать: (http://\S+/p/\S+)`).FindStringSubmatch(po.Text)
	require.NotNil(t, link, "her footer links her page: %s", po.Text)
	return link[1]
}

// switchAlertsBySMSOff opens her preference page in Chromium and saves
// alerts by SMS unticked.
func switchAlertsBySMSOff(t *testing.T, browserPath, link string) {
	t.Helper()
	b := openBrowser(t, browserPath, "")
	b.do(chromedp.Navigate(link))
	require.Equal(t, "Настройки уведомлений", b.text("h1"))
	b.do(chromedp.Click(chromedp.CSS(`input[type="checkbox"][name="alerts.sms"]`), chromedp.NodeVisible))
	b.follow(`button[type="submit"]`)
	require.Equal(t, "Настройки сохранены.", b.text("p.saved"))
	b.requireNoErrors()
}

// requireAlertByWhatsAppOnly: the alert went by WhatsApp, in Russian, and
// the SMS is recorded as skipped for her preference.
func requireAlertByWhatsAppOnly(t *testing.T, w *recipientsWorld) {
	t.Helper()
	require.Equal(t, map[string]int{"whatsapp " + olgaPhone: 1}, w.texting.sent(), "WhatsApp only, no SMS")
	wa := w.texting.twilio.Received()[0].Normalized()
	require.Contains(t, wa.Body, "Низкий остаток: MILK-1L")
	require.Contains(t, wa.Body, "склад SEV-01")
	require.Contains(t, wa.Body, "Настройки: http://", "her page's link on its last line")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		skipped := w.listed(t, c, "state=skipped")
		require.Len(c, skipped, 1)
		require.Equal(c, "sms", skipped[0].Channel)
		require.Equal(c, olgaPhone, skipped[0].Recipient)
		require.Contains(c, skipped[0].Reason, "preference alerts.sms")
	}, 20*time.Second, 50*time.Millisecond, "the SMS held back is recorded, with why")
}

// eraseOlga erases her once her three notifications are indexed, and
// checks the receipt.
func eraseOlga(t *testing.T, w *recipientsWorld) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var states []string
		for _, n := range w.listed(t, c, "") {
			states = append(states, n.Channel+" "+n.State)
		}
		require.ElementsMatch(c, []string{"email delivered", "whatsapp delivered", "sms skipped"}, states)
	}, 20*time.Second, 50*time.Millisecond, "her notifications are indexed")
	var receipt struct {
		Profile, Preferences, Accounts, Addresses int
		Suppressions                              int `json:"suppressions_concealed"`
		Complete                                  bool
	}
	require.NoError(t, json.Unmarshal(w.api(t, http.MethodDelete, "/v1/subscribers/u-olga?erase=true", http.StatusOK, ""), &receipt))
	require.Equal(t, 1, receipt.Profile)
	require.Equal(t, 1, receipt.Preferences, "her choice made on the page")
	require.Equal(t, 1, receipt.Accounts, "zarya, rewritten without her")
	require.Equal(t, 2, receipt.Addresses, "her email, and the number she has for SMS and WhatsApp")
	require.Equal(t, 1, receipt.Suppressions)
	require.True(t, receipt.Complete, "nothing was in flight")
}

// requireNothingOfOlgaInTheClear: she is gone, her notifications stay
// with her address masked, and her suppression no longer says it.
func requireNothingOfOlgaInTheClear(t *testing.T, w *recipientsWorld) {
	t.Helper()
	problem := requireProblem(t, w.call(t, http.MethodGet, "/v1/subscribers/u-olga", w.key, nil, nil), http.StatusNotFound, w.key)
	require.NotContains(t, problem.Detail, olgaEmail)
	po := w.listed(t, t, "order=PO-2026-0043")
	require.Len(t, po, 1, "the purchase order's notification stays")
	require.Equal(t, "delivered", po[0].State)
	require.Regexp(t, `^erased:[0-9a-f]{16}$`, po[0].Recipient)
	detail := string(w.api(t, http.MethodGet, "/v1/notifications/"+po[0].ID, http.StatusOK, ""))
	require.Contains(t, detail, "Recipient address rejected", "the bounce stays on its timeline")
	require.NotContains(t, detail, olgaEmail, "the bounce quoted her address")
	all := string(w.api(t, http.MethodGet, "/v1/notifications", http.StatusOK, ""))
	require.Len(t, w.listed(t, t, ""), 3, "every notification of hers is still listed")
	require.NotContains(t, all, olgaEmail)
	require.NotContains(t, all, olgaPhone)

	suppressions := w.api(t, http.MethodGet, "/v1/suppressions", http.StatusOK, "")
	require.NotContains(t, string(suppressions), olgaEmail)
	var listed struct {
		Suppressions []struct {
			Channel     string
			Address     string
			AddressHash string `json:"address_hash"`
			Reason      string
		}
	}
	require.NoError(t, json.Unmarshal(suppressions, &listed))
	require.Len(t, listed.Suppressions, 1)
	require.Empty(t, listed.Suppressions[0].Address)
	require.NotEmpty(t, listed.Suppressions[0].AddressHash)
	require.Equal(t, "hard_bounce", listed.Suppressions[0].Reason)
	require.Equal(t, "email", listed.Suppressions[0].Channel, "a bounce suppresses the address for email")
	asked := string(w.api(t, http.MethodGet, "/v1/suppressions/"+olgaEmail+"?channel=email", http.StatusOK, ""))
	require.Contains(t, asked, listed.Suppressions[0].AddressHash, "asked about, her address is still found")
	require.NotContains(t, asked, olgaEmail)
}
