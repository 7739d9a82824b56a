// Package apns sends push notifications to Apple devices through the Apple
// Push Notification service's HTTP/2 provider API, with token (.p8)
// authentication, using sideshow/apns2.
//
// The .p8 key signs a short-lived JWT (ES256, kid = key id, iss = team
// id) that apns2 renews before APNs would call it expired. Each Send is
// one request; whether to retry is the caller's decision, made from the
// classified error (see classify).
package apns

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sideshow/apns2"
	"github.com/sideshow/apns2/payload"
	"github.com/sideshow/apns2/token"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/shared/provider"
)

// Name is the provider's name in receipts, logs and metrics.
const Name = "apns"

// DefaultTTL is how long APNs keeps a message for a device that is
// offline, when neither the message nor the config says.
const DefaultTTL = 24 * time.Hour

// URLKey is the custom payload key the app reads the deep link from.
const URLKey = "url"

// IDKey is the custom payload key that carries the notification id.
const IDKey = "id"

// Config configures the APNs provider.
type Config struct {
	// KeyID is the .p8 key's id (ten characters, from the Apple developer
	// account). Required.
	KeyID string
	// TeamID is the Apple developer team id. Required.
	TeamID string
	// AuthKey is the .p8 key: a PEM PKCS#8 P-256 private key. Required,
	// and a secret: it never appears in an error or a log line.
	AuthKey string
	// Topic is the app's bundle id. Required.
	Topic string
	// Production sends to APNs production; otherwise to the sandbox that
	// development builds register with. Defaults to false.
	Production bool
	// Host replaces the APNs endpoint, for tests. Defaults to APNs
	// production or sandbox, as Production says.
	Host string
	// Transport replaces apns2's HTTP/2 transport, for tests that must
	// trust a fake's certificate. Defaults to apns2's.
	Transport http.RoundTripper
	// TTL is the default time APNs keeps a message. Defaults to DefaultTTL.
	TTL time.Duration
	// Timeout bounds one request. Defaults to apns2's (60s).
	Timeout time.Duration
}

// Format keeps the .p8 key out of any log line that prints the config.
func (c Config) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "apns.Config{KeyID: %q, TeamID: %q, AuthKey: [redacted], Topic: %q, Production: %t, Host: %q, TTL: %s}",
		c.KeyID, c.TeamID, c.Topic, c.Production, c.Host, c.TTL)
}

// LogValue keeps the .p8 key out of structured logs.
func (c Config) LogValue() slog.Value { return slog.StringValue(fmt.Sprint(c)) }

// Sender sends APNs notifications.
type Sender struct {
	client *apns2.Client
	topic  string
	ttl    time.Duration
	host   string
}

// New checks cfg and returns a sender. It makes no request.
func New(cfg Config) (*Sender, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("apns: %w", err)
	}
	key, err := authKey(cfg.AuthKey)
	if err != nil {
		return nil, fmt.Errorf("apns: %w", err)
	}
	tok := &token.Token{AuthKey: key, KeyID: strings.TrimSpace(cfg.KeyID), TeamID: strings.TrimSpace(cfg.TeamID)}
	client := apns2.NewTokenClient(tok)
	client.Host = host(cfg)
	if cfg.Transport != nil {
		client.HTTPClient.Transport = cfg.Transport
	}
	if cfg.Timeout > 0 {
		client.HTTPClient.Timeout = cfg.Timeout
	}
	ttl := cfg.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Sender{client: client, topic: strings.TrimSpace(cfg.Topic), ttl: ttl, host: client.Host}, nil
}

// Format keeps the .p8 key out of any log line that prints the sender.
func (s *Sender) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "apns.Sender{Host: %q, Topic: %q}", s.host, s.topic)
}

func (c Config) validate() error {
	switch {
	case strings.TrimSpace(c.KeyID) == "":
		return errors.New("KeyID is required")
	case strings.TrimSpace(c.TeamID) == "":
		return errors.New("TeamID is required")
	case strings.TrimSpace(c.AuthKey) == "":
		return errors.New("AuthKey is required")
	case strings.TrimSpace(c.Topic) == "":
		return errors.New("Topic (the app's bundle id) is required")
	}
	if c.Host != "" {
		if u, err := url.Parse(c.Host); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("Host %q must be an https URL", c.Host)
		}
	}
	return nil
}

