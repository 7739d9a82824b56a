package tenant

import (
	"cmp"
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

// Bucket is the key-value bucket declared in streams/KV_tenants: tenant id
// → the tenant as JSON.
const Bucket = "tenants"

// updateTries bounds Update's attempts: each failure means another writer
// succeeded, so running out takes a stampede on one tenant.
const updateTries = 5

// Registry reads and writes tenants.
type Registry struct {
	kv    jetstream.KeyValue
	plans Plans
	// ledgerKeeps bounds a tenant's history retention (checkHistory).
	ledgerKeeps time.Duration
}

// Open binds to the bucket, which streams.Apply creates. Tenants written
// through the registry must be on one of plans.
func Open(ctx context.Context, js jetstream.JetStream, plans Plans) (*Registry, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("tenant: bucket %s: %w", Bucket, err)
	}
	keeps, err := ledgerRetention(ctx, js)
	if err != nil {
		return nil, err
	}
	return &Registry{kv: kv, plans: plans, ledgerKeeps: keeps}, nil
}

// Create registers t: active unless t says otherwise, with both times set
// to now. An id already registered is ErrExists.
func (r *Registry) Create(ctx context.Context, t Tenant) (Tenant, error) {
	t.Status = cmp.Or(t.Status, Active)
	t.CreatedAt = time.Now().UTC()
	t.UpdatedAt = t.CreatedAt
	if err := r.validate(t); err != nil {
		return Tenant{}, err
	}
	data, err := json.Marshal(t)
	if err != nil {
		return Tenant{}, err
	}
	if _, err := r.kv.Create(ctx, t.ID, data); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return Tenant{}, idError(t.ID, ErrExists)
		}
		return Tenant{}, fmt.Errorf("tenant: creating %q: %w", t.ID, err)
	}
	return t, nil
}

// validate is t.Validate, and a history no longer than the ledger keeps.
func (r *Registry) validate(t Tenant) error {
	if err := t.Validate(r.plans); err != nil {
		return err
	}
	return checkHistory(t, r.ledgerKeeps)
}

// Get reads one tenant; an id never registered (or deleted) is ErrNotFound.
func (r *Registry) Get(ctx context.Context, id string) (Tenant, error) {
	t, _, err := r.get(ctx, id)
	return t, err
}

// get reads a tenant with the revision it was read at.
func (r *Registry) get(ctx context.Context, id string) (Tenant, uint64, error) {
	// A string that is not a tenant id is not a KV key either: answer as
	// for any tenant that does not exist.
	if !event.ValidTenant(id) {
		return Tenant{}, 0, idError(id, ErrNotFound)
	}
	entry, err := r.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Tenant{}, 0, idError(id, ErrNotFound)
	}
	if err != nil {
		return Tenant{}, 0, fmt.Errorf("tenant: reading %q: %w", id, err)
	}
	t, err := decode(entry)
	return t, entry.Revision(), err
}

func decode(entry jetstream.KeyValueEntry) (Tenant, error) {
	var t Tenant
	if err := json.Unmarshal(entry.Value(), &t); err != nil {
		return Tenant{}, fmt.Errorf("tenant: %s.%s at revision %d is not a tenant: %w", Bucket, entry.Key(), entry.Revision(), err)
	}
	return t, nil
}

// List reads every tenant, sorted by id; none is an empty list, not nil
// (JSON [], not null).
func (r *Registry) List(ctx context.Context) ([]Tenant, error) {
	w, err := r.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("tenant: listing: %w", err)
	}
	defer func() { _ = w.Stop() }()
	list := []Tenant{}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("tenant: listing: %w", ctx.Err())
		case entry, ok := <-w.Updates():
			if !ok { // the connection closed: the list would be partial
				return nil, errors.New("tenant: listing: the watch ended before every tenant was read")
			}
			if entry == nil { // every tenant present when the watch began was seen
				slices.SortFunc(list, func(a, b Tenant) int { return strings.Compare(a.ID, b.ID) })
				return list, nil
			}
			t, err := decode(entry)
			if err != nil {
				return nil, err
			}
			list = append(list, t)
		}
	}
}

// Update reads tenant id, lets edit change it, validates the result and
// writes it back if nobody wrote in between; if somebody did, it reads
// again and edits that, so edit may run more than once and must only
// depend on the tenant it is given. An error from edit is returned as it
// is, and nothing is written. The id and creation time cannot be edited.
func (r *Registry) Update(ctx context.Context, id string, edit func(*Tenant) error) (Tenant, error) {
	for range updateTries {
		t, err := r.tryUpdate(ctx, id, edit)
		if !errors.Is(err, errRaced) {
			return t, err
		}
	}
	return Tenant{}, idError(id, ErrConflict)
}

// errRaced: another writer wrote between tryUpdate's read and its write.
var errRaced = errors.New("raced")

// tryUpdate is one read-edit-write; a write that lost the race is errRaced.
func (r *Registry) tryUpdate(ctx context.Context, id string, edit func(*Tenant) error) (Tenant, error) {
	old, rev, err := r.get(ctx, id)
	if err != nil {
		return Tenant{}, err
	}
	t := old
	t.Providers = slices.Clone(old.Providers)
	t.SMSProviders = slices.Clone(old.SMSProviders)
	t.WhatsAppProviders = slices.Clone(old.WhatsAppProviders)
	if err := edit(&t); err != nil {
		return Tenant{}, err
	}
	if t.ID != old.ID {
		return Tenant{}, fmt.Errorf("tenant %q: the id cannot change (to %q): create a new tenant instead", id, t.ID)
	}
	t.CreatedAt = old.CreatedAt
	t.UpdatedAt = time.Now().UTC()
	if err := r.validate(t); err != nil {
		return Tenant{}, err
	}
	data, err := json.Marshal(t)
	if err != nil {
		return Tenant{}, err
	}
	if _, err := r.kv.Update(ctx, id, data, rev); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return Tenant{}, errRaced
		}
		return Tenant{}, fmt.Errorf("tenant: updating %q: %w", id, err)
	}
	return t, nil
}
