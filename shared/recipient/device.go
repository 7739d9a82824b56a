package recipient

import (
	"crypto/ecdh"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"
)

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

// The bounds of a device's fields.
const (
	// MaxDevices is the most devices a subscriber has: a 21st new one is
	// refused, not another dropped, so the publisher chooses which to forget.
	MaxDevices = 20
	// MaxFCMToken is the longest FCM registration token: Google documents
	// none but a cookie's 4 KiB, and asks that the format not be checked
	// beyond its characters.
	MaxFCMToken = 4096
	// MinAPNsToken and MaxAPNsToken bound an APNs device token in hex
	// digits: 32 bytes today, longer allowed for the day Apple lengthens it.
	MinAPNsToken, MaxAPNsToken = 64, 200
	// MaxEndpoint is the longest Web Push endpoint.
	MaxEndpoint = 2048
)

var (
	fcmToken  = regexp.MustCompile(`^[A-Za-z0-9_:-]+$`)
	apnsToken = regexp.MustCompile(`^[0-9A-Fa-f]+$`)
)

// Validate says what is wrong with d, one problem a field, each named as
// the API names it (subscription.keys.p256dh).
func (d Device) Validate() error {
	var p problems
	p.check("id", CheckID(d.ID))
	p.check("subscriber", CheckID(d.Subscriber))
	switch d.Kind {
	case DeviceFCM, DeviceAPNs:
		p.check("token", checkToken(d.Kind, d.Token))
		if d.Subscription != nil {
			p.add("subscription", "only a webpush device has one; a %s device has a token", d.Kind)
		}
	case DeviceWebPush:
		if d.Token != "" {
			p.add("token", "a webpush device has a subscription, not a token")
		}
		if d.Subscription == nil {
			p.add("subscription", "required for a webpush device")
		} else {
			d.Subscription.check(&p)
		}
	default:
		p.add("kind", "%s is not one of fcm, apns, webpush", quote(string(d.Kind)))
	}
	p.check("locale", CheckLocale(d.Locale))
	return p.err()
}

// checkToken says what keeps token from being a device token of kind.
func checkToken(kind DeviceKind, token string) error {
	switch {
	case token == "":
		return fmt.Errorf("required for a %s device", kind)
	case kind == DeviceFCM && len(token) > MaxFCMToken:
		return fmt.Errorf("%d characters, more than an FCM registration token's %d", len(token), MaxFCMToken)
	case kind == DeviceFCM && !fcmToken.MatchString(token):
		return errors.New("an FCM registration token holds only letters, digits, '_', ':' and '-'")
	case kind == DeviceAPNs && !apnsToken.MatchString(token):
		return errors.New("an APNs device token is hex digits")
	case kind == DeviceAPNs && (len(token) < MinAPNsToken || len(token) > MaxAPNsToken):
		return fmt.Errorf("%d hex digits; an APNs device token has %d to %d", len(token), MinAPNsToken, MaxAPNsToken)
	}
	return nil
}

// check adds what is wrong with s to p: the endpoint must be an https URL
// with a host (http on loopback), and the keys those RFC 8291 encrypts to —
// a P-256 public key, uncompressed, and a 16-byte authentication secret.
func (s WebPushSubscription) check(p *problems) {
	p.check("subscription.endpoint", checkEndpoint(s.Endpoint))
	p.check("subscription.keys.p256dh", checkP256dh(s.Keys.P256dh))
	if b, err := base64url(s.Keys.Auth); err != nil {
		p.check("subscription.keys.auth", err)
	} else if len(b) != 16 {
		p.add("subscription.keys.auth", "%d bytes; the authentication secret is 16", len(b))
	}
}

func checkEndpoint(endpoint string) error {
	if endpoint == "" {
		return errors.New("required")
	}
	if len(endpoint) > MaxEndpoint {
		return fmt.Errorf("%d bytes, more than %d", len(endpoint), MaxEndpoint)
	}
	u, err := url.Parse(endpoint)
	if err != nil || !(u.Scheme == "https" || u.Scheme == "http" && loopback(u.Hostname())) || u.Hostname() == "" || u.User != nil {
		return errors.New("an https URL with a host (and no user) is what a push service gives (http on loopback only)")
	}
	return nil
}

// loopback reports whether host is this machine, whose push service — herald
// dev's push sink — may speak plain http: no one else can read it there.
// Only a deployment that allows private networks (herald dev does) stores
// or pushes to such an endpoint; the API and the sender refuse it
// otherwise.
func loopback(host string) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.IsLoopback()
	}
	return host == "localhost"
}

func checkP256dh(key string) error {
	b, err := base64url(key)
	if err != nil {
		return err
	}
	if len(b) != 65 {
		return fmt.Errorf("%d bytes; an uncompressed P-256 public key is 65", len(b))
	}
	// NewPublicKey takes the uncompressed form only (0x04 first), and
	// checks the point is on the curve.
	if _, err := ecdh.P256().NewPublicKey(b); err != nil {
		return errors.New("not an uncompressed point on the P-256 curve")
	}
	return nil
}

// base64url decodes s as a browser's toJSON() gives it: base64url,
// unpadded (padding tolerated, for libraries that add it).
func base64url(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("required")
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, errors.New("not base64url")
	}
	return b, nil
}

// Masked is what may be shown of d's address: the token's last 8
// characters after an ellipsis, or the Web Push endpoint's origin (its
// push service). Either whole is a capability — whoever holds it can push
// to the device — so listings show only this.
func (d Device) Masked() string {
	if d.Subscription != nil {
		if u, err := url.Parse(d.Subscription.Endpoint); err == nil {
			return u.Scheme + "://" + u.Host
		}
		return ""
	}
	if d.Token == "" {
		return ""
	}
	return "…" + d.Token[max(0, len(d.Token)-8):]
}
