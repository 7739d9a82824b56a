package push

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/apptext"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/recipient"
)

// Devices are the subscribers' push devices (the recipient directory).
type Devices interface {
	Devices(ctx context.Context, tenant, subscriber string) ([]recipient.Device, error)
	RemoveDevice(ctx context.Context, tenant, subscriber, id string) error
}

// Sender is one push service's provider (push/fcm, push/apns,
// push/webpush).
type Sender interface {
	Send(ctx context.Context, msg Message) (provider.Receipt, error)
}

// NamedSender is a provider with the name it is known by in logs.
type NamedSender struct {
	Name   string
	Sender Sender
}

// ChannelConfig configures the push channel.
type ChannelConfig struct {
	// Devices reads a subscriber's devices and removes a gone one.
	// Required.
	Devices Devices
	// Senders are the providers, by the kind of device each reaches (YAML
	// push.fcm, push.apns, push.webpush). At least one is required; a
	// device of a kind with none fails with "no provider for <kind>".
	Senders map[recipient.DeviceKind]NamedSender
	// Accounts, when set, sends a tenant's devices through its own push
	// accounts, kind by kind, over Senders.
	Accounts *TenantSenders
	// Composer writes the notifications. Defaults to apptext.New().
	Composer *apptext.Composer
	// Logger defaults to discarding.
	Logger *slog.Logger
	// MaxConcurrent is how many of one notification's devices are sent
	// to at once. Defaults to 8.
	MaxConcurrent int
}

// DefaultMaxConcurrent is ChannelConfig.MaxConcurrent's default.
const DefaultMaxConcurrent = 8

// WithDefaults is cfg with its defaults filled in.
func (cfg ChannelConfig) WithDefaults() (ChannelConfig, error) {
	cfg.MaxConcurrent = cmp.Or(cfg.MaxConcurrent, DefaultMaxConcurrent)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Composer == nil {
		var err error
		if cfg.Composer, err = apptext.New(); err != nil {
			return cfg, fmt.Errorf("push: %w", err)
		}
	}
	return cfg, nil
}

// validate names the fields as the YAML file does.
func (cfg ChannelConfig) validate() error {
	var problems []error
	if cfg.Devices == nil {
		problems = append(problems, errors.New("push: the device directory is not set up"))
	}
	if len(cfg.Senders) == 0 {
		problems = append(problems, errors.New("push: at least one provider (push.fcm, push.apns or push.webpush) is required"))
	}
	for kind, s := range cfg.Senders {
		if !slices.Contains([]recipient.DeviceKind{recipient.DeviceFCM, recipient.DeviceAPNs, recipient.DeviceWebPush}, kind) {
			problems = append(problems, fmt.Errorf("push.%s: not a kind of device (fcm, apns, webpush)", kind))
		} else if s.Name == "" || s.Sender == nil {
			problems = append(problems, fmt.Errorf("push.%s: provider is not set up", kind))
		}
	}
	if a := cfg.Accounts; a != nil && (a.Accounts == nil || a.Build == nil) {
		problems = append(problems, errors.New("push: the tenants' accounts are not set up (no vault, or no way to build a sender)"))
	}
	if cfg.MaxConcurrent < 0 {
		problems = append(problems, fmt.Errorf("push.max_concurrent: %d is not a number of devices", cfg.MaxConcurrent))
	}
	return errors.Join(problems...)
}

// Channel is the delivery protocol's adapter for push: a notification goes
// to every device its subscriber registered, each through its kind's
// provider, in one call, and is delivered when at least one device took
// it. A device its service says is gone is removed from the subscriber.
type Channel struct {
	cfg ChannelConfig
}

// NewChannel validates cfg and returns the channel.
func NewChannel(cfg ChannelConfig) (*Channel, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Channel{cfg: cfg}, nil
}

// Name implements delivery.Channel.
func (c *Channel) Name() event.Channel { return event.ChannelPush }

// LongestChain implements delivery.Channel: every device is sent to in
// the one call, at once.
func (c *Channel) LongestChain() int { return 1 }

// Open implements delivery.Channel: the device directory is the app's.
func (c *Channel) Open(context.Context, jetstream.JetStream) error { return nil }

// CallName is the provider the push call is known by in receipts, logs,
// metrics and the ledger; each device's provider is in the call's note.
const CallName = "push"

// Prepare implements delivery.Channel: it reads the subscriber's devices
// and writes the notification in each device's language.
func (c *Channel) Prepare(ctx context.Context, d notification.Delivery) (delivery.Try, error) {
	subscriber := cmp.Or(d.Recipient.Subscriber, d.Recipient.Address)
	if subscriber == "" {
		return delivery.Try{}, provider.Permanentf("a push notification goes to a subscriber, and this one names none")
	}
	devices, err := c.cfg.Devices.Devices(ctx, d.Tenant, subscriber)
	if err != nil {
		return delivery.Try{}, fmt.Errorf("reading the subscriber's push devices: %w", err)
	}
	if len(devices) == 0 {
		return delivery.Try{}, provider.Permanentf("subscriber has no push devices")
	}
	sends, err := c.messages(d, devices)
	if err != nil {
		return delivery.Try{}, err
	}
	return delivery.Try{Calls: []delivery.Call{{
		Provider: CallName,
		// A tenant's failing pushes (its devices' services throttling it,
		// say) open no other tenant's breaker.
		Breaker: CallName + "/" + d.Tenant,
		Send:    func(ctx context.Context) (provider.Receipt, error) { return c.fanOut(ctx, d, subscriber, sends) },
	}}}, nil
}

// send is one device's message.
type send struct {
	device recipient.Device
	msg    Message
}

// messages writes d for each device, once per language, each opening d's
// action URL when clicked. A link the inbox would refuse
// (notification.CheckActionURL) fails the notification for good: a
// device would run or resolve it against the app.
func (c *Channel) messages(d notification.Delivery, devices []recipient.Device) ([]send, error) {
	if err := notification.CheckActionURL(d.ActionURL); err != nil {
		return nil, provider.Permanentf("%w", err)
	}
	texts := map[string]apptext.Text{}
	sends := make([]send, len(devices))
	for i, dev := range devices {
		locale := cmp.Or(dev.Locale, d.Locale)
		text, ok := texts[locale]
		if !ok {
			var err error
			if text, err = c.cfg.Composer.Compose(withLocale(d, locale)); err != nil {
				return nil, err
			}
			texts[locale] = text
		}
		sends[i] = send{device: dev, msg: Message{
			ID: d.ID, Token: dev.Token, Subscription: subscription(dev.Subscription),
			Title: text.Title, Body: text.Body, URL: d.ActionURL, CollapseID: collapseID(d),
		}}
	}
	return sends, nil
}

func withLocale(d notification.Delivery, locale string) notification.Delivery {
	d.Locale = locale
	return d
}

// collapseID groups a notification with the others about its order, so a
// device shows an order's latest news rather than all of it; a
// notification about no order collapses with nothing but its own tries.
func collapseID(d notification.Delivery) string {
	if d.Order != nil && d.Order.ID != "" {
		return d.Order.ID
	}
	return d.ID
}

func subscription(s *recipient.WebPushSubscription) *Subscription {
	if s == nil {
		return nil
	}
	return &Subscription{Endpoint: s.Endpoint, Keys: SubscriptionKeys{P256dh: s.Keys.P256dh, Auth: s.Keys.Auth}}
}
