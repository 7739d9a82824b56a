package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
	"github.com/heraldhq/herald/services/delivery/sms/twilio/twiliotest"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/tenant"
)

// A bounce SendGrid reports, signed as SendGrid signs it, suppresses the
// address: the next order to it sends nothing and says suppressed, while
// the other recipient still gets hers.
func TestABouncedAddressIsSuppressedByTheProvidersSignedReport(t *testing.T) {
	t.Parallel()
	sg := sendgridtest.New(t, "SG.e2e-secret")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	p := startPipeline(t, func(c *app.Config) {
		c.Email.From = "Orders <orders@acme.example>"
		c.Email.Providers = []app.ProviderConfig{{Type: "sendgrid", Endpoint: sg.URL(), APIKeyEnv: "SG_KEY"}}
		c.Getenv = func(k string) string { return map[string]string{"SG_KEY": "SG.e2e-secret"}[k] }
		c.Inbound.SendGrid.PublicKey = base64.StdEncoding.EncodeToString(der)
	})
	read, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Read}})

	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
	p.settle(t)
	require.Len(t, sg.Received(), 2)
	var olgaMessage string
	for _, r := range sg.Received() {
		if r.Headers["X-Herald-Notification-Id"] == notification.ID(olgaKey) {
			olgaMessage = r.MessageID
		}
	}
	require.NotEmpty(t, olgaMessage)

	// SendGrid's Event Webhook: the bounce of Olga's message, its
	// sg_message_id the X-Message-Id and a filter's suffix.
	events, err := json.Marshal([]map[string]any{{
		"email": "olga@zarya.example", "timestamp": time.Now().Unix(), "event": "bounce", "type": "bounce",
		"status": "5.1.1", "reason": "550 5.1.1 mailbox unavailable", "sg_event_id": "ZGVsaXZlcmVk",
		"sg_message_id": olgaMessage + ".filterdrecv-5645d9c87f-2mxvh-1-5F5FC92A-4.0",
		// Herald's custom argument, which SendGrid repeats in every event.
		"herald_notification_id": notification.ID(olgaKey),
	}})
	require.NoError(t, err)
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	signature, err := sendgridtest.EventSignature(key, stamp, events)
	require.NoError(t, err)
	post := func(signature string) answer {
		return p.call(t, http.MethodPost, "/v1/inbound/sendgrid", "", events, http.Header{
			"X-Twilio-Email-Event-Webhook-Signature": {signature}, "X-Twilio-Email-Event-Webhook-Timestamp": {stamp}})
	}
	forged, err := base64.StdEncoding.DecodeString(signature)
	require.NoError(t, err)
	forged[len(forged)-1] ^= 1
	require.Equal(t, http.StatusForbidden, post(base64.StdEncoding.EncodeToString(forged)).status)
	a := post(signature)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)

	// Joined to Olga's notification: its timeline shows the bounce, and
	// the address is suppressed for acme, saying why.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		a := p.call(t, http.MethodGet, "/v1/notifications/"+notification.ID(olgaKey), read, nil, nil)
		require.Equal(c, http.StatusOK, a.status)
		var n struct {
			State   string `json:"state"`
			Reports []struct {
				Kind   string `json:"kind"`
				Hard   bool   `json:"hard"`
				Detail string `json:"detail"`
			} `json:"reports"`
		}
		require.NoError(c, json.Unmarshal(a.body, &n))
		require.Equal(c, "delivered", n.State)
		require.Len(c, n.Reports, 1)
		require.Equal(c, "bounced", n.Reports[0].Kind)
		require.True(c, n.Reports[0].Hard)
	}, 20*time.Second, 50*time.Millisecond)
	a = p.call(t, http.MethodGet, "/v1/suppressions", read, nil, nil)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Contains(t, string(a.body), `"reason":"hard_bounce"`)
	require.Contains(t, string(a.body), "550 5.1.1 mailbox unavailable")
	require.Contains(t, string(a.body), "sendgrid event ZGVsaXZlcmVk")

	// The next order goes to Olga no more.
	p.publish(t, "orders.created", "evt-2026-11-30-0002", sample(t, "order.created.json", func(m map[string]any) {
		m["id"] = "evt-2026-11-30-0002"
		m["data"].(map[string]any)["order"].(map[string]any)["id"] = "PO-2026-0043"
	}))
	p.settle(t)
	require.Len(t, sg.Received(), 3, "only Compras got the second order")
	next := p.ledgerEntry(t, "acme:PO-2026-0043:1:purchase_order:email:olga@zarya.example")
	require.Equal(t, ledger.Suppressed, next.State)
	require.Contains(t, next.Reason, "hard bounce")
	require.Zero(t, next.Tries, "no try spent")
	require.Empty(t, p.streamMessages(t, "DLQ"), "a suppressed notification is no failure")

	// The tenant was told of the bounce (on its status subject), then of
	// the suppressed one (the ledger's write).
	told := map[string]string{}
	for _, m := range p.streamMessages(t, "STATUS") {
		var st notification.Status
		if json.Unmarshal(m.Data, &st) == nil && st.Type != "" {
			told[st.Type] = st.NotificationID
		}
	}
	for _, st := range heraldtest.Outcomes(t, p.js) {
		told[st.Type] = st.NotificationID
	}
	require.Equal(t, notification.ID(olgaKey), told["report.bounced"])
	require.Equal(t, next.NotificationID, told["notification.suppressed"])
}