// authKey reads the .p8 key. Its errors never quote it, nor the parser's
// words about it.
func authKey(pem string) (*ecdsa.PrivateKey, error) {
	key, err := token.AuthKeyFromBytes([]byte(strings.TrimSpace(pem)))
	switch {
	case errors.Is(err, token.ErrAuthKeyNotPem):
		return nil, errors.New("AuthKey is not PEM (a .p8 file's contents)")
	case err != nil:
		return nil, errors.New("AuthKey is not a PKCS#8 ECDSA private key")
	case key.Curve != elliptic.P256():
		// apns2 ignores a failure to sign its provider token, so a key
		// ES256 cannot sign with is refused here, not at every send.
		return nil, errors.New("AuthKey is not a P-256 key, as ES256 needs")
	}
	return key, nil
}

func host(cfg Config) string {
	switch {
	case cfg.Host != "":
		return strings.TrimSuffix(cfg.Host, "/")
	case cfg.Production:
		return apns2.HostProduction
	}
	return apns2.HostDevelopment
}

// Send posts msg to APNs for its device token. The receipt's message id is
// the apns-id APNs answered with.
func (s *Sender) Send(ctx context.Context, msg push.Message) (provider.Receipt, error) {
	if err := ValidateToken(msg.Token); err != nil {
		return provider.Receipt{}, provider.Permanent(fmt.Errorf("apns: %w", err))
	}
	// Nothing has been sent yet, so an ended context is not ambiguous.
	if err := ctx.Err(); err != nil {
		return provider.Receipt{}, fmt.Errorf("apns: not sent: %w", err)
	}
	resp, err := s.client.PushWithContext(ctx, s.notification(msg, time.Now()))
	if err != nil {
		return provider.Receipt{}, fmt.Errorf("apns: %w", provider.NetworkError(withoutToken(err)))
	}
	if err := classify(resp.StatusCode, resp.Reason, resp.Timestamp.Time); err != nil {
		return provider.Receipt{}, fmt.Errorf("apns: %w", err)
	}
	return provider.Receipt{MessageID: resp.ApnsID}, nil
}

// notification is msg as APNs takes it: an alert, at once, kept for the
// TTL, its apns-id derived from the notification id.
func (s *Sender) notification(msg push.Message, now time.Time) *apns2.Notification {
	ttl := msg.TTL
	if ttl <= 0 {
		ttl = s.ttl
	}
	body := payload.NewPayload().AlertTitle(msg.Title).AlertBody(msg.Body)
	if msg.URL != "" {
		body.Custom(URLKey, msg.URL)
	}
	if msg.ID != "" {
		body.Custom(IDKey, msg.ID)
	}
	return &apns2.Notification{
		ApnsID:      apnsID(msg.ID),
		CollapseID:  collapseID(msg.CollapseID),
		DeviceToken: msg.Token,
		Topic:       s.topic,
		Expiration:  now.Add(ttl),
		Priority:    apns2.PriorityHigh,
		PushType:    apns2.PushTypeAlert,
		Payload:     body,
	}
}

// withoutToken drops the request URL's path from a transport error: it
// ends with the device token, which identifies a person's device.
func withoutToken(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			ue.URL = u.Scheme + "://" + u.Host
		}
	}
	return err
}

// apnsID is a UUID derived from the notification id, so that every try of
// one notification carries the same apns-id; empty (APNs makes one) when
// there is no id.
func apnsID(id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x80 // version 8: a custom, name-based UUID (RFC 9562)
	u[8] = u[8]&0x3f | 0x80 // the RFC 9562 variant
	h := hex.EncodeToString(u)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// maxCollapseID is the longest apns-collapse-id APNs accepts, in bytes.
const maxCollapseID = 64

// collapseID is a collapse id as APNs takes it: as it is when it fits, or
// else a digest of it that does (APNs refuses a longer one: BadCollapseId).
func collapseID(id string) string {
	if len(id) <= maxCollapseID {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}
