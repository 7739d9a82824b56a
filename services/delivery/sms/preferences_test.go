package sms_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/preferencepage"
	"github.com/heraldhq/herald/shared/provider"
)

// sent keeps what the channel hands its provider.
type sent struct{ messages []sms.Message }

func (s *sent) Send(_ context.Context, m sms.Message) (provider.Receipt, error) {
	s.messages = append(s.messages, m)
	return provider.Receipt{Provider: "sink", MessageID: "m"}, nil
}

// prepared is the message c sends for d.
func prepared(t *testing.T, c *sms.Channel, p *sent, d notification.Delivery) sms.Message {
	t.Helper()
	try, err := c.Prepare(context.Background(), d)
	require.NoError(t, err)
	_, err = try.Calls[0].Send(context.Background())
	require.NoError(t, err)
	return p.messages[len(p.messages)-1]
}

// A text message to a subscriber ends with a line linking their
// preference page, its label in their language; one to a number written
// inline does not, nor does an approved WhatsApp template (sent as
// approved), nor a message the line would take past its channel's
// length — which goes without it.
func TestATextToASubscriberEndsWithTheirPreferenceLink(t *testing.T) {
	t.Parallel()
	signer, err := preferencepage.NewSigner([]byte(strings.Repeat("s", 32)), "https://herald.example.com")
	require.NoError(t, err)
	link := signer.Link(preferencepage.Whose{Tenant: "acme", Subscriber: "u-olga"})
	p := &sent{}
	templates := sms.Templates{"low_stock": {ContentSID: "HX1", Variables: []string{"sku"}}}
	channels := map[event.Channel]*sms.Channel{}
	for _, ch := range []event.Channel{event.ChannelSMS, event.ChannelWhatsApp} {
		cfg := sms.ChannelConfig{Channel: ch, Providers: []sms.Named{{Name: "sink", Provider: p}}, Preferences: signer}
		if ch == event.ChannelWhatsApp {
			cfg.Templates = templates
		}
		channels[ch], err = sms.NewChannel(cfg)
		require.NoError(t, err)
	}

	for locale, label := range map[string]string{"en": "Preferences:", "es-MX": "Preferencias:", "ru": "Настройки:", "de": "Preferences:"} {
		d := order("purchase_order", locale, 1, "183.48")
		inline := prepared(t, channels[event.ChannelSMS], p, d)
		d.Recipient.Subscriber = "u-olga"
		m := prepared(t, channels[event.ChannelSMS], p, d)
		require.Equal(t, inline.Body+"\n"+label+" "+link, m.Body, locale)
		require.NotContains(t, inline.Body, "/p/")
	}

	d := order("purchase_order", "en", 1, "183.48")
	d.Recipient.Subscriber, d.Channel = "u-olga", event.ChannelWhatsApp
	require.True(t, strings.HasSuffix(prepared(t, channels[event.ChannelWhatsApp], p, d).Body, "\nPreferences: "+link))
	stock := lowStock("en")
	stock.Recipient.Subscriber, stock.Channel = "u-olga", event.ChannelWhatsApp
	m := prepared(t, channels[event.ChannelWhatsApp], p, stock)
	require.NotNil(t, m.Template)
	require.NotContains(t, m.Body, "/p/", "an approved template is sent as approved")

	// A message that fills its segments already goes without the line.
	long := order("purchase_order", "en", 1, "183.48")
	long.Recipient.Subscriber = "u-olga"
	long.Message = &notification.Message{Text: strings.Repeat("x", 153*sms.MaxSegments-10)}
	require.Equal(t, long.Message.Text, prepared(t, channels[event.ChannelSMS], p, long).Body)
}
