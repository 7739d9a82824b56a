package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
)

// Bucket is the key-value bucket declared in streams/KV_credentials.
const Bucket = "credentials"

// ErrNotFound means the tenant has no credential of that name.
var ErrNotFound = errors.New("vault: no such credential")

// ErrConflict means the credential changed since it was read.
var ErrConflict = errors.New("vault: credential changed since it was read")

var errNoKeyring = fmt.Errorf("%w: the store was opened without a keyring", ErrNoKey)

// Store keeps credentials sealed in the bucket and opens them on Get.
type Store struct {
	kv   jetstream.KeyValue
	keys *Keyring
}

// Open binds to the bucket, which streams.Apply creates. keys seals what
// Put writes and opens what Get reads; it may be nil for a store that only
// lists and deletes, which need no key.
func Open(ctx context.Context, js jetstream.JetStream, keys *Keyring) (*Store, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("vault: bucket %s: %w", Bucket, err)
	}
	return &Store{kv: kv, keys: keys}, nil
}

// BucketKey is where a tenant's credential is kept: <tenant>.<name>.
func BucketKey(tenant, name string) string { return tenant + "." + name }

// additionalData binds a sealed record to its place: opened under another
// tenant or name, it does not decrypt.
func additionalData(tenant, name string) []byte { return []byte(tenant + "\x00" + name) }

// record is what the bucket holds. Settings is a copy for List to show; Get
// uses only the sealed payload, so whoever can write the bucket but has no
// key cannot send a secret to an endpoint of their choosing.
type record struct {
	Type      string    `json:"type"`
	Settings  settings  `json:"settings"`
	Preview   string    `json:"preview,omitempty"`
	KeyID     string    `json:"key_id"`
	Sealed    []byte    `json:"sealed"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

type settings struct {
	Endpoint string `json:"endpoint,omitempty"`
	Region   string `json:"region,omitempty"`
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port,omitempty"`
	Username string `json:"username,omitempty"`
	TLS      string `json:"tls,omitempty"`

	AccountSID          string `json:"account_sid,omitempty"`
	From                string `json:"from,omitempty"`
	MessagingServiceSID string `json:"messaging_service_sid,omitempty"`
	OriginationIdentity string `json:"origination_identity,omitempty"`
	ConfigurationSet    string `json:"configuration_set,omitempty"`

	WebhookPublicKey string   `json:"webhook_public_key,omitempty"`
	SNSTopics        []string `json:"sns_topics,omitempty"`

	// ProjectID is the fcm service account's, for List to show.
	ProjectID      string `json:"project_id,omitempty"`
	APNsKeyID      string `json:"apns_key_id,omitempty"`
	TeamID         string `json:"team_id,omitempty"`
	Topic          string `json:"topic,omitempty"`
	Production     bool   `json:"production,omitempty"`
	VAPIDPublicKey string `json:"vapid_public_key,omitempty"`
	Contact        string `json:"contact,omitempty"`
}

// payload is what is sealed: everything Get returns but the times.
type payload struct {
	Type            string   `json:"type"`
	Settings        settings `json:"settings"`
	AccessKeyID     string   `json:"access_key_id,omitempty"`
	SecretAccessKey string   `json:"secret_access_key,omitempty"`
	APIKey          string   `json:"api_key,omitempty"`
	Password        string   `json:"password,omitempty"`
	AuthToken       string   `json:"auth_token,omitempty"`
	ServiceAccount  string   `json:"service_account,omitempty"`
	AuthKey         string   `json:"auth_key,omitempty"`
	VAPIDPrivateKey string   `json:"vapid_private_key,omitempty"`
}

// Put seals c under the current key and stores it, replacing the tenant's
// credential of the same name (whose creation time it keeps). ErrConflict
// if another writer changed it meanwhile.
func (s *Store) Put(ctx context.Context, tenant string, c Credential) error {
	if !event.ValidTenant(tenant) {
		return fmt.Errorf("vault: tenant %q is not a tenant id", tenant)
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("vault: %w", err)
	}
	if s.keys == nil {
		return errNoKeyring
	}
	key := BucketKey(tenant, c.Name)
	now := time.Now().UTC()
	old, rev, err := s.read(ctx, key)
	if errors.Is(err, ErrNotFound) {
		old.CreatedAt = now
	} else if err != nil {
		return err
	}
	rec, err := seal(tenant, c, s.keys)
	if err != nil {
		return err
	}
	rec.CreatedAt, rec.UpdatedAt = old.CreatedAt, now
	return s.write(ctx, key, rec, rev)
}

