package resource

import "context"

// Upsert writes v as Put does, replacing whatever record its key had, and
// says whether there was none — whether this write created the record, as
// an HTTP PUT answers 201 rather than 200. To say so truly it writes at the
// revision it read, as Patch does (again from the read when another writer
// came first; ErrConflict after five such races), where Put writes blind.
func (s *Store[T]) Upsert(ctx context.Context, v T) (created bool, err error) {
	key, _, err := s.prepare(v)
	if err != nil {
		return false, err
	}
	_, err = s.Patch(ctx, key, func(cur *T, found bool) (Write, error) {
		*cur, created = v, !found
		return Save, nil
	})
	return created, err
}