// Twilio is asked for status callbacks at Herald's public URL; the ones it
// signs are kept with their message, and an unknown handset suppresses the
// number: the next alert texts it no more.
func TestTwilioStatusCallbacksComeBackSignedAndSuppressADeadNumber(t *testing.T) {
	t.Parallel()
	f := fakeTexting(t)
	const public = "https://herald.example.com" // behind a proxy, as Twilio calls it
	p := startPipeline(t, f.configure, func(c *app.Config) {
		c.Documents.PublicURL = public
		c.Router.Routes = []router.Route{{Event: "inventory.low_stock", Template: "low_stock", Roles: []string{"warehouse"},
			Channels: []event.Channel{event.ChannelSMS}}}
	})
	p.publish(t, "inventory.low_stock", "evt-2026-11-30-0100", sample(t, "inventory.low_stock.json", nil))
	p.settle(t)
	sent := f.twilio.Received()
	require.Len(t, sent, 1)
	require.Equal(t, public+"/v1/inbound/twilio", sent[0].StatusCallback)

	callback := func(status, code, token string) answer {
		form := url.Values{"AccountSid": {twilioSID}, "MessageSid": {sent[0].SID}, "MessageStatus": {status},
			"To": {warehouse}, "From": {"+14155550100"}, "ApiVersion": {"2010-04-01"}}
		if code != "" {
			form.Set("ErrorCode", code)
		}
		return p.call(t, http.MethodPost, "/v1/inbound/twilio", "", []byte(form.Encode()), http.Header{
			"Content-Type":       {"application/x-www-form-urlencoded"},
			"X-Twilio-Signature": {twiliotest.Signature(token, public+"/v1/inbound/twilio", form)}})
	}
	require.Equal(t, http.StatusForbidden, callback("undelivered", "30005", "not-the-token").status)
	require.Equal(t, http.StatusOK, callback("sent", "", twilioToken).status, "not news: nothing kept")
	a := callback("undelivered", "30005", twilioToken)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		e := p.ledgerEntry(t, stockKey(event.ChannelSMS))
		require.Len(c, e.Reports, 1)
		require.Equal(c, "bounced", string(e.Reports[0].Kind))
		require.True(c, e.Reports[0].Hard)
	}, 20*time.Second, 50*time.Millisecond)
	// The suppression was written before the report was kept, and the
	// delivery workers hear of it by watch within moments.
	p.publish(t, "inventory.low_stock", "evt-2026-11-30-0101", sample(t, "inventory.low_stock.json", func(m map[string]any) {
		m["id"] = "evt-2026-11-30-0101"
	}))
	p.settle(t)
	next := notification.Key{Tenant: "acme", Subject: "evt-2026-11-30-0101", Document: "low_stock", Channel: event.ChannelSMS, Recipient: warehouse}
	require.Equal(t, ledger.Suppressed, p.ledgerEntry(t, next.String()).State)
	require.Len(t, f.twilio.Received(), 1, "the dead number was texted once")
}

