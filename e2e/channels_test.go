package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/sms/awssms"
	"github.com/heraldhq/herald/services/delivery/sms/awssms/awssmstest"
	"github.com/heraldhq/herald/services/delivery/sms/twilio/twiliotest"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
)

const (
	twilioSID   = "AC00000000000000000000000000000001"
	twilioToken = "e2etwiliotoken0000000000000000001"
	warehouse   = "+34600111222" // the sample stock alert's contact
)

// texting are fakes of Twilio and of Amazon End User Messaging SMS,
// speaking their wire formats, for the real SDKs.
type texting struct {
	twilio *twiliotest.Server
	aws    *awssmstest.Server
}

func fakeTexting(t *testing.T) texting {
	return texting{twilio: twiliotest.New(t, twilioSID, twilioToken), aws: awssmstest.New(t)}
}

// configure sends SMS through Twilio, then AWS; WhatsApp through Twilio.
func (f texting) configure(c *app.Config) {
	tw := app.ProviderConfig{Type: "twilio", AccountSID: twilioSID, AuthTokenEnv: "TWILIO_TOKEN", From: "+14155550100", Endpoint: f.twilio.URL()}
	c.SMS.Providers = []app.ProviderConfig{tw,
		{Type: "awssms", Region: "eu-west-1", Endpoint: f.aws.URL(), AccessKeyIDEnv: "AWS_ID", SecretAccessKeyEnv: "AWS_SECRET"}}
	c.WhatsApp.Providers = []app.ProviderConfig{tw}
	for _, d := range []*app.DeliveryConfig{&c.SMS.DeliveryConfig, &c.WhatsApp.DeliveryConfig} {
		d.RetryDelay, d.Timeout = 100*time.Millisecond, time.Second
	}
	env := map[string]string{"TWILIO_TOKEN": twilioToken, "AWS_ID": "AKIAE2E", "AWS_SECRET": "e2e-aws-secret"}
	c.Getenv = func(k string) string { return env[k] }
}

// sent counts the messages the providers accepted, by channel and number.
func (f texting) sent() map[string]int {
	out := map[string]int{}
	for _, m := range f.twilio.Received() {
		n := m.Normalized()
		out[string(n.Channel)+" "+n.To]++
	}
	for _, m := range f.aws.Received() {
		out["sms "+m.To]++
	}
	return out
}

func stockKey(channel event.Channel) string {
	return notification.Key{Tenant: "acme", Subject: "evt-2026-11-30-0100", Document: "low_stock", Channel: channel, Recipient: warehouse}.String()
}

func TestAStockAlertTextsEachWarehouseContactOncePerChannel(t *testing.T) {
	t.Parallel()
	f := fakeTexting(t)
	p := startPipeline(t, f.configure)
	shrinkDuplicateWindows(t, p, time.Second)
	alert := sample(t, "inventory.low_stock.json", nil)
	p.publish(t, "inventory.low_stock", "evt-2026-11-30-0100", alert)
	p.settle(t)
	want := map[string]int{"sms " + warehouse: 1, "whatsapp " + warehouse: 1}
	require.Equal(t, want, f.sent())

	// Republished past every duplicate window: the ledger stops both.
	time.Sleep(1500 * time.Millisecond)
	p.publish(t, "inventory.low_stock", "evt-2026-11-30-0100-again", alert)
	p.settle(t)
	require.Equal(t, want, f.sent())

	got := f.twilio.Received()
	for _, m := range got {
		require.Contains(t, m.Body, "MILK-1L", "the Spanish template names the item")
		require.Contains(t, m.Body, "SEV-01")
	}
	sms := p.ledgerEntry(t, stockKey(event.ChannelSMS))
	require.Equal(t, ledger.Delivered, sms.State)
	require.Equal(t, "twilio", sms.Provider)
	require.Regexp(t, `^SM[0-9a-f]{32}$`, sms.ProviderMessageID, "Twilio's sid is the receipt")
	require.Regexp(t, `^(gsm-7|ucs-2), 1 segment$`, sms.Attempts[0].Note, "the ledger says what the SMS cost")
	require.Equal(t, ledger.Delivered, p.ledgerEntry(t, stockKey(event.ChannelWhatsApp)).State)
}

func TestTwilioDownSendsTheSMSThroughAWS(t *testing.T) {
	t.Parallel()
	f := fakeTexting(t)
	f.twilio.FailNext(1000, twiliotest.ServerError)
	p := startPipeline(t, f.configure, func(c *app.Config) { c.WhatsApp.Providers = nil })
	p.publish(t, "inventory.low_stock", "evt-2026-11-30-0100", sample(t, "inventory.low_stock.json", nil))
	p.settle(t)

	require.Equal(t, map[string]int{"sms " + warehouse: 1}, f.sent())
	require.Len(t, f.aws.Received(), 1)
	e := p.ledgerEntry(t, stockKey(event.ChannelSMS))
	require.Equal(t, ledger.Delivered, e.State)
	require.Equal(t, "awssms", e.Provider)
	require.Equal(t, 1, e.Tries, "Twilio failed, AWS accepted, in one pass")
	require.Contains(t, e.Attempts[0].Error, "twilio: HTTP 500")
	require.Equal(t, "acme:evt-2026-11-30-0100:0:low_stock:sms:"+warehouse, f.aws.Received()[0].Context[awssms.ContextDedupeKey])
}

// A route with fallback: [whatsapp, sms] reaches the warehouse on WhatsApp
// when it can; outside the 24-hour session window Twilio refuses the
// free-form message (63016) and the same alert goes by SMS, once.
func TestWhatsAppOutsideTheSessionWindowFallsBackToSMSOnce(t *testing.T) {
	t.Parallel()
	f := fakeTexting(t)
	f.twilio.CloseSession(warehouse)
	p := startPipeline(t, f.configure, func(c *app.Config) {
		c.Router.Routes = []router.Route{{Event: "inventory.low_stock", Template: "low_stock", Roles: []string{"warehouse"},
			Fallback: []event.Channel{event.ChannelWhatsApp, event.ChannelSMS}, Priority: notification.PriorityCritical}}
	})
	shrinkDuplicateWindows(t, p, time.Second)
	alert := sample(t, "inventory.low_stock.json", nil)
	p.publish(t, "inventory.low_stock", "evt-2026-11-30-0100", alert)
	p.settle(t)
	require.Equal(t, map[string]int{"sms " + warehouse: 1}, f.sent())

	wa, sms := p.ledgerEntry(t, stockKey(event.ChannelWhatsApp)), p.ledgerEntry(t, stockKey(event.ChannelSMS))
	require.Equal(t, ledger.Failed, wa.State)
	require.Contains(t, wa.Reason, "63016")
	require.Contains(t, wa.Reason, "fell back to sms")
	require.Equal(t, notification.ID(stockKey(event.ChannelSMS)), wa.FallbackTo, "both entries name the other")
	require.Equal(t, notification.ID(stockKey(event.ChannelWhatsApp)), sms.FallbackOf)
	require.Equal(t, ledger.Delivered, sms.State)
	require.Empty(t, p.streamMessages(t, "DLQ"), "a failure the fallback took over is no dead letter")

	// Again past the duplicate windows: WhatsApp fails again and falls
	// back again, and the SMS ledger stops a second text.
	time.Sleep(1500 * time.Millisecond)
	p.publish(t, "inventory.low_stock", "evt-2026-11-30-0100-again", alert)
	p.settle(t)
	require.Equal(t, map[string]int{"sms " + warehouse: 1}, f.sent())
}
