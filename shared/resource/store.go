package resource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Store reads and writes one kind's records.
type Store[T any] struct {
	kind Kind[T]
	js   jetstream.JetStream
	kv   jetstream.KeyValue
}

// Open binds to kind's bucket, which streams.Apply creates.
func Open[T any](ctx context.Context, js jetstream.JetStream, kind Kind[T]) (*Store[T], error) {
	kv, err := js.KeyValue(ctx, kind.Bucket)
	if err != nil {
		return nil, fmt.Errorf("%s: bucket %s: %w", kind.Name, kind.Bucket, err)
	}
	return &Store[T]{kind: kind, js: js, kv: kv}, nil
}

// Kind is what the store keeps.
func (s *Store[T]) Kind() Kind[T] { return s.kind }

// Get returns the record at key and its revision, or the kind's NotFound.
func (s *Store[T]) Get(ctx context.Context, key string) (T, uint64, error) {
	var zero T
	if checkKey(key) != nil {
		return zero, 0, s.kind.notFound() // no record can be kept there
	}
	kve, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return zero, 0, s.kind.notFound()
	}
	if err != nil {
		return zero, 0, fmt.Errorf("%s: reading %s: %w", s.kind.Name, key, err)
	}
	v, err := s.decode(kve)
	return v, kve.Revision(), err
}

func (s *Store[T]) decode(kve jetstream.KeyValueEntry) (T, error) {
	var v T
	if err := json.Unmarshal(kve.Value(), &v); err != nil {
		return v, fmt.Errorf("%s: entry %s: %w", s.kind.Name, kve.Key(), err)
	}
	return v, nil
}

// encode is v as stored, once the kind's Validate and MaxBytes pass it:
// nothing is written that they refuse.
func (s *Store[T]) encode(v T) ([]byte, error) {
	if s.kind.Validate != nil {
		if err := s.kind.Validate(v); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.kind.Name, err)
	}
	if len(b) > s.kind.maxBytes() {
		return nil, fmt.Errorf("%w: a %s is at most %d bytes stored; this one is %d", ErrTooLarge, s.kind.Name, s.kind.maxBytes(), len(b))
	}
	return b, nil
}

// keyOf is where v is kept, checked.
func (s *Store[T]) keyOf(v T) (string, error) {
	if s.kind.Key == nil {
		return "", fmt.Errorf("%s: the kind has no Key; write it with Patch", s.kind.Name)
	}
	key := s.kind.Key(v)
	return key, checkKey(key)
}

// Create writes v where no record is; ErrExists if one is.
func (s *Store[T]) Create(ctx context.Context, v T) (uint64, error) {
	key, b, err := s.prepare(v)
	if err != nil {
		return 0, err
	}
	if err := s.checkCount(ctx, key); err != nil {
		return 0, err
	}
	return s.create(ctx, key, b)
}

// Put writes v, replacing whatever record its key had: the last writer
// wins. Update is the write that does not overwrite unseen changes.
func (s *Store[T]) Put(ctx context.Context, v T) (uint64, error) {
	key, b, err := s.prepare(v)
	if err != nil {
		return 0, err
	}
	if s.kind.MaxPerTenant > 0 {
		if _, _, err := s.Get(ctx, key); errors.Is(err, ErrNotFound) {
			if err := s.checkCount(ctx, key); err != nil {
				return 0, err
			}
		}
	}
	return s.publish(ctx, key, b, change{op: opPut})
}

// Update writes v if its key is still at revision rev (as Get returned
// it); ErrConflict if another write came between.
func (s *Store[T]) Update(ctx context.Context, v T, rev uint64) (uint64, error) {
	key, b, err := s.prepare(v)
	if err != nil {
		return 0, err
	}
	return s.publish(ctx, key, b, change{op: opPut, expect: &rev})
}

// prepare is v's key and v as stored: the kind's refusal first, for it
// says in words what a malformed key would only show.
func (s *Store[T]) prepare(v T) (string, []byte, error) {
	b, err := s.encode(v)
	if err != nil {
		return "", nil, err
	}
	key, err := s.keyOf(v)
	return key, b, err
}

// Delete removes the record at key; the kind's NotFound if there was none.
func (s *Store[T]) Delete(ctx context.Context, key string) error {
	_, rev, err := s.Get(ctx, key)
	if err != nil {
		return err
	}
	_, err = s.publish(ctx, key, nil, change{op: opDelete, expect: &rev})
	return err
}

// checkCount refuses a new record at key when its tenant has
// MaxPerTenant already. Two creates at once may both pass: the cap bounds
// a tenant's cost, it is not an exact quota.
func (s *Store[T]) checkCount(ctx context.Context, key string) error {
	if s.kind.MaxPerTenant <= 0 {
		return nil
	}
	tenant, _, _ := strings.Cut(key, ".")
	keys, err := s.keys(ctx, tenant)
	if err != nil {
		return err
	}
	if len(keys) >= s.kind.MaxPerTenant {
		return fmt.Errorf("%w: tenant %q has %d of %d %ss, the most it may have", ErrTooMany, tenant, len(keys), s.kind.MaxPerTenant, s.kind.Name)
	}
	return nil
}
