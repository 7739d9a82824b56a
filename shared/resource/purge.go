package resource

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/nats-io/nats.go/jetstream"
)

// opPurge is a revision that removed a key and every revision before it.
const opPurge = "PURGE"

// Purge removes the record at key together with every earlier revision
// the bucket keeps of it: a Delete leaves those readable in the key's
// history, which is what an erasure must not. One purge marker stays,
// naming who purged (WithActor) and nothing of the record. Purging a key
// with nothing kept is not an error; found says whether anything was. The
// bucket must allow rollups.
func (s *Store[T]) Purge(ctx context.Context, key string) (found bool, err error) {
	kept, err := s.Revisions(ctx, key)
	if err != nil {
		return false, err
	}
	if len(kept) == 0 {
		return false, nil
	}
	_, err = s.publish(ctx, key, nil, change{op: opPurge, rollup: true})
	return true, err
}

// Revisions are the records the bucket still keeps at key, oldest first:
// the current one, if any, and the earlier ones its history holds (those
// before a delete marker included). None, and no error, when it keeps
// none.
func (s *Store[T]) Revisions(ctx context.Context, key string) ([]T, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	entries, err := s.kv.History(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: history of %s: %w", s.kind.Name, key, err)
	}
	var out []T
	for _, e := range entries {
		if e.Operation() != jetstream.KeyValuePut {
			continue
		}
		v, err := s.decode(e)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// patternToken is one token of a Match pattern: a key's, or '*'.
var patternToken = regexp.MustCompile(`^(\*|[-/_=A-Za-z0-9]+)(\.(\*|[-/_=A-Za-z0-9]+))*$`)

// Match lists the tenant's keys that match pattern, the part of a key
// after the tenant, where '*' stands for any one token ("*.<token>": every
// key whose second token after the tenant is that one) — deleted ones
// included, whose earlier revisions the bucket may still keep. Only the
// tenant's keys are read.
func (s *Store[T]) Match(ctx context.Context, tenant, pattern string) ([]string, error) {
	if !tokenPattern.MatchString(tenant) || !patternToken.MatchString(pattern) {
		return nil, fmt.Errorf("%w: %q under tenant %q is not a key pattern", ErrInvalid, pattern, tenant)
	}
	filter := tenant + "." + pattern
	w, err := s.kv.WatchFiltered(ctx, []string{filter}, jetstream.MetaOnly())
	if err != nil {
		return nil, fmt.Errorf("%s: listing %s: %w", s.kind.Name, filter, err)
	}
	defer func() { _ = w.Stop() }()
	var keys []string
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: listing %s: %w", s.kind.Name, filter, ctx.Err())
		case e := <-w.Updates():
			if e == nil { // every key present when the watch began was seen
				return keys, nil
			}
			keys = append(keys, e.Key())
		}
	}
}
