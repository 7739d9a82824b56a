// Package webpush sends push notifications to browsers through Web Push
// (RFC 8030), with VAPID (RFC 8292) and the aes128gcm payload encryption of
// RFC 8291, using webpush-go.
//
// A subscription's endpoint is a URL the tenant's page handed over, so
// every request goes through the webhook channel's SSRF-guarded client
// (webhook.NewClient): no private addresses unless the caller allows them,
// no redirects, no proxy. Each Send is one request; whether to retry is the
// caller's decision, made from the classified error (see classify).
package webpush

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	webpushgo "github.com/SherClockHolmes/webpush-go"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/webhook"
	"github.com/heraldhq/herald/shared/provider"
)

// Name is the provider's name in receipts, logs and metrics.
const Name = "webpush"

// DefaultTTL is how long a push service keeps a message for a browser
// that is offline, when neither the message nor the config says.
const DefaultTTL = 24 * time.Hour

// maxAnswer bounds how much of a refusal is read, to quote from.
const maxAnswer = 64 << 10

// Config configures the Web Push provider.
type Config struct {
	// VAPIDPublicKey is the application server key pages pass to
	// pushManager.subscribe: an uncompressed P-256 point, base64url, as
	// GenerateVAPIDKeys makes it. Required.
	VAPIDPublicKey string
	// VAPIDPrivateKey signs every request's VAPID JWT. Required, and a
	// secret: it never appears in an error or a log line.
	VAPIDPrivateKey string
	// Subscriber is the contact push services may reach the sender at:
	// "mailto:ops@example.com" or an https: URL. Required.
	Subscriber string
	// TTL is the default time a push service keeps a message. Defaults to
	// DefaultTTL.
	TTL time.Duration
	// AllowPrivateNetworks lets endpoints be private addresses and plain
	// http, as herald dev allows for webhooks. Defaults to false.
	AllowPrivateNetworks bool
	// Timeout bounds one request. Defaults to the webhook client's.
	Timeout time.Duration
}

// Format keeps the private key out of any log line that prints the config.
func (c Config) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "webpush.Config{VAPIDPublicKey: %q, VAPIDPrivateKey: [redacted], Subscriber: %q, TTL: %s, AllowPrivateNetworks: %t}",
		c.VAPIDPublicKey, c.Subscriber, c.TTL, c.AllowPrivateNetworks)
}

// LogValue keeps the private key out of structured logs.
func (c Config) LogValue() slog.Value { return slog.StringValue(fmt.Sprint(c)) }

// GenerateVAPIDKeys makes a new VAPID key pair, base64url, for Config.
func GenerateVAPIDKeys() (privateKey, publicKey string, err error) {
	privateKey, publicKey, err = webpushgo.GenerateVAPIDKeys()
	if err != nil {
		return "", "", fmt.Errorf("webpush: generating a VAPID key pair: %w", err)
	}
	return privateKey, publicKey, nil
}

// Sender sends Web Push messages.
type Sender struct {
	publicKey, privateKey string
	subscriber            string
	ttl                   time.Duration
	allowPrivate          bool
	client                *http.Client
}

// New checks cfg and returns a sender.
func New(cfg Config) (*Sender, error) {
	public := strings.TrimSpace(cfg.VAPIDPublicKey)
	private := strings.TrimSpace(cfg.VAPIDPrivateKey)
	if err := checkKeyPair(public, private); err != nil {
		return nil, fmt.Errorf("webpush: %w", err)
	}
	subscriber, err := subscriberClaim(strings.TrimSpace(cfg.Subscriber))
	if err != nil {
		return nil, fmt.Errorf("webpush: %w", err)
	}
	ttl := cfg.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Sender{
		publicKey: public, privateKey: private, subscriber: subscriber, ttl: ttl,
		allowPrivate: cfg.AllowPrivateNetworks,
		client:       webhook.NewClient(webhook.ClientOptions{AllowPrivateNetworks: cfg.AllowPrivateNetworks, Timeout: cfg.Timeout}),
	}, nil
}

// Format keeps the private key out of any log line that prints the sender.
func (s *Sender) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "webpush.Sender{VAPIDPublicKey: %q}", s.publicKey)
}

// checkKeyPair refuses keys that are not a P-256 pair: a public key that
// is not the private key's would have every push service refuse every
// message (403), long after start-up.
func checkKeyPair(public, private string) error {
	switch {
	case public == "":
		return errors.New("VAPIDPublicKey is required")
	case private == "":
		return errors.New("VAPIDPrivateKey is required")
	}
	pub, err := decodeKey(public)
	if err != nil {
		return fmt.Errorf("VAPIDPublicKey is not base64url: %w", err)
	}
	if _, err := ecdh.P256().NewPublicKey(pub); err != nil {
		return errors.New("VAPIDPublicKey is not an uncompressed P-256 public key")
	}
	priv, err := decodeKey(private)
	if err != nil {
		return errors.New("VAPIDPrivateKey is not base64url") // never quote it
	}
	key, err := ecdh.P256().NewPrivateKey(priv)
	if err != nil {
		return errors.New("VAPIDPrivateKey is not a P-256 private key")
	}
	if string(key.PublicKey().Bytes()) != string(pub) {
		return errors.New("VAPIDPublicKey is not the public key of VAPIDPrivateKey")
	}
	return nil
}

