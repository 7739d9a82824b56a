package vault

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/shared/event"
)

// The provider types a tenant can bring an account for.
const (
	TypeSES      = "ses"
	TypeSendGrid = "sendgrid"
	TypeSMTP     = "smtp"
	TypeTwilio   = "twilio"
	TypeAWSSMS   = "awssms"
	TypeFCM      = "fcm"
	TypeAPNs     = "apns"
	TypeWebPush  = "webpush"
)

// Types are the provider types a credential can be for.
var Types = []string{TypeSES, TypeSendGrid, TypeSMTP, TypeTwilio, TypeAWSSMS, TypeFCM, TypeAPNs, TypeWebPush}

// ChannelsOf are the channels an account of a provider type sends on:
// which of a tenant's chains may name it.
func ChannelsOf(typ string) []event.Channel {
	switch typ {
	case TypeSES, TypeSendGrid, TypeSMTP:
		return []event.Channel{event.ChannelEmail}
	case TypeTwilio:
		return []event.Channel{event.ChannelSMS, event.ChannelWhatsApp}
	case TypeAWSSMS:
		return []event.Channel{event.ChannelSMS}
	case TypeFCM, TypeAPNs, TypeWebPush:
		return []event.Channel{event.ChannelPush}
	}
	return nil
}

// TLSModes are the SMTP TLS modes (see the smtp provider); "" means
// mandatory.
var TLSModes = []string{"", "mandatory", "opportunistic", "implicit", "none"}

// Secret is a secret part of a credential: an API key, a password, an AWS
// key. However it is printed — fmt with any verb, slog, JSON — it shows its
// masked preview only; Reveal is the one way to the plaintext, for the code
// that builds a provider at send time.
type Secret struct{ value string }

// NewSecret wraps a plaintext secret.
func NewSecret(plaintext string) Secret { return Secret{value: plaintext} }

// Reveal is the plaintext. Call it only to hand the secret to a provider.
func (s Secret) Reveal() string { return s.value }

// IsZero says whether the secret is empty.
func (s Secret) IsZero() bool { return s.value == "" }

// previewMinLength is the shortest secret whose last 4 characters the
// preview shows: of a short password, 4 characters are too many to give away.
const previewMinLength = 16

// Preview is the masked secret: "****" then its last 4 characters, or
// "****" alone for a secret shorter than 16 characters, "" for none.
func (s Secret) Preview() string {
	switch n := utf8.RuneCountInString(s.value); {
	case n == 0:
		return ""
	case n < previewMinLength:
		return "****"
	default:
		r := []rune(s.value)
		return "****" + string(r[n-4:])
	}
}

// String is the preview.
func (s Secret) String() string { return s.Preview() }

// GoString is the preview, quoted, for %#v.
func (s Secret) GoString() string { return fmt.Sprintf("vault.Secret(%q)", s.Preview()) }

// Format prints the preview whatever the verb: without it, %d or %x of a
// struct holding a Secret would print the plaintext.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(s.GoString()))
		return
	}
	_, _ = f.Write([]byte(s.Preview()))
}

// LogValue logs the preview.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.Preview()) }

// MarshalJSON writes the preview.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.Preview()) }

