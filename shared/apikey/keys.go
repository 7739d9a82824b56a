package apikey

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
)

// Bucket is the key-value bucket declared in streams/KV_api_keys.
const Bucket = "api_keys"

var (
	// ErrNotFound means no key has that id.
	ErrNotFound = errors.New("apikey: no such key")
	// ErrBadSpec means a key cannot be made as asked.
	ErrBadSpec = errors.New("apikey: cannot make that key")

	// errConflict means a record changed since it was read.
	errConflict = errors.New("apikey: key changed since it was read")
)

// MaxNameLen is the longest name a key may have, in characters.
const MaxNameLen = 200

// Spec is a key to create.
type Spec struct {
	// Tenant the key belongs to. Required, unless Admin.
	Tenant string
	// Name says what the key is for ("billing backend"). Defaults to none.
	Name string
	// Scopes of a tenant key: send, read or both. Defaults to both.
	Scopes []Scope
	// Admin makes an operator key: the admin scope and no tenant.
	Admin bool
	// Observer makes an operator's read-only key: the observe scope and no
	// tenant (the console's viewers).
	Observer bool
}

// scopes checks the spec and returns the scopes the key gets, in the
// order send, read, admin.
func (s Spec) scopes() ([]Scope, error) {
	if err := checkName(s.Name); err != nil {
		return nil, err
	}
	if s.Observer {
		if s.Admin || s.Tenant != "" {
			return nil, fmt.Errorf("%w: an observer key is neither an admin's nor a tenant's", ErrBadSpec)
		}
		if slices.ContainsFunc(s.Scopes, func(sc Scope) bool { return sc != Observe }) {
			return nil, fmt.Errorf("%w: scopes: an observer key has the observe scope only", ErrBadSpec)
		}
		return []Scope{Observe}, nil
	}
	if s.Admin {
		if s.Tenant != "" {
			return nil, fmt.Errorf("%w: tenant: an admin key belongs to no tenant", ErrBadSpec)
		}
		if slices.ContainsFunc(s.Scopes, func(sc Scope) bool { return sc != Admin }) {
			return nil, fmt.Errorf("%w: scopes: an admin key has the admin scope only", ErrBadSpec)
		}
		return []Scope{Admin}, nil
	}
	switch {
	case s.Tenant == "":
		return nil, fmt.Errorf("%w: tenant: required (or an admin or observer key)", ErrBadSpec)
	case !event.ValidTenant(s.Tenant):
		return nil, fmt.Errorf("%w: tenant: %q is not a tenant id (letters, digits, '-' and '_', at most 64)", ErrBadSpec, s.Tenant)
	case slices.Contains(s.Scopes, Admin):
		return nil, fmt.Errorf("%w: scopes: a tenant key cannot have the admin scope", ErrBadSpec)
	}
	order := []Scope{Send, Read}
	scopes := slices.Clone(s.Scopes)
	if len(scopes) == 0 {
		scopes = order
	}
	for _, sc := range scopes {
		if !slices.Contains(order, sc) {
			return nil, fmt.Errorf("%w: scopes: unknown scope %q (send or read)", ErrBadSpec, sc)
		}
	}
	slices.SortFunc(scopes, func(a, b Scope) int { return slices.Index(order, a) - slices.Index(order, b) })
	return slices.Compact(scopes), nil
}

// checkName keeps names printable: they end up in tables and logs.
func checkName(name string) error {
	if err := event.CheckText(name); err != nil {
		return fmt.Errorf("%w: name: only printable characters: it %v", ErrBadSpec, err)
	}
	if utf8.RuneCountInString(name) > MaxNameLen {
		return fmt.Errorf("%w: name: at most %d characters", ErrBadSpec, MaxNameLen)
	}
	return nil
}

// record is what the bucket keeps of a key.
type record struct {
	Key
	// SecretSHA256 is the SHA-256 of the secret's bytes, in hex.
	SecretSHA256 string `json:"secret_sha256"`
}

// check refuses a record Create would not have written — a tenant key
// with the admin scope, say — should one reach the bucket another way.
func (r record) check() error {
	spec := Spec{Tenant: r.Tenant, Name: r.Name, Scopes: r.Scopes, Admin: slices.Contains(r.Scopes, Admin),
		Observer: slices.Contains(r.Scopes, Observe)}
	scopes, err := spec.scopes()
	if err == nil && !slices.Equal(scopes, r.Scopes) {
		err = fmt.Errorf("%w: scopes: %v, not as made", ErrBadSpec, r.Scopes)
	}
	if err != nil {
		return fmt.Errorf("apikey: key %s: %w", r.ID, err)
	}
	return nil
}

