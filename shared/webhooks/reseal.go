package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/vault"
)

// Resealing is what Reseal did, counted in signing secrets.
type Resealing struct {
	// Total is how many secrets the bucket held that still sign (or will:
	// a rotated-out one in its grace period).
	Total int
	// Resealed were re-encrypted under the new key by this run.
	Resealed int
	// Current were under the new key already.
	Current int
	// Dropped are rotated-out secrets whose grace had ended: they sign
	// nothing any more, so they are removed rather than resealed.
	Dropped int
}

// Reseal re-encrypts every endpoint's signing secrets, of every tenant,
// under to's current key — what `herald vault rotate` does to the master
// key's other users; to must also hold the keys they are sealed under now.
// A tenant's endpoints are rewritten at the revision they were read at, so
// an endpoint added or rotated meanwhile is never overwritten: the tenant
// is read again. It can stop at any point and lose nothing (every secret
// is sealed under one key or the other); run again, it finishes the job.
// The earlier revisions the bucket keeps of a tenant go with the write
// that reseals it — and with a write made for that alone when they hold a
// secret the latest does not (one removed by an older Herald), or when the
// key was deleted by hand — so that once it is done no revision holds a
// secret the old key opens.
//
// progress, if not nil, is called after each tenant. A secret that does not
// open is reported in the error, naming its tenant, endpoint and key id,
// and is left as it is; the tenant's other secrets are resealed all the
// same.
func Reseal(ctx context.Context, s *Store, to *vault.Keyring, progress func(done, total int)) (Resealing, error) {
	var r Resealing
	tenants, err := s.tenants(ctx)
	if err != nil {
		return r, err
	}
	var errs []error
	for i, tenant := range tenants {
		if err := ctx.Err(); err != nil {
			return r, errors.Join(append(errs, err)...)
		}
		got, err := s.resealTenant(ctx, tenant, to)
		if err != nil {
			errs = append(errs, err)
		}
		r.Total += got.Total
		r.Resealed += got.Resealed
		r.Current += got.Current
		r.Dropped += got.Dropped
		if progress != nil {
			progress(i+1, len(tenants))
		}
	}
	return r, errors.Join(errs...)
}

// tenants lists the bucket's keys: one per tenant with endpoints, and one
// per key deleted by hand, whose earlier revisions may still hold secrets.
func (s *Store) tenants(ctx context.Context) ([]string, error) {
	w, err := s.kv.WatchAll(ctx, jetstream.MetaOnly())
	if err != nil {
		return nil, fmt.Errorf("webhooks: listing %s: %w", Bucket, err)
	}
	defer func() { _ = w.Stop() }()
	var keys []string
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return nil, fmt.Errorf("webhooks: listing %s: the watch ended before every key was read", Bucket)
			case e == nil: // every key present when the watch began was seen
				return keys, nil
			case !slices.Contains(keys, e.Key()): // a key written during the listing can come twice
				keys = append(keys, e.Key())
			}
		}
	}
}

// resealTenant reseals one tenant's secrets in one revision-checked write,
// again from the start if another writer got in between. The write removes
// the key's earlier revisions when they hold a secret it leaves out — one
// it reseals or drops, or one removed before — so that no revision is left
// that the old key opens.
func (s *Store) resealTenant(ctx context.Context, tenant string, to *vault.Keyring) (Resealing, error) {
	earlier, deleted, err := s.history(ctx, tenant)
	if err != nil {
		return Resealing{}, err
	}
	if deleted != 0 {
		return Resealing{}, s.forgetDeleted(ctx, tenant, earlier, deleted)
	}
	var (
		got  Resealing
		errs []error
	)
	err = s.updateOver(ctx, tenant, earlier, func(r *record) error {
		got, errs = Resealing{}, nil
		now := s.now()
		for i := range r.Endpoints {
			st := &r.Endpoints[i]
			kept := st.Secrets[:0:0]
			for _, x := range st.Secrets {
				switch {
				case !x.Until.IsZero() && !x.Until.After(now):
					got.Dropped++
					continue
				case x.KeyID == to.Current().ID():
					got.Current++
				default:
					plain, err := to.Open(x.KeyID, x.Sealed, aad(tenant, st.ID))
					if err != nil {
						errs = append(errs, fmt.Errorf("webhooks: tenant %q endpoint %s: %w", tenant, st.ID, err))
					} else {
						x.KeyID, x.Sealed = to.Seal(plain, aad(tenant, st.ID))
						clear(plain)
						got.Resealed++
					}
				}
				kept = append(kept, x)
			}
			st.Secrets = kept
		}
		got.Total = got.Current + got.Resealed + len(errs)
		if got.Resealed == 0 && got.Dropped == 0 {
			return errNothingToWrite
		}
		return nil
	})
	if err != nil {
		return Resealing{}, err
	}
	return got, errors.Join(errs...)
}

// history is the secrets of every revision of the tenant's key but the
// latest, and the latest's revision if it marks the key deleted (0 if not).
func (s *Store) history(ctx context.Context, tenant string) ([]sealed, uint64, error) {
	entries, err := s.kv.History(ctx, tenant)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("webhooks: reading tenant %q's revisions: %w", tenant, err)
	}
	var earlier []sealed
	for _, e := range entries[:len(entries)-1] {
		if e.Operation() != jetstream.KeyValuePut {
			continue
		}
		var r record
		if err := json.Unmarshal(e.Value(), &r); err != nil {
			return nil, 0, fmt.Errorf("webhooks: tenant %q's endpoints, revision %d: %w", tenant, e.Revision(), err)
		}
		earlier = append(earlier, r.sealed()...)
	}
	if last := entries[len(entries)-1]; last.Operation() != jetstream.KeyValuePut {
		return earlier, last.Revision(), nil
	}
	return earlier, 0, nil
}

// forgetDeleted purges a key deleted by hand (at revision deleted) whose
// earlier revisions still hold secrets.
func (s *Store) forgetDeleted(ctx context.Context, tenant string, earlier []sealed, deleted uint64) error {
	if len(earlier) == 0 {
		return nil
	}
	if err := s.kv.Purge(ctx, tenant, jetstream.LastRevision(deleted)); err != nil {
		return fmt.Errorf("webhooks: purging tenant %q's deleted endpoints: %w", tenant, err)
	}
	return nil
}

// errNothingToWrite ends an edit that changes nothing.
var errNothingToWrite = errors.New("webhooks: nothing to write")