// Credential is a tenant's account with one provider, decrypted: what Get
// returns and Put takes. Printed, logged or marshalled, its secrets show as
// previews only.
type Credential struct {
	// Name is the provider's name in the tenant's chain, a KV key token:
	// letters, digits, '-' and '_'. Required.
	Name string `json:"name"`
	// Type is ses, sendgrid, smtp (email), twilio (SMS and WhatsApp),
	// awssms (SMS), fcm, apns or webpush (push). Required.
	Type string `json:"type"`
	// Endpoint replaces the API's base URL (every type but smtp).
	Endpoint string `json:"endpoint,omitempty"`

	// Region of SES or Amazon SMS. Required for ses and awssms.
	Region string `json:"region,omitempty"`
	// AccessKeyID and SecretAccessKey sign AWS requests. Required for ses
	// and awssms. An access key id is not secret in AWS's model; it is
	// sealed anyway.
	AccessKeyID     Secret `json:"access_key_id,omitzero"`
	SecretAccessKey Secret `json:"secret_access_key,omitzero"`

	// APIKey authenticates to SendGrid. Required for sendgrid.
	APIKey Secret `json:"api_key,omitzero"`
	// WebhookPublicKey verifies the account's signed Event Webhook posted
	// to /v1/inbound/sendgrid/<tenant>/<name>: base64 DER, as SendGrid
	// shows it. Not secret. Optional for sendgrid.
	WebhookPublicKey string `json:"webhook_public_key,omitempty"`

	// SNSTopics are the SNS topics (ARNs) the account's SES events reach
	// /v1/inbound/ses/<tenant>/<name> through; messages from other topics
	// are refused. Optional for ses.
	SNSTopics []string `json:"sns_topics,omitempty"`

	// Host and Port of the SMTP server (Host required for smtp; the port
	// defaults as the smtp provider says).
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	// Username and Password, together, enable SMTP AUTH.
	Username string `json:"username,omitempty"`
	Password Secret `json:"password,omitzero"`
	// TLS is mandatory (when empty), opportunistic, implicit or none.
	TLS string `json:"tls,omitempty"`

	// AccountSID and AuthToken authenticate to Twilio. Required for twilio.
	AccountSID string `json:"account_sid,omitempty"`
	AuthToken  Secret `json:"auth_token,omitzero"`
	// From is the Twilio sender number (E.164, without "whatsapp:");
	// MessagingServiceSID lets Twilio pick one from the service's pool.
	// One of them is required for twilio.
	From                string `json:"from,omitempty"`
	MessagingServiceSID string `json:"messaging_service_sid,omitempty"`

	// OriginationIdentity is the Amazon SMS sender (phone number, sender
	// id or pool); ConfigurationSet receives its events. Both optional.
	OriginationIdentity string `json:"origination_identity,omitempty"`
	ConfigurationSet    string `json:"configuration_set,omitempty"`

	// ServiceAccount is a Google service account's key file (JSON), which
	// names the Firebase project. Required for fcm.
	ServiceAccount Secret `json:"service_account,omitzero"`

	// AuthKey is the APNs .p8 key (PEM); APNsKeyID its id, TeamID the
	// Apple developer team and Topic the app's bundle id. All required for
	// apns. Production sends to APNs production rather than the sandbox.
	// The endpoint, for apns, replaces APNs' host.
	AuthKey    Secret `json:"auth_key,omitzero"`
	APNsKeyID  string `json:"apns_key_id,omitempty"`
	TeamID     string `json:"team_id,omitempty"`
	Topic      string `json:"topic,omitempty"`
	Production bool   `json:"production,omitempty"`

	// VAPIDPublicKey and VAPIDPrivateKey are the Web Push key pair
	// (base64url, P-256), and Contact the address push services may reach
	// the sender at (mailto: or https:). All required for webpush; the
	// public key is the one the tenant's pages subscribe with.
	VAPIDPublicKey  string `json:"vapid_public_key,omitempty"`
	VAPIDPrivateKey Secret `json:"vapid_private_key,omitzero"`
	Contact         string `json:"contact,omitempty"`

	// CreatedAt and UpdatedAt are set by the store.
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// ValidName reports whether s can name a provider: it is a KV key token
// under the same rule as a tenant id.
func ValidName(s string) bool { return event.ValidTenant(s) }

// Secret is the credential's main secret, the one its preview shows: the
// SES or Amazon SMS secret access key, the SendGrid API key, the Twilio
// auth token, the SMTP password, the FCM service account's or the APNs
// private key, the VAPID private key.
func (c Credential) Secret() Secret {
	switch c.Type {
	case TypeSES, TypeAWSSMS:
		return c.SecretAccessKey
	case TypeSendGrid:
		return c.APIKey
	case TypeTwilio:
		return c.AuthToken
	case TypeFCM, TypeAPNs:
		return c.pushKey()
	case TypeWebPush:
		return c.VAPIDPrivateKey
	}
	return c.Password
}

// Validate checks that the credential has what its type needs and nothing
// another type takes. Errors name the field, never a secret.
func (c Credential) Validate() error {
	if !ValidName(c.Name) {
		return fmt.Errorf("name: %q is not a provider name (1 to 64 letters, digits, '-' or '_')", c.Name)
	}
	var problems []error
	add := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }
	want := map[string]bool{}
	switch c.Type {
	case TypeSES, TypeAWSSMS:
		want = map[string]bool{"endpoint": true, "region": true, "access_key_id": true, "secret_access_key": true}
		if c.Type == TypeAWSSMS {
			want["origination_identity"], want["configuration_set"] = true, true
		} else {
			want["sns_topics"] = true
		}
		for _, arn := range c.SNSTopics {
			if !strings.HasPrefix(arn, "arn:aws") || strings.Count(arn, ":") != 5 {
				add("sns_topics: %q is not a topic ARN (arn:aws:sns:<region>:<account>:<topic>)", arn)
			}
		}
		if c.Region == "" {
			add("region: is required for %s", c.Type)
		}
		if c.AccessKeyID.IsZero() || c.SecretAccessKey.IsZero() {
			add("access_key_id, secret_access_key: both are required for %s", c.Type)
		}
	case TypeTwilio:
		want = map[string]bool{"endpoint": true, "account_sid": true, "auth_token": true, "from": true, "messaging_service_sid": true}
		if c.AccountSID == "" || c.AuthToken.IsZero() {
			add("account_sid, auth_token: both are required for twilio")
		}
		if c.From == "" && c.MessagingServiceSID == "" {
			add("from, messaging_service_sid: one is required for twilio")
		}
	case TypeSendGrid:
		want = map[string]bool{"endpoint": true, "api_key": true, "webhook_public_key": true}
		if c.APIKey.IsZero() {
			add("api_key: is required for sendgrid")
		}
		if c.WebhookPublicKey != "" && !publicKey(c.WebhookPublicKey) {
			add("webhook_public_key: is not a base64 DER ECDSA public key (SendGrid shows it beside Signed Event Webhook)")
		}
	case TypeSMTP:
		want = map[string]bool{"host": true, "port": true, "username": true, "password": true, "tls": true}
		if c.Host == "" {
			add("host: is required for smtp")
		}
		if (c.Username == "") != c.Password.IsZero() {
			add("username, password: give both (SMTP AUTH) or neither")
		}
		if c.Port < 0 || c.Port > 65535 {
			add("port: %d is not a port", c.Port)
		}
		if !slices.Contains(TLSModes, c.TLS) {
			add("tls: %q is not one of mandatory, opportunistic, implicit, none", c.TLS)
		}
	case TypeFCM, TypeAPNs, TypeWebPush:
		want = c.pushProblems(add)
	default:
		return fmt.Errorf("type: %q is not a provider type (want one of %v)", c.Type, Types)
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("endpoint: %q is not an http(s) URL", c.Endpoint)
		}
	}
	for _, f := range c.fieldsSet() {
		if f.set && !want[f.name] {
			add("%s: is not used by %s", f.name, c.Type)
		}
	}
	for _, s := range c.settings() {
		if err := event.CheckText(s.value); err != nil {
			add("%s: %v", s.name, err)
		}
	}
	return errors.Join(problems...)
}

