package webhooks

import (
	"context"
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

// tenants lists the bucket's keys: one per tenant with endpoints.
func (s *Store) tenants(ctx context.Context) ([]string, error) {
	lister, err := s.kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: listing %s: %w", Bucket, err)
	}
	defer func() { _ = lister.Stop() }()
	var keys []string
	for k := range lister.Keys() {
		if !slices.Contains(keys, k) { // a key written during the listing can come twice
			keys = append(keys, k)
		}
	}
	return keys, ctx.Err()
}

// resealTenant reseals one tenant's secrets in one revision-checked write,
// again from the start if another writer got in between.
func (s *Store) resealTenant(ctx context.Context, tenant string, to *vault.Keyring) (Resealing, error) {
	var (
		got  Resealing
		errs []error
	)
	err := s.update(ctx, tenant, func(r *record) error {
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
	if errors.Is(err, errNothingToWrite) {
		err = nil
	}
	if err != nil {
		return Resealing{}, err
	}
	return got, errors.Join(errs...)
}

// errNothingToWrite ends an update that would change nothing.
var errNothingToWrite = errors.New("webhooks: nothing to write")
