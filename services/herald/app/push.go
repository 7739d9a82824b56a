package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/apns"
	"github.com/heraldhq/herald/services/delivery/push/fcm"
	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/vault"
)

// pushSender is one push provider as the channel takes it.
type pushSender interface {
	Send(ctx context.Context, msg push.Message) (provider.Receipt, error)
}

// pushProviders builds the configured push providers, by the kind of
// device each reaches. Its errors name the field at fault; a secret's
// value is never in one (the providers' own errors never quote it).
func (a *App) pushProviders(ctx context.Context) (map[recipient.DeviceKind]pushSender, error) {
	c := a.cfg.Push
	out := map[recipient.DeviceKind]pushSender{}
	var problems []error
	add := func(kind recipient.DeviceKind, s pushSender, err error) {
		if err != nil {
			problems = append(problems, err)
			return
		}
		out[kind] = s
	}
	if f := c.FCM; f != nil {
		s, err := a.fcmSender(ctx, *f)
		add(recipient.DeviceFCM, s, err)
	}
	if k := c.APNs; k != nil {
		s, err := a.apnsSender(*k)
		add(recipient.DeviceAPNs, s, err)
	}
	if w := c.WebPush; w != nil {
		s, err := a.webPushSender(*w)
		add(recipient.DeviceWebPush, s, err)
	}
	return out, unreported(problems)
}

// unreported joins problems, leaving out those Config.Validate reported:
// errReported alone when every one was.
func unreported(problems []error) error {
	var left []error
	for _, err := range problems {
		if !errors.Is(err, errReported) {
			left = append(left, err)
		}
	}
	if len(left) == 0 && len(problems) > 0 {
		return errReported
	}
	return errors.Join(left...)
}

// configurePush reads push: and builds its providers, reading their
// secrets, so that a bad key stops start-up. The channel needs the device
// directory, which needs NATS: it is built with the service.
func (a *App) configurePush() error {
	senders, err := a.pushProviders(context.Background())
	if err != nil {
		return err
	}
	a.pushSenders = senders
	a.pushC = a.deliveryConfig(unbuilt(event.ChannelPush), "push", a.cfg.Push.DeliveryConfig, []string{"push"})
	return a.pushC.Validate()
}

