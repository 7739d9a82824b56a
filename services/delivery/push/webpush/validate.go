package webpush

import (
	"crypto/ecdh"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/webhook"
)

// authSecretSize is the size of a subscription's auth secret (RFC 8291 §3.2).
const authSecretSize = 16

// FieldError is a subscription refused for one of its fields, named as in
// the subscription's JSON ("subscription.keys.p256dh"), for a 422.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// ValidateSubscription checks a subscription before it is stored or sent
// to: an https endpoint (http too when allowPrivate) that is not a private
// address unless allowPrivate, and keys that decode to a P-256 public key
// and a 16-byte auth secret. A host name is checked again, after
// resolution, when the request is made.
func ValidateSubscription(sub push.Subscription, allowPrivate bool) error {
	if err := checkEndpoint(sub.Endpoint, allowPrivate); err != nil {
		return &FieldError{Field: "subscription.endpoint", Err: err}
	}
	p256dh, err := decodeKey(sub.Keys.P256dh)
	if err == nil {
		_, err = ecdh.P256().NewPublicKey(p256dh)
	}
	if err != nil {
		return &FieldError{Field: "subscription.keys.p256dh", Err: errors.New("must be an uncompressed P-256 public key, base64url")}
	}
	auth, err := decodeKey(sub.Keys.Auth)
	if err != nil || len(auth) != authSecretSize {
		return &FieldError{Field: "subscription.keys.auth", Err: fmt.Errorf("must be %d bytes, base64url", authSecretSize)}
	}
	return nil
}

// checkEndpoint refuses an endpoint a push could not, or must not, go to.
// Its errors never quote the URL: its path is the subscription's
// capability.
func checkEndpoint(endpoint string, allowPrivate bool) error {
	u, err := url.Parse(endpoint)
	switch {
	case endpoint == "":
		return errors.New("is required")
	case err != nil || u.Host == "" || u.User != nil:
		return errors.New("is not an absolute URL without credentials")
	case u.Scheme != "https" && !(allowPrivate && u.Scheme == "http"):
		return fmt.Errorf("must be https, not %q", u.Scheme)
	case allowPrivate:
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("%w: %s is loopback", webhook.ErrPrivateNetwork, host)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return webhook.CheckAddress(ip)
	}
	return nil
}