// Get opens the tenant's credential: the plaintext, for the code that
// builds the provider at send time.
func (s *Store) Get(ctx context.Context, tenant, name string) (Credential, error) {
	key, err := existingKey(tenant, name)
	if err != nil {
		return Credential{}, err
	}
	if s.keys == nil {
		return Credential{}, errNoKeyring
	}
	rec, _, err := s.read(ctx, key)
	if err != nil {
		return Credential{}, err
	}
	return open(tenant, name, rec, s.keys)
}

// existingKey is the key of a credential Put could have written: none for
// a tenant or name it would have refused.
func existingKey(tenant, name string) (string, error) {
	if !event.ValidTenant(tenant) || !ValidName(name) {
		return "", fmt.Errorf("%w: tenant %q, name %q (not valid ids)", ErrNotFound, tenant, name)
	}
	return BucketKey(tenant, name), nil
}

// List is the tenant's credentials, by name: settings and previews only,
// nothing decrypted.
func (s *Store) List(ctx context.Context, tenant string) ([]Info, error) {
	if !event.ValidTenant(tenant) {
		return nil, fmt.Errorf("vault: tenant %q is not a tenant id", tenant)
	}
	w, err := s.kv.Watch(ctx, BucketKey(tenant, "*"), jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("vault: listing %s: %w", tenant, err)
	}
	defer func() { _ = w.Stop() }()
	var out []Info
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e := <-w.Updates():
			if e == nil { // every credential present when the watch began was seen
				slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
				return out, nil
			}
			var rec record
			if err := json.Unmarshal(e.Value(), &rec); err != nil {
				return nil, fmt.Errorf("vault: %s: %w", e.Key(), err)
			}
			_, name, _ := strings.Cut(e.Key(), ".")
			out = append(out, rec.info(name))
		}
	}
}

// Delete removes the tenant's credential, with every earlier revision of it.
func (s *Store) Delete(ctx context.Context, tenant, name string) error {
	key, err := existingKey(tenant, name)
	if err != nil {
		return err
	}
	e, err := s.entry(ctx, key)
	if err != nil {
		return err
	}
	return conflict(s.kv.Purge(ctx, key, jetstream.LastRevision(e.Revision())))
}

func (r record) info(name string) Info {
	set := r.Settings
	return Info{
		Name: name, Type: r.Type, Endpoint: set.Endpoint, Region: set.Region,
		Host: set.Host, Port: set.Port, Username: set.Username, TLS: set.TLS,
		AccountSID: set.AccountSID, From: set.From, MessagingServiceSID: set.MessagingServiceSID,
		OriginationIdentity: set.OriginationIdentity, ConfigurationSet: set.ConfigurationSet,
		WebhookPublicKey: set.WebhookPublicKey, SNSTopics: set.SNSTopics,
		ProjectID: set.ProjectID, APNsKeyID: set.APNsKeyID, TeamID: set.TeamID, Topic: set.Topic,
		Production: set.Production, VAPIDPublicKey: set.VAPIDPublicKey, Contact: set.Contact,
		Preview: r.Preview, KeyID: r.KeyID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// entry is the bucket's entry at key.
func (s *Store) entry(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return nil, fmt.Errorf("vault: reading %s: %w", key, err)
	}
	return e, nil
}

// read is the record at key and its revision.
func (s *Store) read(ctx context.Context, key string) (record, uint64, error) {
	e, err := s.entry(ctx, key)
	if err != nil {
		return record{}, 0, err
	}
	var rec record
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return record{}, 0, fmt.Errorf("vault: %s: %w", key, err)
	}
	return rec, e.Revision(), nil
}

