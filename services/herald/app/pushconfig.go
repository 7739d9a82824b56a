package app

import (
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/inbox"
)

// PushConfig is the push channel's section: a notification goes to every
// device its subscriber registered, each through its kind's provider. Each
// provider is optional; the push service needs at least one, and runs by
// default when one is configured. Secrets are never written here: they
// come from the file or environment variable named.
type PushConfig struct {
	DeliveryConfig `yaml:",inline"`
	// FCM reaches Android (and iOS apps that use Firebase) through FCM
	// HTTP v1. Defaults to none: FCM devices are not sent to.
	FCM *FCMConfig `yaml:"fcm"`
	// APNs reaches Apple devices with token (.p8) authentication. Defaults
	// to none: APNs devices are not sent to.
	APNs *APNsConfig `yaml:"apns"`
	// WebPush reaches browsers through their push services (VAPID).
	// Defaults to none (herald dev makes and keeps a key pair).
	WebPush *WebPushConfig `yaml:"webpush"`
}

// FCMConfig is the FCM provider.
type FCMConfig struct {
	// CredentialsFile is the Google service account's key file (JSON), as
	// the Firebase console downloads it. Required, or CredentialsEnv.
	CredentialsFile string `yaml:"credentials_file"`
	// CredentialsEnv names the variable holding the key file's contents,
	// instead of CredentialsFile.
	CredentialsEnv string `yaml:"credentials_env"`
	// ProjectID is the Firebase project sent through. Defaults to the
	// credentials' project_id.
	ProjectID string `yaml:"project_id"`
	// Endpoint replaces FCM's API root, for an emulator. Defaults to FCM's.
	Endpoint string `yaml:"endpoint"`
}

// APNsConfig is the APNs provider.
type APNsConfig struct {
	// KeyFile is the .p8 signing key from the Apple developer account.
	// Required, or KeyEnv.
	KeyFile string `yaml:"key_file"`
	// KeyEnv names the variable holding the .p8 key, instead of KeyFile.
	KeyEnv string `yaml:"key_env"`
	// KeyID is the .p8 key's id (ten characters). Required.
	KeyID string `yaml:"key_id"`
	// TeamID is the Apple developer team id. Required.
	TeamID string `yaml:"team_id"`
	// Topic is the app's bundle id. Required.
	Topic string `yaml:"topic"`
	// Production sends to APNs production; otherwise to the sandbox that
	// development builds register with. Defaults to false.
	Production bool `yaml:"production"`
	// Host replaces the APNs endpoint (https://…), for a test server.
	// Defaults to production or sandbox, as Production says.
	Host string `yaml:"host"`
}

// WebPushConfig is the Web Push provider.
type WebPushConfig struct {
	// VAPIDPublicKey is the application server key pages pass to
	// pushManager.subscribe (base64url; GET /v1/inbox/vapid-public-key
	// serves it). Required.
	VAPIDPublicKey string `yaml:"vapid_public_key"`
	// VAPIDPrivateKeyFile is a file holding the key pair's private half
	// (base64url). Required, or VAPIDPrivateKeyEnv.
	VAPIDPrivateKeyFile string `yaml:"vapid_private_key_file"`
	// VAPIDPrivateKeyEnv names the variable holding the private key,
	// instead of VAPIDPrivateKeyFile.
	VAPIDPrivateKeyEnv string `yaml:"vapid_private_key_env"`
	// Contact is where push services may reach the sender:
	// mailto:ops@example.com or an https: URL. Required.
	Contact string `yaml:"contact"`
	// TTL is how long a push service keeps a message for an offline
	// browser. Defaults to 24h.
	TTL time.Duration `yaml:"ttl"`
}

// InboxConfig is the inbox channel's section: each subscriber's in-app
// feed.
type InboxConfig struct {
	// Enabled puts the inbox channel in the deployment: the router sends
	// routes' inbox recipients to it, and `herald run` runs its workers.
	// Defaults to true.
	Enabled        *bool `yaml:"enabled"`
	DeliveryConfig `yaml:",inline"`
	// Retention is how long an item is kept after it was written.
	// Defaults to 90 days (2160h).
	Retention time.Duration `yaml:"retention"`
	// MaxItems caps each subscriber's feed: beyond it, the oldest items go
	// first (archived ones before the others). Defaults to 1000.
	MaxItems int `yaml:"max_items"`
}

// Inbox defaults.
const (
	DefaultInboxRetention = 90 * 24 * time.Hour
	DefaultInboxMaxItems  = 1000
)