func (r record) digest() ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	n, err := hex.Decode(d[:], []byte(r.SecretSHA256))
	if err != nil || n != len(d) {
		return d, fmt.Errorf("apikey: key %s: stored digest is not a SHA-256", r.ID)
	}
	return d, nil
}

func decode(e jetstream.KeyValueEntry) (record, error) {
	var r record
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return r, fmt.Errorf("apikey: key %s: %w", e.Key(), err)
	}
	return r, nil
}

// Keys is the store of keys.
type Keys struct {
	kv  jetstream.KeyValue
	now func() time.Time
}

// Open binds to the bucket, which streams.Apply creates.
func Open(ctx context.Context, js jetstream.JetStream) (*Keys, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("apikey: bucket %s: %w", Bucket, err)
	}
	return &Keys{kv: kv, now: time.Now}, nil
}

// Create makes a key and returns it in plain text — the only time it
// exists outside the caller — with what is kept of it.
func (k *Keys) Create(ctx context.Context, spec Spec) (string, Key, error) {
	scopes, err := spec.scopes()
	if err != nil {
		return "", Key{}, err
	}
	// Ids are 60 random bits: a repeat is all but impossible, and the
	// bucket refuses one rather than overwrite a key.
	for range 3 {
		plain, p := generate()
		key := Key{ID: p.id, Tenant: spec.Tenant, Name: spec.Name, Scopes: scopes, Created: k.now().UTC()}
		b, err := json.Marshal(record{Key: key, SecretSHA256: hex.EncodeToString(p.digest[:])})
		if err != nil {
			return "", Key{}, err
		}
		_, err = k.kv.Create(ctx, key.ID, b)
		if errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		if err != nil {
			return "", Key{}, fmt.Errorf("apikey: create: %w", err)
		}
		return plain, key, nil
	}
	return "", Key{}, errors.New("apikey: create: three new ids were all taken")
}

// Get reads a key by id.
func (k *Keys) Get(ctx context.Context, id string) (Key, error) {
	r, _, err := k.get(ctx, id)
	return r.Key, err
}

func (k *Keys) get(ctx context.Context, id string) (record, uint64, error) {
	if !validID(id) {
		return record{}, 0, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	e, err := k.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return record{}, 0, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return record{}, 0, fmt.Errorf("apikey: get %s: %w", id, err)
	}
	r, err := decode(e)
	return r, e.Revision(), err
}

// List returns the keys of tenant, or every key when tenant is empty,
// revoked ones included, oldest first.
func (k *Keys) List(ctx context.Context, tenant string) ([]Key, error) {
	// The watch ends with the context it is made with.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := k.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("apikey: list: %w", err)
	}
	var out []Key
	for {
		select {
		case e := <-w.Updates():
			if e == nil { // every key read
				slices.SortFunc(out, func(a, b Key) int { return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID)) })
				return out, nil
			}
			r, err := decode(e)
			if err != nil {
				return nil, err
			}
			if tenant == "" || r.Tenant == tenant {
				out = append(out, r.Key)
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("apikey: list: %w", ctx.Err())
		}
	}
}

// Revoke marks a key revoked: every Authenticator refuses it as soon as
// its watch brings the change, within moments. The record stays, so
// `herald keys list` still shows who had the key and when it ended.
// Revoking a revoked key does nothing.
func (k *Keys) Revoke(ctx context.Context, id string) error {
	// A conflict is a use being recorded meanwhile; read again and retry.
	for range 5 {
		r, rev, err := k.get(ctx, id)
		if err != nil || !r.Revoked.IsZero() {
			return err
		}
		r.Revoked = k.now().UTC()
		if err := k.update(ctx, r, rev); !errors.Is(err, errConflict) {
			return err
		}
	}
	return fmt.Errorf("apikey: revoke %s: %w five times in a row", id, errConflict)
}

// update writes r over revision rev, or fails with errConflict.
func (k *Keys) update(ctx context.Context, r record, rev uint64) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = k.kv.Update(ctx, r.ID, b, rev)
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) || (errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence) {
		return errConflict
	}
	if err != nil {
		return fmt.Errorf("apikey: update %s: %w", r.ID, err)
	}
	return nil
}
