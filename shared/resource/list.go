package resource

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/kvmirror"
)

// Page is one page of a tenant's records: those whose keys come after
// After (a cursor List returned; "" for the first page), at most Limit.
type Page struct {
	After string
	// Limit defaults to DefaultLimit and is at most MaxLimit.
	Limit int
}

// Page sizes.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

func (p Page) limit() int {
	switch {
	case p.Limit <= 0:
		return DefaultLimit
	case p.Limit > MaxLimit:
		return MaxLimit
	}
	return p.Limit
}

// List returns a page of the tenant's records in key order, and the cursor
// of the next page ("" after the last). Only keys under the tenant's own
// are read: a tenant that is not one key token (a wildcard, a dot) is
// refused rather than read as a filter.
func (s *Store[T]) List(ctx context.Context, tenant string, p Page) ([]T, string, error) {
	keys, err := s.keys(ctx, tenant)
	if err != nil {
		return nil, "", err
	}
	return s.page(ctx, keys, p)
}

// page is the page p of keys' records, and the cursor of the next.
func (s *Store[T]) page(ctx context.Context, keys []string, p Page) ([]T, string, error) {
	slices.Sort(keys)
	start, _ := slices.BinarySearch(keys, p.After)
	if start < len(keys) && keys[start] == p.After {
		start++
	}
	keys = keys[start:]
	next := ""
	if len(keys) > p.limit() {
		keys = keys[:p.limit()]
		next = keys[len(keys)-1]
	}
	out := make([]T, 0, len(keys))
	for _, k := range keys {
		v, _, err := s.Get(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	return out, next, nil
}

// All returns every record of the tenant, in no order: for the stores
// whose tenants have few records and that sort them their own way.
func (s *Store[T]) All(ctx context.Context, tenant string) ([]T, error) {
	filter, err := tenantFilter(tenant)
	if err != nil {
		return nil, err
	}
	out, err := kvmirror.List(ctx, s.kv, filter, s.decode)
	if err != nil {
		return nil, fmt.Errorf("%s: listing tenant %q: %w", s.kind.Name, tenant, err)
	}
	return out, nil
}

// keys are the tenant's keys, in no order.
func (s *Store[T]) keys(ctx context.Context, tenant string) ([]string, error) {
	filter, err := tenantFilter(tenant)
	if err != nil {
		return nil, err
	}
	return s.keysMatching(ctx, filter)
}

// keysMatching are the keys filter matches, in no order.
func (s *Store[T]) keysMatching(ctx context.Context, filter string) ([]string, error) {
	lister, err := s.kv.ListKeysFiltered(ctx, filter)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: listing %s: %w", s.kind.Name, filter, err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	return keys, nil
}

// tenantFilter is the subject filter of a tenant's keys.
func tenantFilter(tenant string) (string, error) {
	if !tokenPattern.MatchString(tenant) {
		return "", fmt.Errorf("%w: tenant %q is not one key token", ErrInvalid, tenant)
	}
	return tenant + ".>", nil
}