// setting is one of a credential's settings: what is not secret, and is
// listed (Info) in tables and pages.
type setting struct{ name, value string }

func (c Credential) settings() []setting {
	out := []setting{{"endpoint", c.Endpoint}, {"region", c.Region}, {"webhook_public_key", c.WebhookPublicKey},
		{"host", c.Host}, {"username", c.Username}, {"tls", c.TLS}, {"account_sid", c.AccountSID}, {"from", c.From},
		{"messaging_service_sid", c.MessagingServiceSID}, {"origination_identity", c.OriginationIdentity},
		{"configuration_set", c.ConfigurationSet}, {"apns_key_id", c.APNsKeyID}, {"team_id", c.TeamID},
		{"topic", c.Topic}, {"vapid_public_key", c.VAPIDPublicKey}, {"contact", c.Contact}}
	for i, arn := range c.SNSTopics {
		out = append(out, setting{fmt.Sprintf("sns_topics[%d]", i), arn})
	}
	return out
}

type fieldSet struct {
	name string
	set  bool
}

func (c Credential) fieldsSet() []fieldSet {
	return []fieldSet{
		{"endpoint", c.Endpoint != ""}, {"region", c.Region != ""},
		{"access_key_id", !c.AccessKeyID.IsZero()}, {"secret_access_key", !c.SecretAccessKey.IsZero()},
		{"api_key", !c.APIKey.IsZero()}, {"webhook_public_key", c.WebhookPublicKey != ""},
		{"sns_topics", len(c.SNSTopics) > 0},
		{"host", c.Host != ""}, {"port", c.Port != 0}, {"username", c.Username != ""},
		{"password", !c.Password.IsZero()}, {"tls", c.TLS != ""},
		{"account_sid", c.AccountSID != ""}, {"auth_token", !c.AuthToken.IsZero()},
		{"from", c.From != ""}, {"messaging_service_sid", c.MessagingServiceSID != ""},
		{"origination_identity", c.OriginationIdentity != ""}, {"configuration_set", c.ConfigurationSet != ""},
		{"service_account", !c.ServiceAccount.IsZero()}, {"auth_key", !c.AuthKey.IsZero()},
		{"apns_key_id", c.APNsKeyID != ""}, {"team_id", c.TeamID != ""}, {"topic", c.Topic != ""},
		{"production", c.Production}, {"vapid_public_key", c.VAPIDPublicKey != ""},
		{"vapid_private_key", !c.VAPIDPrivateKey.IsZero()}, {"contact", c.Contact != ""},
	}
}

