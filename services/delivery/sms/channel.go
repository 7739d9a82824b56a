package sms

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/preferencepage"
	"github.com/heraldhq/herald/shared/provider"
)

// Named is a provider with the name it is known by in receipts, logs,
// metrics and the ledger.
type Named = delivery.Named[Provider]

// Chains picks each tenant's provider chain (delivery.TenantChains).
type Chains interface {
	Chain(ctx context.Context, tenant string) ([]Named, error)
}

// ChannelConfig configures the adapter of one text channel.
type ChannelConfig struct {
	// Channel is event.ChannelSMS or event.ChannelWhatsApp. Required.
	Channel event.Channel
	// Providers are tried in order on every try, stopping at the first
	// that accepts. Required.
	Providers []Named
	// Chains picks each tenant's chain, of Providers and its own accounts.
	// Defaults to none: every tenant's messages go through Providers.
	Chains Chains
	// Templates are the approved WhatsApp content templates (whatsapp
	// only). Defaults to none: every WhatsApp message goes as free-form
	// text, which reaches a recipient only inside a session window.
	Templates Templates
	// Preferences signs the link to a subscriber's preference page, which
	// every message to a subscriber ends with (Composer.WithPreferences).
	// Without it, none does.
	Preferences *preferencepage.Signer
}

// Channel is the delivery protocol's adapter for SMS or WhatsApp: it
// composes a delivery in its recipient's language, within the channel's
// length limits, and binds it to the provider chain. The ledger is told
// each message's encoding and segments.
type Channel struct {
	cfg      ChannelConfig
	composer *Composer
}

// NewChannel validates cfg and returns the adapter. Errors name fields as
// in the YAML file (sms.providers, whatsapp.templates).
func NewChannel(cfg ChannelConfig) (*Channel, error) {
	if cfg.Channel != event.ChannelSMS && cfg.Channel != event.ChannelWhatsApp {
		return nil, fmt.Errorf("sms: %q is not a text channel", cfg.Channel)
	}
	var problems []error
	if len(cfg.Providers) == 0 {
		problems = append(problems, fmt.Errorf("%s.providers: at least one provider is required", cfg.Channel))
	}
	for i, p := range cfg.Providers {
		if p.Name == "" || p.Provider == nil {
			problems = append(problems, fmt.Errorf("%s.providers[%d]: provider is not set up", cfg.Channel, i))
		}
	}
	if err := cfg.Templates.Validate(); err != nil {
		problems = append(problems, fmt.Errorf("%s.templates: %w", cfg.Channel, err))
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	composer, err := NewComposer()
	if err != nil {
		return nil, err
	}
	return &Channel{cfg: cfg, composer: composer}, nil
}

// Name implements delivery.Channel.
func (c *Channel) Name() event.Channel { return c.cfg.Channel }

// LongestChain implements delivery.Channel.
func (c *Channel) LongestChain() int { return len(c.cfg.Providers) }

// Open implements delivery.Channel: a text message reads no store.
func (c *Channel) Open(context.Context, jetstream.JetStream) error { return nil }

// Prepare implements delivery.Channel.
func (c *Channel) Prepare(ctx context.Context, d notification.Delivery) (delivery.Try, error) {
	providers := c.cfg.Providers
	if c.cfg.Chains != nil {
		var err error
		if providers, err = c.cfg.Chains.Chain(ctx, d.Tenant); err != nil {
			return delivery.Try{}, err
		}
	}
	m, err := c.composer.ComposeWhatsApp(d, c.cfg.Templates)
	if err != nil {
		return delivery.Try{}, err
	}
	if d.Recipient.Subscriber != "" && c.cfg.Preferences != nil {
		m = c.composer.WithPreferences(m, d.Locale, c.cfg.Preferences.Link(preferencepage.Whose{Tenant: d.Tenant, Subscriber: d.Recipient.Subscriber}))
	}
	try := delivery.Try{Calls: make([]delivery.Call, len(providers)), Note: Describe(m.Body)}
	if m.Template != nil {
		try.Note = "template " + m.Template.ContentSID
	}
	for i, p := range providers {
		try.Calls[i] = delivery.Call{Provider: p.Name, Breaker: p.Breaker(),
			Send: func(ctx context.Context) (provider.Receipt, error) { return p.Provider.Send(ctx, m) }}
	}
	return try, nil
}
