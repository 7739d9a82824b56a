// Package smstest is the conformance suite every text-message provider
// passes: what it accepts it delivers intact (UTF-8 text, or a WhatsApp
// template and its variables) and confirms with a message id; what it
// refuses it refuses with an error of the right class, in the provider's
// own words.
//
// The suite is provider-neutral. A provider's test supplies a Harness: the
// provider under test, a way to read back what reached the far side (a fake
// speaking the provider's wire format) in a normalized form, the channels
// the provider sends on, and hooks to make the far side refuse a number or
// fail the next call.
package smstest

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/provider"
)

// Received is a message as the far side got it, normalized across
// providers.
type Received struct {
	Channel event.Channel
	// To is the recipient in E.164 form, without any channel prefix such
	// as "whatsapp:".
	To string
	// Body is the text of a free-form message.
	Body string
	// ContentSID and Variables are the template of a template message.
	ContentSID string
	Variables  map[string]string
}

// Harness connects the suite to one provider.
type Harness struct {
	Provider sms.Provider
	// Received returns every message that reached the far side so far, in
	// the order it arrived.
	Received func(t *testing.T) []Received
	// Channels are the channels the provider sends on (event.ChannelSMS,
	// event.ChannelWhatsApp). It must refuse every other one permanently.
	Channels []event.Channel
	// InvalidNumber is a well-formed E.164 number the far side refuses as
	// not a valid recipient, and Refusal words its refusal contains: the
	// provider must pass them on. Every provider with a far side sets it;
	// only a local sink (textdir) leaves it, and FailNext, unset.
	InvalidNumber, Refusal string
	// FailNext makes the far side's next call fail as an outage does (an
	// HTTP 5xx or the API's equivalent), and the calls after it succeed.
	FailNext func(t *testing.T)
}

// Run runs the suite. setup is called once per subtest for a fresh harness.
func Run(t *testing.T, setup func(t *testing.T) Harness) {
	t.Run("DeliversSMSIntactAndConfirms", func(t *testing.T) {
		t.Parallel()
		deliversIntact(t, setup(t), event.ChannelSMS)
	})
	t.Run("DeliversWhatsAppIntactAndConfirms", func(t *testing.T) {
		t.Parallel()
		deliversIntact(t, setup(t), event.ChannelWhatsApp)
	})
	t.Run("WhatsAppTemplateArrivesAsTemplate", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		skipUnless(t, h, event.ChannelWhatsApp)
		msg := Template()
		receipt, err := h.Provider.Send(context.Background(), msg)
		require.NoError(t, err)
		require.NotEmpty(t, receipt.MessageID)

		got := h.Received(t)
		require.Len(t, got, 1)
		require.Equal(t, event.ChannelWhatsApp, got[0].Channel)
		require.Equal(t, msg.To, got[0].To)
		require.Equal(t, msg.Template.ContentSID, got[0].ContentSID)
		require.Equal(t, msg.Template.Variables, got[0].Variables)
	})
	t.Run("EverySendIsSeparate", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		msg := Sample(firstChannel(t, h))
		first, err := h.Provider.Send(context.Background(), msg)
		require.NoError(t, err)
		second, err := h.Provider.Send(context.Background(), msg)
		require.NoError(t, err)
		require.NotEqual(t, first.MessageID, second.MessageID)
		require.Len(t, h.Received(t), 2, "a provider must not hide a resend; deduplication is Herald's job")
	})
	t.Run("CancelledContextSendsNothing", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := h.Provider.Send(ctx, Sample(firstChannel(t, h)))
		require.Error(t, err)
		require.Empty(t, h.Received(t))
	})
	t.Run("InvalidNumberIsPermanent", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		if h.InvalidNumber == "" {
			t.Skip("a local sink has no far side to refuse a number")
		}
		msg := Sample(firstChannel(t, h))
		msg.To = h.InvalidNumber
		_, err := h.Provider.Send(context.Background(), msg)
		require.Error(t, err)
		require.True(t, provider.IsPermanent(err), "want a permanent error, got %v", err)
		require.Contains(t, err.Error(), h.Refusal, "the error must keep the provider's words")
		require.Empty(t, h.Received(t))
	})
	t.Run("OutageIsTransient", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		if h.FailNext == nil {
			t.Skip("a local sink has no far side to be down")
		}
		msg := Sample(firstChannel(t, h))
		h.FailNext(t)
		_, err := h.Provider.Send(context.Background(), msg)
		require.Error(t, err)
		require.False(t, provider.IsPermanent(err), "an outage must leave room for a retry or another provider: %v", err)
		require.Empty(t, h.Received(t))

		// The outage was one call: the provider holds no state that
		// keeps it failing.
		receipt, err := h.Provider.Send(context.Background(), msg)
		require.NoError(t, err)
		require.NotEmpty(t, receipt.MessageID)
		require.Len(t, h.Received(t), 1)
	})
	t.Run("RefusesChannelsItDoesNotSend", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		for _, c := range event.Channels {
			if slices.Contains(h.Channels, c) {
				continue
			}
			msg := Sample(c)
			_, err := h.Provider.Send(context.Background(), msg)
			require.Error(t, err, c)
			require.True(t, provider.IsPermanent(err), "%s: want a permanent error, got %v", c, err)
			require.Contains(t, err.Error(), string(c), "the refusal must name the channel")
		}
		require.Empty(t, h.Received(t))
	})
}

func deliversIntact(t *testing.T, h Harness, c event.Channel) {
	t.Helper()
	skipUnless(t, h, c)
	msg := Sample(c)
	receipt, err := h.Provider.Send(context.Background(), msg)
	require.NoError(t, err)
	require.NotEmpty(t, receipt.MessageID, "a receipt must carry the provider's message id")
	require.Empty(t, receipt.Provider, "the chain names the provider in a receipt, as it knows it, not the provider itself")

	got := h.Received(t)
	require.Len(t, got, 1)
	require.Equal(t, Received{Channel: c, To: msg.To, Body: msg.Body}, got[0])
}

func skipUnless(t *testing.T, h Harness, c event.Channel) {
	t.Helper()
	if !slices.Contains(h.Channels, c) {
		t.Skipf("the provider does not send %s", c)
	}
}

func firstChannel(t *testing.T, h Harness) event.Channel {
	t.Helper()
	require.NotEmpty(t, h.Channels, "the harness must say which channels the provider sends on")
	return h.Channels[0]
}

// Sample is a message on channel c whose text exercises what providers get
// wrong: Cyrillic, which does not fit GSM-7, so the message goes as UCS-2.
func Sample(c event.Channel) sms.Message {
	return sms.Message{
		ID:        "ntf_0123456789abcdef01234567",
		DedupeKey: "acme:SKU-42:1:low_stock:" + string(c) + ":+34600111222",
		Tenant:    "acme",
		Channel:   c,
		To:        "+34600111222",
		Body:      "Остаток SKU-42 на складе Мадрид: 3 шт.",
	}
}

// Template is a WhatsApp message that sends an approved content template,
// as one that opens a conversation must.
func Template() sms.Message {
	msg := Sample(event.ChannelWhatsApp)
	msg.Template = &sms.Template{
		ContentSID: "HX0123456789abcdef0123456789abcdef",
		Variables:  map[string]string{"1": "SKU-42", "2": "Мадрид", "3": "3"},
	}
	return msg
}
