// Package webhooks is the registry of tenants' webhook endpoints: where a
// tenant wants its notifications' status events (and webhook-channel
// notifications) POSTed, signed per the Standard Webhooks spec.
//
// All of one tenant's endpoints are one key of the bucket webhook_endpoints,
// so that the status feed finds them with one read, and every change is a
// revision-checked write of the whole list. Signing secrets are sealed with
// the vault's keyring (AES-256-GCM), bound to the tenant and endpoint: the
// bucket never holds one in the clear. A secret is shown once, when it is
// created or rotated; a rotated-out secret keeps signing, beside the new
// one, until its grace period ends.
//
// The bucket keeps a few revisions of each tenant's list, but never a
// secret that no longer signs: the write that leaves one out — its endpoint
// removed, its grace over, resealed under a new master key — replaces every
// earlier revision with itself.
package webhooks

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/vault"
)

// Bucket is the key-value bucket declared in streams/KV_webhook_endpoints.
const Bucket = "webhook_endpoints"

// DefaultEvents are what an endpoint registered without patterns gets:
// every notification's outcome, what providers report of the messages
// after (report.bounced, report.complained…), news of the tenant's
// endpoints themselves (webhook.endpoint_disabled), and of the tenant's
// account (tenant.quota.warning, tenant.quota.exceeded).
var DefaultEvents = []string{"notification.*", "report.*", "webhook.*", "tenant.*"}

// MaxEndpoints bounds one tenant's endpoints.
const MaxEndpoints = 20

// Status of an endpoint.
type Status string

const (
	Active   Status = "active"
	Disabled Status = "disabled"
)

var (
	// ErrNotFound is an endpoint the tenant does not have.
	ErrNotFound = errors.New("webhooks: no such endpoint")
	// ErrConflict is a change that kept losing to other writers.
	ErrConflict = errors.New("webhooks: the endpoints kept changing; try again")
)

// Endpoint is one of a tenant's webhook endpoints.
type Endpoint struct {
	// ID is "we_" and 26 random characters.
	ID  string `json:"id"`
	URL string `json:"url"`
	// Events are the event types sent, as path patterns:
	// "notification.failed", "webhook.*". DefaultEvents when none are given.
	Events      []string `json:"events"`
	Description string   `json:"description,omitempty"`
	Status      Status   `json:"status"`
	// DisabledReason says why Herald stopped sending (410 Gone, failing
	// for too long), or that the tenant did; DisabledAt, since when.
	DisabledReason string    `json:"disabled_reason,omitempty"`
	DisabledAt     time.Time `json:"disabled_at,omitzero"`
	// FailingSince is when the endpoint last started failing; zero while
	// it answers.
	FailingSince time.Time `json:"failing_since,omitzero"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`

	secrets []sealed
}

// sealed is a signing secret as stored.
type sealed struct {
	KeyID  string `json:"key_id"`
	Sealed []byte `json:"sealed"`
	// Until, when set, is when a rotated-out secret stops signing.
	Until time.Time `json:"until,omitzero"`
}

// Wants reports whether the endpoint takes events of this type.
func (e Endpoint) Wants(eventType string) bool {
	return e.Status == Active && slices.ContainsFunc(e.Events, func(p string) bool {
		ok, _ := path.Match(p, eventType)
		return ok
	})
}

// record is a tenant's endpoints as stored.
type record struct {
	Endpoints []stored `json:"endpoints"`
	// Unannounced are the endpoint_disabled events of disablings not yet
	// published on the tenant's status stream. Each is written in the same
	// write as the disabling it tells of, and taken out once published
	// (Announce): a worker that dies in between leaves it here for the next
	// to publish, and no disabling goes untold.
	Unannounced []notification.EndpointDisabled `json:"unannounced,omitempty"`
}

type stored struct {
	Endpoint
	Secrets []sealed `json:"secrets"`
}

// endpoints is the resource kind of a tenant's endpoints: one record per
// tenant, keyed by the tenant id alone, written only by Patch.
var endpoints = resource.Kind[record]{Name: "webhooks", Bucket: Bucket, MaxBytes: resource.MaxPayload}

// Store reads and writes endpoints.
type Store struct {
	records *resource.Store[record]
	// kv is the bucket itself, for what Reseal reads of it: every key, and
	// a key's earlier revisions.
	kv   jetstream.KeyValue
	keys *vault.Keyring
	now  func() time.Time
}