// buildPush sends to the subscribers' devices, read from (and, when their
// push service says they are gone, removed from) the devices bucket.
func (a *App) buildPush(ctx context.Context) (service, error) {
	registry, err := a.tenantCache(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := recipient.Open(ctx, a.js)
	if err != nil {
		return nil, err
	}
	senders := map[recipient.DeviceKind]push.NamedSender{}
	for kind, s := range a.pushSenders {
		senders[kind] = push.NamedSender{Name: string(kind), Sender: s}
	}
	tenantSenders, err := a.tenantPushSenders(ctx)
	if err != nil {
		return nil, err
	}
	ch, err := push.NewChannel(push.ChannelConfig{Devices: goneDevices{dir}, Senders: senders, Accounts: tenantSenders,
		Logger: a.logger.With("service", "delivery", "channel", "push")})
	if err != nil {
		return nil, err
	}
	return a.deliveryService(ctx, a.pushC, ch, registry)
}

// goneDevices is the directory as the push channel takes it: a gone
// device someone removed first (the app, re-registering; another worker,
// sending the same notification) is as removed as one it removes itself.
type goneDevices struct{ *recipient.Directory }

func (d goneDevices) RemoveDevice(ctx context.Context, tenant, subscriber, id string) error {
	if err := d.Directory.RemoveDevice(ctx, tenant, subscriber, id); !errors.Is(err, recipient.ErrNoDevice) {
		return err
	}
	return nil
}

func (a *App) fcmSender(ctx context.Context, f FCMConfig) (pushSender, error) {
	if secretProblem("", f.CredentialsFile, f.CredentialsEnv) != nil {
		return nil, errReported
	}
	credentials, err := a.secret("push.fcm.credentials_env", f.CredentialsEnv, f.CredentialsFile)
	if err != nil {
		return nil, err
	}
	s, err := fcm.New(ctx, fcm.Config{CredentialsJSON: []byte(credentials), ProjectID: f.ProjectID, Endpoint: f.Endpoint})
	if err != nil {
		return nil, fmt.Errorf("push.fcm: %w", err)
	}
	return s, nil
}

func (a *App) apnsSender(k APNsConfig) (pushSender, error) {
	if secretProblem("", k.KeyFile, k.KeyEnv) != nil || k.KeyID == "" || k.TeamID == "" || k.Topic == "" {
		return nil, errReported
	}
	key, err := a.secret("push.apns.key_env", k.KeyEnv, k.KeyFile)
	if err != nil {
		return nil, err
	}
	s, err := apns.New(apns.Config{KeyID: k.KeyID, TeamID: k.TeamID, AuthKey: key, Topic: k.Topic, Production: k.Production, Host: k.Host})
	if err != nil {
		return nil, fmt.Errorf("push.apns: %w", err)
	}
	return s, nil
}

// webPushSender dials push services through the webhook client, whose
// guard refuses private addresses unless webhooks.allow_private_networks
// lets webhooks reach them too (herald dev): a subscription's endpoint is
// a URL a browser — anyone — chose, as a webhook endpoint is.
func (a *App) webPushSender(w WebPushConfig) (pushSender, error) {
	if secretProblem("", w.VAPIDPrivateKeyFile, w.VAPIDPrivateKeyEnv) != nil || w.VAPIDPublicKey == "" || w.Contact == "" {
		return nil, errReported
	}
	private, err := a.secret("push.webpush.vapid_private_key_env", w.VAPIDPrivateKeyEnv, w.VAPIDPrivateKeyFile)
	if err != nil {
		return nil, err
	}
	s, err := webpush.New(webpush.Config{VAPIDPublicKey: w.VAPIDPublicKey, VAPIDPrivateKey: private, Subscriber: w.Contact, TTL: w.TTL,
		AllowPrivateNetworks: a.cfg.Webhooks.AllowPrivateNetworks})
	if err != nil {
		return nil, fmt.Errorf("push.webpush: %w", err)
	}
	return s, nil
}

// tenantPushSenders sends a tenant's devices through its own push
// accounts; none without a master key, when no tenant can have any.
func (a *App) tenantPushSenders(ctx context.Context) (*push.TenantSenders, error) {
	if a.keyring == nil {
		return nil, nil
	}
	store, err := vault.Open(ctx, a.js, a.keyring)
	if err != nil {
		return nil, err
	}
	return &push.TenantSenders{Accounts: store, Build: a.buildPushAccount}, nil
}

// buildPushAccount makes a push sender of a tenant's own account, at the
// moment of use, as buildAccount does an email provider. A Web Push
// account dials through the same SSRF guard as the platform's.
func (a *App) buildPushAccount(ctx context.Context, _ string, c vault.Credential) (push.Sender, error) {
	switch c.Type {
	case vault.TypeFCM:
		return asSender(fcm.New(ctx, fcm.Config{CredentialsJSON: []byte(c.ServiceAccount.Reveal()), Endpoint: c.Endpoint}))
	case vault.TypeAPNs:
		return asSender(apns.New(apns.Config{KeyID: c.APNsKeyID, TeamID: c.TeamID, AuthKey: c.AuthKey.Reveal(),
			Topic: c.Topic, Production: c.Production, Host: c.Endpoint}))
	case vault.TypeWebPush:
		return asSender(webpush.New(webpush.Config{VAPIDPublicKey: c.VAPIDPublicKey, VAPIDPrivateKey: c.VAPIDPrivateKey.Reveal(),
			Subscriber: c.Contact, AllowPrivateNetworks: a.cfg.Webhooks.AllowPrivateNetworks}))
	}
	return nil, fmt.Errorf("%q is not a push provider type", c.Type)
}

// asSender is a constructor's answer as an interface: a nil *Sender in a
// non-nil interface would pass for a sender.
func asSender[S push.Sender](s S, err error) (push.Sender, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}
