package suppression

import (
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/shared/resource"
)

// Concealed says whether e's address was concealed (Conceal): the entry
// still holds its address back, under its key, but no longer says it.
func (e Entry) Concealed() bool { return e.Address == "" && e.AddressHash != "" }

// Conceal hides the addresses of an erased subscriber in the tenant's
// entries that suppress them, on any channel and in any category: each
// keeps suppressing (its key, a digest of the address, is unchanged, so
// Blocks finds it as before) but holds hash(address), a keyed hash, in the
// address's place, and its detail with mask applied (a bounce message may
// quote the address). It is rewritten with every earlier revision dropped,
// so the bucket keeps the address in none. It counts the entries
// concealed; those concealed already are not counted again.
func (s *Store) Conceal(ctx context.Context, tenant string, addresses []string, hash, mask func(string) string) (int, error) {
	wanted := make([]string, len(addresses))
	for i, a := range addresses {
		wanted[i] = Normalize(a)
	}
	entries, err := s.Records().All(ctx, tenant)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if e.Concealed() || !slices.Contains(wanted, Normalize(e.Address)) {
			continue
		}
		if err := s.conceal(ctx, Suppressions.Key(e), e.Address, hash, mask); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (s *Store) conceal(ctx context.Context, key, address string, hash, mask func(string) string) error {
	_, err := s.Records().Patch(ctx, key, func(e *Entry, found bool) (resource.Write, error) {
		if !found || Normalize(e.Address) != Normalize(address) {
			return resource.Skip, nil // lifted or concealed meanwhile
		}
		e.Address, e.AddressHash, e.Detail = "", hash(Normalize(address)), mask(e.Detail)
		return resource.Replace, nil
	})
	return err
}

// AddConcealed suppresses e.Address as Add does, but already concealed:
// the entry holds hash(address) and never the address, in no revision —
// for an opt-out of an address whose subscriber was erased, which must
// keep blocking without bringing the address back.
func (s *Store) AddConcealed(ctx context.Context, e Entry, hash func(string) string) (Entry, error) {
	address := Normalize(e.Address)
	if address == "" {
		return Entry{}, invalid("address: required")
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now().UTC()
	}
	e.Address, e.AddressHash = "", hash(address)
	return s.Records().Patch(ctx, key(e.Tenant, e.Channel, address, e.Category), func(v *Entry, _ bool) (resource.Write, error) {
		*v = e
		return resource.Replace, nil
	})
}