// Open binds to the bucket, which streams.Apply creates. Without a
// keyring, endpoints can be listed but not created or signed for.
func Open(ctx context.Context, js jetstream.JetStream, keys *vault.Keyring) (*Store, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("webhooks: bucket %s: %w", Bucket, err)
	}
	records, err := resource.Open(ctx, js, endpoints)
	if err != nil {
		return nil, err
	}
	return &Store{records: records, kv: kv, keys: keys, now: time.Now}, nil
}

// New describes an endpoint to create.
type New struct {
	URL         string
	Events      []string
	Description string
}

// Create adds an endpoint with a fresh signing secret, returned in the
// clear this once.
func (s *Store) Create(ctx context.Context, tenant string, n New) (Endpoint, string, error) {
	events := n.Events
	if len(events) == 0 {
		events = slices.Clone(DefaultEvents)
	}
	if err := n.check(events); err != nil {
		return Endpoint{}, "", err
	}
	secret, err := NewSecret()
	if err != nil {
		return Endpoint{}, "", err
	}
	now := s.now().UTC()
	e := Endpoint{ID: "we_" + strings.ToLower(rand.Text()), URL: n.URL, Events: events, Description: n.Description,
		Status: Active, CreatedAt: now, UpdatedAt: now}
	sealedSecret, err := s.seal(tenant, e.ID, secret)
	if err != nil {
		return Endpoint{}, "", err
	}
	err = s.update(ctx, tenant, func(r *record) error {
		if len(r.Endpoints) >= MaxEndpoints {
			return fmt.Errorf("webhooks: tenant %q has %d endpoints, the most it may have", tenant, MaxEndpoints)
		}
		r.Endpoints = append(r.Endpoints, stored{Endpoint: e, Secrets: []sealed{sealedSecret}})
		return nil
	})
	return e, secret, err
}

// List returns the tenant's endpoints, oldest first.
func (s *Store) List(ctx context.Context, tenant string) ([]Endpoint, error) {
	r, _, err := s.read(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]Endpoint, len(r.Endpoints))
	for i, st := range r.Endpoints {
		out[i] = st.withSecrets()
	}
	return out, nil
}

