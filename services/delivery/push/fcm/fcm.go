// Package fcm sends push notifications to Android, iOS and web devices
// through Firebase Cloud Messaging's HTTP v1 API, using the Firebase Admin
// SDK (firebase.google.com/go/v4/messaging) with a service account's
// credentials.
//
// Each Send is one message to one registration token. The SDK itself
// retries a 503 and a failed connection a few times (backing off, and
// honouring a Retry-After of up to two minutes); whatever it gives up on is
// classified here (see classify) and the caller decides what comes next.
package fcm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/messaging"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/shared/provider"
)

// Name is the provider's name in receipts, logs and metrics.
const Name = "fcm"

// Config configures the FCM provider.
type Config struct {
	// CredentialsJSON is a Google service account's key file, as the
	// Firebase console downloads it. Required, and a secret: it never
	// appears in an error or a log line.
	CredentialsJSON []byte
	// ProjectID is the Firebase project messages are sent through.
	// Defaults to the credentials' project_id.
	ProjectID string
	// Endpoint replaces FCM's API root (https://fcm.googleapis.com/v1), for
	// tests against a fake. Empty: FCM's.
	Endpoint string
}

// Format keeps the credentials out of any log line that prints the config.
func (c Config) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "fcm.Config{CredentialsJSON: [redacted], ProjectID: %q, Endpoint: %q}", c.ProjectID, c.Endpoint)
}

// LogValue keeps the credentials out of structured logs.
func (c Config) LogValue() slog.Value { return slog.StringValue(fmt.Sprint(c)) }

// serviceAccount is what New reads of the credentials to check them: the
// SDK's own errors about a bad key file may quote it.
type serviceAccount struct {
	Type        string `json:"type"`
	ProjectID   string `json:"project_id"`
	ClientEmail string `json:"client_email"`
	PrivateKey  string `json:"private_key"`
	TokenURI    string `json:"token_uri"`
}

// scopes are the OAuth scopes sending a message needs.
var scopes = []string{"https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/firebase.messaging"}

// Sender sends FCM messages.
type Sender struct {
	project string
	// tokens is the SDK's token source too: Send fetches the token first,
	// so that refused credentials are told from a failed send (the SDK
	// flattens a token failure into an unknown network error, and retries
	// it).
	tokens oauth2.TokenSource
	client *messaging.Client
}

// New checks cfg and returns a sender. It makes no request: the first
// Send fetches the OAuth token.
func New(ctx context.Context, cfg Config) (*Sender, error) {
	account, err := readServiceAccount(cfg.CredentialsJSON)
	if err != nil {
		return nil, fmt.Errorf("fcm: %w", err)
	}
	project := strings.TrimSpace(cfg.ProjectID)
	if project == "" {
		project = account.ProjectID
	}
	if project == "" {
		return nil, errors.New("fcm: ProjectID is required (the credentials name no project_id)")
	}
	jwtConfig, err := google.JWTConfigFromJSON(cfg.CredentialsJSON, scopes...)
	if err != nil {
		return nil, fmt.Errorf("fcm: CredentialsJSON: %w", err)
	}
	// The token source outlives ctx: it fetches tokens for every Send.
	tokens := jwtConfig.TokenSource(context.Background())
	opts := []option.ClientOption{option.WithTokenSource(tokens)}
	if cfg.Endpoint != "" {
		if u, err := url.Parse(cfg.Endpoint); err != nil || u.Host == "" {
			return nil, fmt.Errorf("fcm: Endpoint %q is not an absolute URL", cfg.Endpoint)
		}
		opts = append(opts, option.WithEndpoint(strings.TrimRight(cfg.Endpoint, "/")))
	}
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: project}, opts...)
	if err != nil {
		return nil, fmt.Errorf("fcm: project %s: %w", project, err)
	}
	client, err := app.Messaging(ctx)
	if err != nil {
		return nil, fmt.Errorf("fcm: project %s: %w", project, err)
	}
	return &Sender{project: project, tokens: tokens, client: client}, nil
}

// readServiceAccount refuses credentials that are not a service account's
// key file. Its errors name the missing field, never a value.
func readServiceAccount(credentials []byte) (serviceAccount, error) {
	var account serviceAccount
	if len(credentials) == 0 {
		return account, errors.New("CredentialsJSON is required")
	}
	if err := json.Unmarshal(credentials, &account); err != nil {
		return account, errors.New("CredentialsJSON is not JSON") // the parser's error may quote it
	}
	switch {
	case account.Type != "service_account":
		return account, fmt.Errorf("CredentialsJSON is of type %q, not a service account's", account.Type)
	case account.ClientEmail == "":
		return account, errors.New("CredentialsJSON has no client_email")
	case account.PrivateKey == "":
		return account, errors.New("CredentialsJSON has no private_key")
	}
	return account, nil
}

// Format names the sender by its project only.
func (s *Sender) Format(f fmt.State, _ rune) { fmt.Fprintf(f, "fcm.Sender{ProjectID: %q}", s.project) }

// Send sends msg to its registration token. The receipt's message id is
// FCM's name for the message ("projects/p/messages/0:…").
func (s *Sender) Send(ctx context.Context, msg push.Message) (provider.Receipt, error) {
	if strings.TrimSpace(msg.Token) == "" {
		return provider.Receipt{}, provider.Permanentf("fcm: the message has no device token")
	}
	// Nothing has been sent yet, so an ended context is not ambiguous.
	if err := ctx.Err(); err != nil {
		return provider.Receipt{}, fmt.Errorf("fcm: not sent: %w", err)
	}
	if _, err := s.tokens.Token(); err != nil {
		return provider.Receipt{}, fmt.Errorf("fcm project %s: not sent: fetching an access token: %w", s.project, tokenFailure(err))
	}
	name, err := s.client.Send(ctx, message(msg))
	if err != nil {
		return provider.Receipt{}, fmt.Errorf("fcm project %s: %w", s.project, classify(err))
	}
	return provider.Receipt{MessageID: name}, nil
}

// message is msg as FCM's v1 message: the notification for every
// platform, the id and link as data for the app, and each platform's
// collapse key and time to live.
func message(msg push.Message) *messaging.Message {
	data := map[string]string{}
	if msg.ID != "" {
		data["id"] = msg.ID
	}
	if msg.URL != "" {
		data["url"] = msg.URL
	}
	m := &messaging.Message{
		Token:        msg.Token,
		Notification: &messaging.Notification{Title: msg.Title, Body: msg.Body},
		Data:         data,
		Android:      &messaging.AndroidConfig{CollapseKey: msg.CollapseID},
		APNS:         &messaging.APNSConfig{Headers: map[string]string{}},
		Webpush:      &messaging.WebpushConfig{Headers: map[string]string{}},
	}
	if len(data) == 0 {
		m.Data = nil
	}
	if msg.CollapseID != "" {
		m.APNS.Headers["apns-collapse-id"] = msg.CollapseID
	}
	if msg.TTL > 0 {
		ttl := msg.TTL
		m.Android.TTL = &ttl
		m.APNS.Headers["apns-expiration"] = strconv.FormatInt(time.Now().Add(msg.TTL).Unix(), 10)
		m.Webpush.Headers["TTL"] = strconv.Itoa(int(msg.TTL / time.Second))
	}
	// FCM accepts only an https link for a web notification's click.
	if strings.HasPrefix(msg.URL, "https://") {
		m.Webpush.FCMOptions = &messaging.WebpushFCMOptions{Link: msg.URL}
	}
	return m
}