// write creates key (rev 0) or replaces revision rev of it.
func (s *Store) write(ctx context.Context, key string, rec record, rev uint64) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("vault: %w", err)
	}
	if rev == 0 {
		_, err = s.kv.Create(ctx, key, b)
	} else {
		_, err = s.kv.Update(ctx, key, b, rev)
	}
	return conflict(err)
}

func conflict(err error) error {
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) || (errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence) {
		return ErrConflict
	}
	if err != nil {
		return fmt.Errorf("vault: %w", err)
	}
	return nil
}

// seal makes the record of c under keys' current key; the times are the
// caller's to set.
func seal(tenant string, c Credential, keys *Keyring) (record, error) {
	set := settings{Endpoint: c.Endpoint, Region: c.Region, Host: c.Host, Port: c.Port, Username: c.Username, TLS: c.TLS,
		AccountSID: c.AccountSID, From: c.From, MessagingServiceSID: c.MessagingServiceSID,
		OriginationIdentity: c.OriginationIdentity, ConfigurationSet: c.ConfigurationSet,
		WebhookPublicKey: c.WebhookPublicKey, SNSTopics: c.SNSTopics,
		APNsKeyID: c.APNsKeyID, TeamID: c.TeamID, Topic: c.Topic, Production: c.Production,
		VAPIDPublicKey: c.VAPIDPublicKey, Contact: c.Contact}
	if c.Type == TypeFCM {
		set.ProjectID, _ = projectOf(c.ServiceAccount)
	}
	plaintext, err := json.Marshal(payload{
		Type: c.Type, Settings: set,
		AccessKeyID: c.AccessKeyID.Reveal(), SecretAccessKey: c.SecretAccessKey.Reveal(),
		APIKey: c.APIKey.Reveal(), Password: c.Password.Reveal(), AuthToken: c.AuthToken.Reveal(),
		ServiceAccount: c.ServiceAccount.Reveal(), AuthKey: c.AuthKey.Reveal(), VAPIDPrivateKey: c.VAPIDPrivateKey.Reveal(),
	})
	if err != nil {
		return record{}, fmt.Errorf("vault: %w", err)
	}
	keyID, sealed := keys.Seal(plaintext, additionalData(tenant, c.Name))
	clear(plaintext)
	return record{Type: c.Type, Settings: set, Preview: c.Secret().Preview(), KeyID: keyID, Sealed: sealed}, nil
}

// open is the credential rec seals, opened with keys.
func open(tenant, name string, rec record, keys *Keyring) (Credential, error) {
	plaintext, err := keys.Open(rec.KeyID, rec.Sealed, additionalData(tenant, name))
	if err != nil {
		return Credential{}, fmt.Errorf("%s: %w", BucketKey(tenant, name), err)
	}
	defer clear(plaintext)
	var p payload
	if err := json.Unmarshal(plaintext, &p); err != nil {
		// The error of a JSON decoder may quote the input: not this one's.
		return Credential{}, fmt.Errorf("vault: %s: the sealed payload is not a credential", BucketKey(tenant, name))
	}
	set := p.Settings
	return Credential{
		Name: name, Type: p.Type, Endpoint: set.Endpoint, Region: set.Region,
		AccessKeyID: NewSecret(p.AccessKeyID), SecretAccessKey: NewSecret(p.SecretAccessKey),
		APIKey: NewSecret(p.APIKey),
		Host:   set.Host, Port: set.Port, Username: set.Username, TLS: set.TLS,
		Password:   NewSecret(p.Password),
		AccountSID: set.AccountSID, AuthToken: NewSecret(p.AuthToken), From: set.From,
		MessagingServiceSID: set.MessagingServiceSID,
		OriginationIdentity: set.OriginationIdentity, ConfigurationSet: set.ConfigurationSet,
		WebhookPublicKey: set.WebhookPublicKey, SNSTopics: set.SNSTopics,
		ServiceAccount: NewSecret(p.ServiceAccount), AuthKey: NewSecret(p.AuthKey), APNsKeyID: set.APNsKeyID,
		TeamID: set.TeamID, Topic: set.Topic, Production: set.Production,
		VAPIDPublicKey: set.VAPIDPublicKey, VAPIDPrivateKey: NewSecret(p.VAPIDPrivateKey), Contact: set.Contact,
		CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt,
	}, nil
}
