package recipient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/resource"
)

// The buckets, declared in streams/KV_<bucket>.
const (
	SubscribersBucket = "subscribers"
	AccountsBucket    = "accounts"
	TopicsBucket      = "topics"
	MembersBucket     = "topic_members"
	PreferencesBucket = "preferences"
	DevicesBucket     = "devices"
)

// Errors a missing record is reported as; each matches resource.ErrNotFound.
var (
	ErrNoSubscriber  = errors.New("recipient: no such subscriber")
	ErrNoAccount     = errors.New("recipient: no such account")
	ErrNoTopic       = errors.New("recipient: no such topic")
	ErrNoMembership  = errors.New("recipient: not on the topic")
	ErrNoPreferences = errors.New("recipient: no preferences set")
	ErrNoDevice      = errors.New("recipient: no such device")
)

// SubscriberKey is where a tenant's subscriber is kept.
func SubscriberKey(tenant, id string) string { return tenant + "." + Token(id) }

// AccountKey is where a tenant's account is kept.
func AccountKey(tenant, id string) string { return tenant + "." + Token(id) }

// TopicKey is where a tenant's topic is kept.
func TopicKey(tenant, id string) string { return tenant + "." + Token(id) }

// MembershipKey is where a subscriber's membership of a topic is kept:
// under the topic's own prefix (MembersPrefix), so a topic's members are
// listed by one filter.
func MembershipKey(tenant, topic, subscriber string) string {
	return MembersPrefix(tenant, topic) + "." + Token(subscriber)
}

// MembersPrefix is the key prefix of a topic's memberships.
func MembersPrefix(tenant, topic string) string { return tenant + "." + Token(topic) }

// PreferencesKey is where a subscriber's preferences are kept, or, for
// subscriber "", the tenant's defaults.
func PreferencesKey(tenant, subscriber string) string {
	if subscriber == "" {
		return tenant + ".defaults"
	}
	return tenant + ".s." + Token(subscriber)
}

// DeviceKey is where a subscriber's device is kept: under the
// subscriber's own prefix (DevicesPrefix), so her devices are listed, and
// erased, by one filter.
func DeviceKey(tenant, subscriber, id string) string {
	return DevicesPrefix(tenant, subscriber) + "." + Token(id)
}

// DevicesPrefix is the key prefix of a subscriber's devices.
func DevicesPrefix(tenant, subscriber string) string { return tenant + "." + Token(subscriber) }

// The kinds.
var (
	Subscribers = resource.Kind[Subscriber]{Name: "subscriber", Bucket: SubscribersBucket, NotFound: ErrNoSubscriber,
		Key:      func(s Subscriber) string { return SubscriberKey(s.Tenant, s.ID) },
		Validate: Subscriber.Validate, MaxBytes: MaxData + 8<<10}
	Accounts = resource.Kind[Account]{Name: "account", Bucket: AccountsBucket, NotFound: ErrNoAccount,
		Key:      func(a Account) string { return AccountKey(a.Tenant, a.ID) },
		Validate: Account.Validate, MaxBytes: 256 << 10}
	Topics = resource.Kind[Topic]{Name: "topic", Bucket: TopicsBucket, NotFound: ErrNoTopic,
		Key:      func(t Topic) string { return TopicKey(t.Tenant, t.ID) },
		Validate: Topic.Validate, MaxBytes: 4 << 10}
	Memberships = resource.Kind[Membership]{Name: "topic membership", Bucket: MembersBucket, NotFound: ErrNoMembership,
		Key:      func(m Membership) string { return MembershipKey(m.Tenant, m.Topic, m.Subscriber) },
		Validate: Membership.Validate, MaxBytes: 1 << 10}
	PreferenceSets = resource.Kind[Preferences]{Name: "preferences", Bucket: PreferencesBucket, NotFound: ErrNoPreferences,
		Key:      func(p Preferences) string { return PreferencesKey(p.Tenant, p.Subscriber) },
		Validate: Preferences.Validate, MaxBytes: 16 << 10}
	// A device is small — a Web Push subscription is some 300 bytes — but
	// an FCM token may be 4 KiB.
	Devices = resource.Kind[Device]{Name: "device", Bucket: DevicesBucket, NotFound: ErrNoDevice,
		Key:      func(d Device) string { return DeviceKey(d.Tenant, d.Subscriber, d.ID) },
		Validate: Device.Validate, MaxBytes: 8 << 10}
)