// decodeKey reads base64url with or without padding, as webpush-go does.
func decodeKey(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// subscriberClaim is the contact as webpush-go takes it: it prefixes
// "mailto:" to anything that is not https:, so a "mailto:" given here
// would otherwise go out as "mailto:mailto:…".
func subscriberClaim(contact string) (string, error) {
	if address, ok := strings.CutPrefix(contact, "mailto:"); ok && strings.Contains(address, "@") {
		return address, nil
	}
	if u, err := url.Parse(contact); err == nil && u.Scheme == "https" && u.Host != "" {
		return contact, nil
	}
	return "", fmt.Errorf("Subscriber %q must be a mailto: address or an https: URL", contact)
}

// Payload is the JSON a service worker receives in its push event.
type Payload struct {
	ID    string `json:"id,omitempty"`
	Title string `json:"title"`
	Body  string `json:"body,omitempty"`
	URL   string `json:"url,omitempty"`
	// Tag is the collapse id, for showNotification's tag: a newer
	// notification replaces the one shown with the same tag.
	Tag string `json:"tag,omitempty"`
}

// Send encrypts msg for its subscription and posts it to the
// subscription's push service. The receipt's message id is the push
// service's Location for the message, or msg.ID when it gives none.
func (s *Sender) Send(ctx context.Context, msg push.Message) (provider.Receipt, error) {
	if msg.Subscription == nil {
		return provider.Receipt{}, provider.Permanentf("webpush: the message has no subscription")
	}
	sub := *msg.Subscription
	if err := ValidateSubscription(sub, s.allowPrivate); err != nil {
		return provider.Receipt{}, provider.Permanent(fmt.Errorf("webpush: %w", err))
	}
	host := endpointHost(sub.Endpoint)
	body, err := json.Marshal(Payload{ID: msg.ID, Title: msg.Title, Body: msg.Body, URL: msg.URL, Tag: msg.CollapseID})
	if err != nil {
		return provider.Receipt{}, provider.Permanent(fmt.Errorf("webpush to %s: %w", host, err))
	}
	// Nothing has been sent yet, so an ended context is not ambiguous.
	if err := ctx.Err(); err != nil {
		return provider.Receipt{}, fmt.Errorf("webpush to %s: not sent: %w", host, err)
	}
	resp, err := webpushgo.SendNotificationWithContext(ctx, body, &webpushgo.Subscription{
		Endpoint: sub.Endpoint,
		Keys:     webpushgo.Keys{P256dh: sub.Keys.P256dh, Auth: sub.Keys.Auth},
	}, s.options(msg))
	if err != nil {
		return provider.Receipt{}, fmt.Errorf("webpush to %s: %w", host, sendFailure(err))
	}
	defer resp.Body.Close()
	return receipt(resp, msg.ID, host)
}

// options are webpush-go's options for msg.
func (s *Sender) options(msg push.Message) *webpushgo.Options {
	ttl := msg.TTL
	if ttl <= 0 {
		ttl = s.ttl
	}
	return &webpushgo.Options{
		HTTPClient:      s.client,
		Subscriber:      s.subscriber,
		VAPIDPublicKey:  s.publicKey,
		VAPIDPrivateKey: s.privateKey,
		TTL:             int(ttl / time.Second),
		Topic:           topic(msg.CollapseID),
	}
}

// sendFailure classifies an error from webpush-go: one before any request
// (a payload too large, a refused address) is permanent; any other is the
// network's. It names the endpoint by its origin only.
func sendFailure(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = origin(ue.URL)
	}
	switch {
	case errors.Is(err, webpushgo.ErrMaxPadExceeded):
		return provider.Permanent(fmt.Errorf("the payload is too large for one Web Push record: %w", err))
	case provider.IsPermanent(err):
		return err
	}
	return provider.NetworkError(err)
}

// receipt reads the push service's answer.
func receipt(resp *http.Response, id, host string) (provider.Receipt, error) {
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	if err := classify(resp.StatusCode, resp.Header, excerpt(answer)); err != nil {
		return provider.Receipt{}, fmt.Errorf("webpush to %s: %w", host, err)
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		return provider.Receipt{MessageID: loc}, nil
	}
	return provider.Receipt{MessageID: id}, nil
}

// excerpt is the start of an answer, to quote in an error.
func excerpt(answer []byte) string {
	s := strings.ToValidUTF8(strings.TrimSpace(string(answer)), "�")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// origin is an endpoint without its path, which is the subscription's
// capability.
func origin(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	return "an invalid endpoint"
}

// endpointHost names an endpoint in errors: its host only, since the path
// is the subscription's capability.
func endpointHost(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Host
	}
	return "an invalid endpoint"
}
