// Package push holds what every push provider (FCM, APNs, Web Push) shares:
// the message one device is sent, and the failure that says the device is
// gone. Each provider lives in a package of its own below this one.
package push

import (
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/shared/provider"
)

// ErrGone is what a provider's "this device is gone" answer wraps, inside a
// permanent error (FCM UNREGISTERED, APNs 410, Web Push 404/410): the
// caller removes the device rather than keep sending (errors.Is(err,
// ErrGone)).
var ErrGone = errors.New("the device is gone")

// Gone marks the service's answer err as a gone device: permanent, and
// wrapping ErrGone.
func Gone(err error) error {
	return provider.Permanent(fmt.Errorf("%w: %w", ErrGone, err))
}

// IsGone reports whether err says the device is gone.
func IsGone(err error) bool { return errors.Is(err, ErrGone) }

// Message is one notification to one device.
type Message struct {
	// ID is the notification id, for the provider's idempotency where it
	// has one.
	ID string
	// Token is the device token of an FCM or APNs device.
	Token string
	// Subscription is a Web Push device's subscription.
	Subscription *Subscription
	Title        string
	Body         string
	// URL is opened when the notification is clicked (a deep link or a
	// web page); optional.
	URL string
	// CollapseID groups notifications so that a newer one replaces an
	// older one still waiting (FCM collapse key, APNs collapse id, Web Push
	// Topic); optional.
	CollapseID string
	// TTL is how long the service keeps the message for an offline device.
	// Zero: the provider's default.
	TTL time.Duration
}

// Subscription is a browser's PushSubscription, as its toJSON() gives it.
type Subscription struct {
	Endpoint string           `json:"endpoint"`
	Keys     SubscriptionKeys `json:"keys"`
}

// SubscriptionKeys are a subscription's keys, base64url: the browser's
// P-256 public key and its 16-byte auth secret.
type SubscriptionKeys struct {
	P256dh string `json:"p256dh"`
	Auth   string `json:"auth"`
}