// Directory is a deployment's recipients: the stores of every kind.
type Directory struct {
	Subscribers *resource.Store[Subscriber]
	Accounts    *resource.Store[Account]
	Topics      *resource.Store[Topic]
	Memberships *resource.Store[Membership]
	Preferences *resource.Store[Preferences]
	// DeviceStore keeps subscribers' push devices; Devices, PutDevice and
	// RemoveDevice are how they are read and written.
	DeviceStore *resource.Store[Device]
}

// Open binds to the buckets, which streams.Apply creates.
func Open(ctx context.Context, js jetstream.JetStream) (*Directory, error) {
	var d Directory
	var errs [6]error
	d.Subscribers, errs[0] = resource.Open(ctx, js, Subscribers)
	d.Accounts, errs[1] = resource.Open(ctx, js, Accounts)
	d.Topics, errs[2] = resource.Open(ctx, js, Topics)
	d.Memberships, errs[3] = resource.Open(ctx, js, Memberships)
	d.Preferences, errs[4] = resource.Open(ctx, js, PreferenceSets)
	d.DeviceStore, errs[5] = resource.Open(ctx, js, Devices)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("recipient: %w", err)
	}
	return &d, nil
}

// PutAccount stores a (normalized), refusing a member who is not one of
// the tenant's subscribers, naming it.
func (d *Directory) PutAccount(ctx context.Context, a Account) (uint64, error) {
	a, err := d.checkAccount(ctx, a)
	if err != nil {
		return 0, err
	}
	return d.Accounts.Put(ctx, a)
}

// checkAccount is a normalized, or why it cannot be stored.
func (d *Directory) checkAccount(ctx context.Context, a Account) (Account, error) {
	a = a.Normalize()
	if err := a.Validate(); err != nil {
		return a, err
	}
	for i, m := range a.Members {
		if _, _, err := d.Subscribers.Get(ctx, SubscriberKey(a.Tenant, m.Subscriber)); err != nil {
			if errors.Is(err, resource.ErrNotFound) {
				return a, invalid(fmt.Sprintf("members[%d].subscriber: %s is not a subscriber", i, quote(m.Subscriber)))
			}
			return a, err
		}
	}
	return a, nil
}

// SetPreferences records a subscriber's choices (subscriber "" sets the
// tenant's defaults): laid over those kept when merge is set, replacing
// them when not. It refuses, naming the category, choices that switch off
// one of required (the categories routes mark required), and choices for
// a subscriber the tenant does not have. The API, the CLI, the hosted
// preference page and one-click unsubscribe all write through it.
func (d *Directory) SetPreferences(ctx context.Context, tenant, subscriber string, c Choices, required []string, merge bool) (Preferences, error) {
	p := Preferences{Tenant: tenant, Subscriber: subscriber, Categories: c}
	if err := p.Validate(); err != nil {
		return Preferences{}, err
	}
	if err := c.Required(required); err != nil {
		return Preferences{}, err
	}
	if subscriber != "" {
		if _, _, err := d.Subscribers.Get(ctx, SubscriberKey(tenant, subscriber)); err != nil {
			return Preferences{}, err
		}
	}
	return d.Preferences.Patch(ctx, PreferencesKey(tenant, subscriber), func(v *Preferences, found bool) (resource.Write, error) {
		if merge && found {
			c = v.Categories.Merge(c)
		}
		*v = Preferences{Tenant: tenant, Subscriber: subscriber, Categories: c, UpdatedAt: time.Now().UTC()}
		return resource.Save, v.Validate()
	})
}

// Choices are a subscriber's own choices and the tenant's defaults, as
// Allows takes them; none kept is none chosen.
func (d *Directory) Choices(ctx context.Context, tenant, subscriber string) (own, defaults Choices, err error) {
	p, _, err := d.Preferences.Get(ctx, PreferencesKey(tenant, subscriber))
	if err != nil && !errors.Is(err, resource.ErrNotFound) {
		return nil, nil, err
	}
	t, _, err := d.Preferences.Get(ctx, PreferencesKey(tenant, ""))
	if err != nil && !errors.Is(err, resource.ErrNotFound) {
		return nil, nil, err
	}
	return p.Categories, t.Categories, nil
}
