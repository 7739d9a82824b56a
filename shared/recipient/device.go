package recipient

import "time"

// DeviceKind is the push service a device is reached through.
type DeviceKind string

const (
	DeviceFCM     DeviceKind = "fcm"
	DeviceAPNs    DeviceKind = "apns"
	DeviceWebPush DeviceKind = "webpush"
)

// Device is one of a subscriber's push devices, under the publisher's own
// id for it: a phone's FCM or APNs token, or a browser's Web Push
// subscription.
type Device struct {
	Tenant     string     `json:"tenant"`
	Subscriber string     `json:"subscriber"`
	ID         string     `json:"id"`
	Kind       DeviceKind `json:"kind"`
	// Token is an FCM registration token or an APNs device token (hex).
	Token string `json:"token,omitempty"`
	// Subscription is a browser's PushSubscription, as its toJSON() gives
	// it (Web Push only).
	Subscription *WebPushSubscription `json:"subscription,omitempty"`
	// Locale, when set, is the language this device's notifications are
	// written in, before the subscriber's.
	Locale    string    `json:"locale,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// WebPushSubscription is a browser's PushSubscription: the push service's
// endpoint (a capability: whoever has it can push to the browser) and the
// browser's keys, base64url.
type WebPushSubscription struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}