// An SMS hard bounce is the SMS carrier's word about SMS: the number is
// suppressed for SMS only, and the next alert still reaches it on WhatsApp.
func TestAnSMSBounceLeavesWhatsAppToTheNumber(t *testing.T) {
	t.Parallel()
	f := fakeTexting(t)
	const public = "https://herald.example.com"
	p := startPipeline(t, f.configure, func(c *app.Config) { c.Documents.PublicURL = public })
	p.publish(t, "inventory.low_stock", "evt-2026-11-30-0100", sample(t, "inventory.low_stock.json", nil))
	p.settle(t)
	require.Equal(t, map[string]int{"sms " + warehouse: 1, "whatsapp " + warehouse: 1}, f.sent())

	sms := p.ledgerEntry(t, stockKey(event.ChannelSMS))
	form := url.Values{"AccountSid": {twilioSID}, "MessageSid": {sms.ProviderMessageID}, "MessageStatus": {"undelivered"},
		"ErrorCode": {"30005"}, "To": {warehouse}, "From": {"+14155550100"}, "ApiVersion": {"2010-04-01"}}
	a := p.call(t, http.MethodPost, "/v1/inbound/twilio", "", []byte(form.Encode()), http.Header{
		"Content-Type":       {"application/x-www-form-urlencoded"},
		"X-Twilio-Signature": {twiliotest.Signature(twilioToken, public+"/v1/inbound/twilio", form)}})
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Len(c, p.ledgerEntry(t, stockKey(event.ChannelSMS)).Reports, 1)
	}, 20*time.Second, 50*time.Millisecond)

	p.publish(t, "inventory.low_stock", "evt-2026-11-30-0101", sample(t, "inventory.low_stock.json", func(m map[string]any) {
		m["id"] = "evt-2026-11-30-0101"
	}))
	p.settle(t)
	next := func(c event.Channel) ledger.Entry {
		return p.ledgerEntry(t, notification.Key{Tenant: "acme", Subject: "evt-2026-11-30-0101", Document: "low_stock",
			Channel: c, Recipient: warehouse}.String())
	}
	require.Equal(t, ledger.Suppressed, next(event.ChannelSMS).State)
	require.Equal(t, ledger.Delivered, next(event.ChannelWhatsApp).State, "%s", next(event.ChannelWhatsApp).Reason)
	require.Equal(t, map[string]int{"sms " + warehouse: 1, "whatsapp " + warehouse: 2}, f.sent())
}

// An email in a category its recipient may leave carries a one-click
// unsubscribe link (RFC 8058); posting to it, as a mail client's button
// does, holds back that category's next notifications to the recipient —
// not the other recipients', and not a required route's.
func TestOneClickUnsubscribeHoldsBackTheCategory(t *testing.T) {
	t.Parallel()
	p := startPipeline(t, func(c *app.Config) {
		c.Router.Routes = []router.Route{
			{Event: "order.created", Kind: event.KindPurchase, Document: notification.PurchaseOrder,
				Roles: []string{"supplier", "buyer"}, Channels: []event.Channel{event.ChannelEmail}, Category: "updates"},
			{Event: "order.updated", Kind: event.KindPurchase, Document: notification.PurchaseOrder,
				Roles: []string{"supplier", "buyer"}, Channels: []event.Channel{event.ChannelEmail}, Category: "updates", Required: true},
		}
	})
	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
	p.settle(t)
	olga := byRecipient(p.mail(t))["olga@zarya.example"]
	require.Len(t, olga, 1)
	require.Equal(t, "List-Unsubscribe=One-Click", olga[0].Header.Get("List-Unsubscribe-Post"))
	link := strings.Trim(olga[0].Header.Get("List-Unsubscribe"), "<>")
	require.True(t, strings.HasPrefix(link, "http://"+p.dev.App.APIAddr()+"/v1/unsubscribe/"), link)
	require.Contains(t, olga[0].Text, "Чтобы больше не получать эти письма: "+link, "her footer says so too, in Russian")
	require.Contains(t, olga[0].HTML, `<a href="`+link+`"`)

	// A link checker opening it unsubscribes no one; the one-click POST does.
	resp, err := heraldtest.HTTPClient(t).Get(link)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = heraldtest.HTTPClient(t).Post(link, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
	require.Contains(t, string(page), "You are unsubscribed")

	// The next order of the category: Compras gets it, Olga does not.
	p.publish(t, "orders.created", "evt-2026-11-30-0002", sample(t, "order.created.json", func(m map[string]any) {
		m["id"] = "evt-2026-11-30-0002"
		m["data"].(map[string]any)["order"].(map[string]any)["id"] = "PO-2026-0043"
	}))
	p.settle(t)
	got := byRecipient(p.mail(t))
	require.Len(t, got["olga@zarya.example"], 1)
	require.Len(t, got["compras@frutasdelsur.example"], 2)
	next := p.ledgerEntry(t, "acme:PO-2026-0043:1:purchase_order:email:olga@zarya.example")
	require.Equal(t, ledger.Suppressed, next.State)
	require.Contains(t, next.Reason, "unsubscribed from updates")

	// A required route's email carries no link and reaches her anyway.
	p.publish(t, "orders.updated", "evt-2026-11-30-0003", sample(t, "order.updated.json", func(m map[string]any) {
		m["id"] = "evt-2026-11-30-0003" // the file's id is the second order's, routed already
	}))
	p.settle(t)
	olga = byRecipient(p.mail(t))["olga@zarya.example"]
	require.Len(t, olga, 2, "the revision reached her")
	for _, m := range olga {
		if m.Subject != olga[0].Subject {
			require.Empty(t, m.Header.Get("List-Unsubscribe"))
		}
	}
}

// Every email is text and HTML; a name that is markup stays text in both.
func TestEmailsAreTextAndHTMLWithMarkupEscaped(t *testing.T) {
	t.Parallel()
	p := startPipeline(t)
	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", func(m map[string]any) {
		rs := m["data"].(map[string]any)["recipients"].([]any)
		rs[0].(map[string]any)["name"] = `<script>alert("x")</script>`
	}))
	p.settle(t)
	mail := p.mail(t)
	require.Len(t, mail, 2)
	for _, m := range mail {
		require.NotEmpty(t, m.Text)
		require.Contains(t, m.HTML, "<!doctype html>")
		require.NotContains(t, m.HTML, "<script>", "markup from an event never runs")
		require.Len(t, m.Attachments, 1, "and the PDF")
	}
	hostile := 0
	for _, m := range mail {
		if strings.Contains(m.HTML, "&lt;script&gt;") {
			hostile++
			require.Contains(t, m.Text, `<script>alert("x")</script>`, "the text part shows the name as written")
		}
	}
	require.Equal(t, 1, hostile)
}

