// Package sms sends short text messages: SMS, and WhatsApp messages, which
// the same providers carry (Twilio sends both). It composes a delivery into
// a Message from templates per notification type and locale, counts the
// segments it will cost (GSM-7 or UCS-2), and defines the Provider every
// text-message provider implements, with the conformance suite smstest
// they all pass.
package sms

import (
	"context"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/provider"
)

// Message is one text message to one phone number.
type Message struct {
	// ID is the notification id; DedupeKey its dedupe key, passed to a
	// provider where it takes one (an idempotency or context field).
	ID, DedupeKey, Tenant string
	// Channel is event.ChannelSMS or event.ChannelWhatsApp.
	Channel event.Channel
	// To is the recipient's number in E.164 form ("+34600111222"),
	// without a "whatsapp:" prefix: the provider adds what its API wants.
	To string
	// Body is the text. A WhatsApp message with a Template sends the
	// template instead; Body is then what the template says, for the
	// ledger and for providers that cannot send templates.
	Body string
	// Template is an approved WhatsApp content template, which a message
	// that opens a conversation (outside the 24-hour session window) must
	// be. Nil for SMS.
	Template *Template
}

// Template is an approved content template and the values of its
// variables ("1" → "SKU-42").
type Template struct {
	ContentSID string
	Variables  map[string]string
}

// Provider hands a text message to one messaging service.
//
// Send returns a Receipt only when the provider accepted the message and
// said so with a message id; anything less is an error classified as the
// provider package says. A provider that cannot send on msg.Channel at all
// refuses permanently, naming the channel.
type Provider interface {
	Send(ctx context.Context, msg Message) (provider.Receipt, error)
}
