package vault

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Rotation is what Rotate did.
type Rotation struct {
	// Total is how many credentials the bucket held when it began.
	Total int
	// Resealed were re-encrypted under the new key by this run.
	Resealed int
	// Current were under the new key already: written since, or by an
	// earlier run that stopped half-way.
	Current int
}

// maxConflicts bounds how often Rotate rereads one credential that keeps
// changing under it.
const maxConflicts = 5

// Rotate re-encrypts every credential in the store's bucket, of every
// tenant, under to's current key; to must also hold the keys they are
// sealed under now. Each record is rewritten only at the revision it was
// read at, so a Put meanwhile is never overwritten. Rotate can stop at any
// point — a crash, ctx cancelled — and lose nothing: every record is sealed
// under one key or the other, and running it again finishes the job.
//
// progress, if not nil, is called after each credential. A credential that
// does not open (a key to lacks) is reported in the error, naming its key
// and key id; the others are rotated all the same.
func Rotate(ctx context.Context, s *Store, to *Keyring, progress func(done, total int)) (Rotation, error) {
	var r Rotation
	keys, err := s.allKeys(ctx)
	if err != nil {
		return r, err
	}
	r.Total = len(keys)
	var errs []error
	for i, key := range keys {
		if err := ctx.Err(); err != nil {
			return r, errors.Join(append(errs, err)...)
		}
		resealed, err := s.reseal(ctx, key, to)
		switch {
		case err != nil:
			errs = append(errs, err)
		case resealed:
			r.Resealed++
		default:
			r.Current++
		}
		if progress != nil {
			progress(i+1, r.Total)
		}
	}
	return r, errors.Join(errs...)
}

// allKeys lists the bucket's keys.
func (s *Store) allKeys(ctx context.Context) ([]string, error) {
	lister, err := s.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("vault: listing %s: %w", Bucket, err)
	}
	defer func() { _ = lister.Stop() }()
	var keys []string
	seen := map[string]bool{}
	for k := range lister.Keys() {
		if !seen[k] { // a key written during the listing can come twice
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys, ctx.Err()
}

// reseal rewrites one record under to's current key, unless it is under
// it already or was deleted; it rereads and tries again when another
// writer got in between.
func (s *Store) reseal(ctx context.Context, key string, to *Keyring) (bool, error) {
	tenant, name, _ := strings.Cut(key, ".")
	for range maxConflicts {
		rec, rev, err := s.read(ctx, key)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if rec.KeyID == to.Current().ID() {
			return false, nil
		}
		c, err := open(tenant, name, rec, to)
		if err != nil {
			return false, err
		}
		next, err := seal(tenant, c, to)
		if err != nil {
			return false, err
		}
		next.CreatedAt, next.UpdatedAt = rec.CreatedAt, rec.UpdatedAt
		err = s.write(ctx, key, next, rev)
		if !errors.Is(err, ErrConflict) {
			return err == nil, err
		}
	}
	return false, fmt.Errorf("vault: %s changed %d times while being rotated; run the rotation again", key, maxConflicts)
}