// A tenant's own From on a domain its provider has not verified is not
// sent on the platform's reputation: dead-lettered, saying what to do.
// Registered and verified, the same order goes out from it.
func TestAnUnverifiedFromDomainIsDeadLetteredUntilVerified(t *testing.T) {
	t.Parallel()
	sg := sendgridtest.New(t, "SG.e2e-secret")
	p := startPipeline(t, func(c *app.Config) {
		c.Email.From = "Orders <orders@herald.example>"
		c.Email.Providers = []app.ProviderConfig{{Type: "sendgrid", Endpoint: sg.URL(), APIKeyEnv: "SG_KEY"}}
		c.Getenv = func(k string) string { return map[string]string{"SG_KEY": "SG.e2e-secret"}[k] }
	})
	ctx := heraldtest.Context(t)
	reg, err := tenant.Open(ctx, p.js, tenant.BuiltinPlans())
	require.NoError(t, err)
	_, err = reg.Update(ctx, "acme", func(t *tenant.Tenant) error { t.From = "Acme Orders <orders@acme.example>"; return nil })
	require.NoError(t, err)
	send, _ := p.createKey(t, openKeys(t, p), apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send, apikey.Read}})

	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
	p.settle(t)
	require.Empty(t, sg.Received(), "nothing went out from the unverified domain")
	dead := p.streamMessages(t, "DLQ")
	require.Len(t, dead, 2)
	require.Contains(t, dead[0].Header.Get(deadletter.HeaderReason),
		"acme.example is not a sending domain of tenant acme, and nothing is sent from an unverified domain: herald domains add --tenant acme --domain acme.example")

	// Registered: SendGrid answers the records; until it sees them, still refused.
	a := p.call(t, http.MethodPost, "/v1/domains", send, []byte(`{"domain":"acme.example"}`), http.Header{"Content-Type": {"application/json"}})
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Contains(t, string(a.body), `"status":"pending"`)
	sg.VerifyDomain("acme.example")
	a = p.call(t, http.MethodGet, "/v1/domains/acme.example", send, nil, nil)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Contains(t, string(a.body), `"status":"verified"`)

	// The workers hear of it by watch, within moments.
	p.publish(t, "orders.created", "evt-2026-11-30-0002", sample(t, "order.created.json", func(m map[string]any) {
		m["id"] = "evt-2026-11-30-0002"
		m["data"].(map[string]any)["order"].(map[string]any)["id"] = "PO-2026-0043"
	}))
	p.settle(t)
	require.Len(t, sg.Received(), 2)
	for _, r := range sg.Received() {
		require.Equal(t, "orders@acme.example", r.From)
	}
}