func (c InboxConfig) withDefaults() InboxConfig {
	if c.Enabled == nil {
		on := true
		c.Enabled = &on
	}
	if c.Retention == 0 {
		c.Retention = DefaultInboxRetention
	}
	if c.MaxItems == 0 {
		c.MaxItems = DefaultInboxMaxItems
	}
	return c
}

// On says whether the inbox channel is in the deployment (inbox.enabled,
// on unless set false).
func (c InboxConfig) On() bool { return c.Enabled == nil || *c.Enabled }

func (c InboxConfig) problems(running bool) []string {
	var problems []string
	if running && !c.On() {
		problems = append(problems, "inbox: the inbox service runs, but inbox.enabled is false: the router sends it nothing")
	}
	if c.Retention < 0 {
		problems = append(problems, fmt.Sprintf("inbox.retention: must not be negative (got %s)", c.Retention))
	}
	if c.MaxItems < 0 || c.MaxItems > inbox.MaxCap {
		problems = append(problems, fmt.Sprintf("inbox.max_items: %d is not a number of items from 1 to %d", c.MaxItems, inbox.MaxCap))
	}
	return problems
}

// Configured says whether any push provider is configured.
func (c PushConfig) Configured() bool { return c.FCM != nil || c.APNs != nil || c.WebPush != nil }

// problems are what is wrong with push:, told without reading a secret:
// each field by its name in the file. running says the push service runs
// in this process, which needs a provider.
func (c PushConfig) problems(running bool) []string {
	var problems []string
	if running && !c.Configured() {
		problems = append(problems, "push: the push service needs a provider: configure push.fcm, push.apns or push.webpush")
	}
	if f := c.FCM; f != nil {
		problems = append(problems, secretProblem("push.fcm.credentials", f.CredentialsFile, f.CredentialsEnv)...)
	}
	if a := c.APNs; a != nil {
		problems = append(problems, secretProblem("push.apns.key", a.KeyFile, a.KeyEnv)...)
		with := secretField("push.apns.key", a.KeyFile, a.KeyEnv)
		problems = append(problems, requiredWith(with, map[string]string{"push.apns.key_id": a.KeyID, "push.apns.team_id": a.TeamID,
			"push.apns.topic": a.Topic}, "push.apns.key_id", "push.apns.team_id", "push.apns.topic")...)
		if a.Host != "" && !strings.HasPrefix(a.Host, "https://") {
			problems = append(problems, fmt.Sprintf("push.apns.host: %q must be an https:// URL", a.Host))
		}
	}
	if w := c.WebPush; w != nil {
		problems = append(problems, secretProblem("push.webpush.vapid_private_key", w.VAPIDPrivateKeyFile, w.VAPIDPrivateKeyEnv)...)
		with := secretField("push.webpush.vapid_private_key", w.VAPIDPrivateKeyFile, w.VAPIDPrivateKeyEnv)
		problems = append(problems, requiredWith(with, map[string]string{"push.webpush.vapid_public_key": w.VAPIDPublicKey,
			"push.webpush.contact": w.Contact}, "push.webpush.vapid_public_key", "push.webpush.contact")...)
		if ct := w.Contact; ct != "" && !strings.HasPrefix(ct, "mailto:") && !strings.HasPrefix(ct, "https://") {
			problems = append(problems, fmt.Sprintf("push.webpush.contact: %q must be mailto:address or an https:// URL", ct))
		}
		if w.TTL < 0 {
			problems = append(problems, fmt.Sprintf("push.webpush.ttl: must not be negative (got %s)", w.TTL))
		}
	}
	return problems
}

// secretProblem says a secret given by file or environment variable is
// missing, or given both ways (which of the two would win is a guess).
func secretProblem(field, file, env string) []string {
	switch {
	case file == "" && env == "":
		return []string{fmt.Sprintf("%s_file: required (or %s_env)", field, field[strings.LastIndex(field, ".")+1:])}
	case file != "" && env != "":
		return []string{fmt.Sprintf("%s_file: and %s_env name the secret twice: give one", field, field)}
	}
	return nil
}

// secretField is the field a secret was given in, for the fields required
// with it.
func secretField(field, file, env string) string {
	if env != "" && file == "" {
		return field + "_env"
	}
	return field + "_file"
}

// requiredWith names each of fields (in order) left empty in values.
func requiredWith(with string, values map[string]string, fields ...string) []string {
	var problems []string
	for _, f := range fields {
		if strings.TrimSpace(values[f]) == "" {
			problems = append(problems, fmt.Sprintf("%s: required with %s", f, with))
		}
	}
	return problems
}