// Get returns one endpoint.
func (s *Store) Get(ctx context.Context, tenant, id string) (Endpoint, error) {
	list, err := s.List(ctx, tenant)
	if err != nil {
		return Endpoint{}, err
	}
	i := slices.IndexFunc(list, func(e Endpoint) bool { return e.ID == id })
	if i < 0 {
		return Endpoint{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return list[i], nil
}

// Find returns the tenant's endpoint with this id or URL.
func (s *Store) Find(ctx context.Context, tenant, idOrURL string) (Endpoint, error) {
	list, err := s.List(ctx, tenant)
	if err != nil {
		return Endpoint{}, err
	}
	i := slices.IndexFunc(list, func(e Endpoint) bool { return e.ID == idOrURL || e.URL == idOrURL })
	if i < 0 {
		return Endpoint{}, fmt.Errorf("%w: tenant %q has no endpoint %s", ErrNotFound, tenant, redactURL(idOrURL))
	}
	return list[i], nil
}

// Delete removes an endpoint.
func (s *Store) Delete(ctx context.Context, tenant, id string) error {
	return s.update(ctx, tenant, func(r *record) error {
		i := slices.IndexFunc(r.Endpoints, func(st stored) bool { return st.ID == id })
		if i < 0 {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		r.Endpoints = slices.Delete(r.Endpoints, i, i+1)
		return nil
	})
}

// Rotate gives an endpoint a new secret, returned in the clear this once;
// the old ones keep signing beside it for grace.
func (s *Store) Rotate(ctx context.Context, tenant, id string, grace time.Duration) (string, error) {
	secret, err := NewSecret()
	if err != nil {
		return "", err
	}
	fresh, err := s.seal(tenant, id, secret)
	if err != nil {
		return "", err
	}
	until := s.now().UTC().Add(grace)
	return secret, s.change(ctx, tenant, id, func(st *stored) {
		st.Secrets = slices.DeleteFunc(st.Secrets, func(x sealed) bool { return !x.Until.IsZero() && x.Until.Before(s.now()) })
		for i := range st.Secrets {
			if st.Secrets[i].Until.IsZero() || st.Secrets[i].Until.After(until) {
				st.Secrets[i].Until = until
			}
		}
		st.Secrets = append([]sealed{fresh}, st.Secrets...)
	})
}

// Disable stops sending to an endpoint, saying why (reason) and which
// notification's answer showed it (cause, optional). It returns the
// endpoint as written, and whether this call disabled it: of several
// workers that see the same endpoint fail, one does, and only it tells the
// tenant. An endpoint disabled already keeps its reason and time.
//
// The event that tells the tenant is recorded in the same write, as
// unannounced: the disabling and its event are one step, and Announce
// publishes it.
func (s *Store) Disable(ctx context.Context, tenant, id, reason, cause string) (Endpoint, bool, error) {
	var (
		out      Endpoint
		disabled bool
	)
	err := s.update(ctx, tenant, func(r *record) error {
		st, err := r.endpoint(id)
		if err != nil {
			return err
		}
		if disabled = st.Status != Disabled; disabled {
			now := s.now().UTC()
			st.Status, st.DisabledReason, st.DisabledAt, st.UpdatedAt = Disabled, reason, now, now
			r.Unannounced = append(r.Unannounced, notification.EndpointDisabled{Tenant: tenant, EndpointID: id,
				URL: st.ShownURL(), Reason: reason, NotificationID: cause, Time: now})
		}
		out = st.withSecrets()
		if !disabled {
			return errNothingToWrite
		}
		return nil
	})
	return out, disabled && err == nil, err
}

// Enable sends to an endpoint again, its failures forgotten.
func (s *Store) Enable(ctx context.Context, tenant, id string) error {
	return s.change(ctx, tenant, id, func(st *stored) {
		st.Status, st.DisabledReason, st.DisabledAt, st.FailingSince = Active, "", time.Time{}, time.Time{}
	})
}

// ShownURL is the endpoint's URL as Herald shows it outside the registry
// (events, alerts): its scheme and host, since a path or query may hold a
// token.
func (e Endpoint) ShownURL() string { return redactURL(e.URL) }

// Failed records that an endpoint failed at now, and returns since when it
// has been failing. A write lost to another writer is not retried: the
// next failure records it.
func (s *Store) Failed(ctx context.Context, tenant, id string, now time.Time) (time.Time, error) {
	var since time.Time
	err := s.change(ctx, tenant, id, func(st *stored) {
		if st.FailingSince.IsZero() {
			st.FailingSince = now.UTC()
		}
		since = st.FailingSince
	})
	return since, err
}

// Answered records that an endpoint answered: it is failing no longer.
func (s *Store) Answered(ctx context.Context, tenant string, e Endpoint) error {
	if e.FailingSince.IsZero() {
		return nil // the common case costs no write
	}
	return s.change(ctx, tenant, e.ID, func(st *stored) { st.FailingSince = time.Time{} })
}

// Secrets are the endpoint's signing keys now: the current one, and any
// rotated-out one still in its grace period.
func (s *Store) Secrets(tenant string, e Endpoint) ([][]byte, error) {
	if s.keys == nil {
		return nil, fmt.Errorf("webhooks: %w: signing secrets cannot be opened", vault.ErrNoKey)
	}
	var out [][]byte
	for _, x := range e.secrets {
		if !x.Until.IsZero() && !x.Until.After(s.now()) {
			continue
		}
		plain, err := s.keys.Open(x.KeyID, x.Sealed, aad(tenant, e.ID))
		if err != nil {
			return nil, fmt.Errorf("webhooks: endpoint %s: %w", e.ID, err)
		}
		key, err := ParseSecret(string(plain))
		if err != nil {
			return nil, fmt.Errorf("webhooks: endpoint %s: %w", e.ID, err)
		}
		out = append(out, key)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("webhooks: endpoint %s has no signing secret", e.ID)
	}
	return out, nil
}

func (st stored) withSecrets() Endpoint {
	e := st.Endpoint
	e.secrets = st.Secrets
	return e
}

func (s *Store) seal(tenant, id, secret string) (sealed, error) {
	if s.keys == nil {
		return sealed{}, fmt.Errorf("webhooks: %w: a signing secret cannot be stored", vault.ErrNoKey)
	}
	keyID, box := s.keys.Seal([]byte(secret), aad(tenant, id))
	return sealed{KeyID: keyID, Sealed: box}, nil
}

// aad binds a sealed secret to its tenant and endpoint: moved elsewhere in
// the bucket, it does not open.
func aad(tenant, id string) []byte { return []byte("webhook\x00" + tenant + "\x00" + id) }

func (s *Store) change(ctx context.Context, tenant, id string, edit func(*stored)) error {
	return s.update(ctx, tenant, func(r *record) error {
		st, err := r.endpoint(id)
		if err != nil {
			return err
		}
		edit(st)
		st.UpdatedAt = s.now().UTC()
		return nil
	})
}

// endpoint is the record's endpoint id, to edit in place.
func (r *record) endpoint(id string) (*stored, error) {
	i := slices.IndexFunc(r.Endpoints, func(st stored) bool { return st.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return &r.Endpoints[i], nil
}

func (s *Store) read(ctx context.Context, tenant string) (record, uint64, error) {
	r, rev, err := s.records.Get(ctx, tenant)
	if errors.Is(err, resource.ErrNotFound) {
		return record{}, 0, nil
	}
	if err != nil {
		return record{}, 0, fmt.Errorf("webhooks: reading tenant %q's endpoints: %w", tenant, err)
	}
	return r, rev, nil
}

// update applies edit to the tenant's endpoints in a revision-checked
// write, again on a conflict. A write that leaves out a sealed secret the
// key held replaces the key's every earlier revision with itself.
func (s *Store) update(ctx context.Context, tenant string, edit func(*record) error) error {
	return s.updateOver(ctx, tenant, nil, edit)
}

// updateOver is update, where earlier are the sealed secrets of the key's
// earlier revisions: a write that leaves out any of them, or of the
// revision it edits, removes those revisions. An edit that returns
// errNothingToWrite changes nothing, and is written only to do that.
func (s *Store) updateOver(ctx context.Context, tenant string, earlier []sealed, edit func(*record) error) error {
	_, err := s.records.Patch(ctx, tenant, func(r *record, _ bool) (resource.Write, error) {
		held := append(r.sealed(), earlier...)
		err := edit(r)
		forgets := r.leavesOut(held)
		switch {
		case err != nil && !errors.Is(err, errNothingToWrite):
			return resource.Skip, err
		case forgets:
			return resource.Replace, nil
		case err != nil:
			return resource.Skip, nil
		}
		return resource.Save, nil
	})
	if errors.Is(err, resource.ErrConflict) {
		return ErrConflict
	}
	return err
}

// check says what is wrong with n, naming the field. Its texts are the
// tenant's, shown in tables and pages: none holds a control character.
func (n New) check(events []string) error {
	if err := event.CheckText(n.URL); err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if err := validURL(n.URL); err != nil {
		return err
	}
	for _, p := range events {
		if _, err := path.Match(p, ""); err != nil || strings.TrimSpace(p) == "" || event.CheckText(p) != nil {
			return fmt.Errorf("events: %q is not a pattern such as notification.* or notification.failed", p)
		}
	}
	if err := event.CheckText(n.Description); err != nil {
		return fmt.Errorf("description: %w", err)
	}
	return nil
}

// sealed is every signing secret of the tenant's endpoints, as stored.
func (r record) sealed() []sealed {
	var out []sealed
	for _, st := range r.Endpoints {
		out = append(out, st.Secrets...)
	}
	return out
}

// leavesOut reports whether any of held is no longer among r's secrets.
func (r record) leavesOut(held []sealed) bool {
	kept := map[string]bool{}
	for _, x := range r.sealed() {
		kept[string(x.Sealed)] = true
	}
	return slices.ContainsFunc(held, func(x sealed) bool { return !kept[string(x.Sealed)] })
}

// validURL accepts http and https URLs with a host. Whether its address
// may be reached is decided when it is dialled (webhook.NewClient).
func validURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("url: %s is not an http(s) URL with a host", cmp.Or(redactURL(raw), "an empty string"))
	}
	return nil
}

// redactURL keeps a URL's scheme and host: its path or query may hold a
// token.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		if strings.HasPrefix(raw, "we_") {
			return raw
		}
		return "(an unreadable URL)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}