// Info is what List shows of a credential: its settings, which key seals
// it and its masked preview — never a secret.
type Info struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Endpoint string `json:"endpoint,omitempty"`
	Region   string `json:"region,omitempty"`
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port,omitempty"`
	Username string `json:"username,omitempty"`
	TLS      string `json:"tls,omitempty"`

	WebhookPublicKey    string   `json:"webhook_public_key,omitempty"`
	SNSTopics           []string `json:"sns_topics,omitempty"`
	AccountSID          string   `json:"account_sid,omitempty"`
	From                string   `json:"from,omitempty"`
	MessagingServiceSID string   `json:"messaging_service_sid,omitempty"`
	OriginationIdentity string   `json:"origination_identity,omitempty"`
	ConfigurationSet    string   `json:"configuration_set,omitempty"`

	ProjectID      string `json:"project_id,omitempty"`
	APNsKeyID      string `json:"apns_key_id,omitempty"`
	TeamID         string `json:"team_id,omitempty"`
	Topic          string `json:"topic,omitempty"`
	Production     bool   `json:"production,omitempty"`
	VAPIDPublicKey string `json:"vapid_public_key,omitempty"`
	Contact        string `json:"contact,omitempty"`

	Preview   string    `json:"preview"`
	KeyID     string    `json:"key_id"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// publicKey says whether s is base64 of a DER ECDSA public key.
func publicKey(s string) bool {
	der, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return false
	}
	k, err := x509.ParsePKIXPublicKey(der)
	_, ok := k.(*ecdsa.PublicKey)
	return err == nil && ok
}
