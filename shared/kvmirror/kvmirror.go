// Package kvmirror keeps a JetStream key-value bucket in memory, current
// through a watch, for paths that would otherwise read it per message: the
// tenant registry, the suppressed addresses. A change reaches the copy as
// soon as the server delivers it to the watch — well within a second on a
// healthy connection. List reads part of a bucket once, for the stores
// that list a tenant's keys.
package kvmirror

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Mirror is a bucket's values as read by decode, by key.
type Mirror[T any] struct {
	decode   func(jetstream.KeyValueEntry) (T, bool)
	follower *Follower

	mu     sync.RWMutex
	values map[string]T
}

// Watch binds to bucket and starts following it; it returns once every
// key present when it began is loaded (ctx bounds that wait, not the
// watch). decode reads a value; false leaves its key out, as if deleted.
// Stop ends the watch.
func Watch[T any](ctx context.Context, js jetstream.JetStream, bucket string, decode func(jetstream.KeyValueEntry) (T, bool)) (*Mirror[T], error) {
	m := &Mirror[T]{decode: decode, values: map[string]T{}}
	f, err := Follow(ctx, js, bucket, m.apply)
	if err != nil {
		return nil, err
	}
	m.follower = f
	return m, nil
}

// Keys are the keys the copy holds now, in no order: those whose value
// decode kept.
func (m *Mirror[T]) Keys() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Collect(maps.Keys(m.values))
}

func (m *Mirror[T]) apply(entry jetstream.KeyValueEntry) {
	var (
		v  T
		ok bool
	)
	if entry.Operation() == jetstream.KeyValuePut {
		v, ok = m.decode(entry)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ok {
		m.values[entry.Key()] = v
	} else {
		delete(m.values, entry.Key())
	}
}

// Get returns key's value as last seen.
func (m *Mirror[T]) Get(key string) (T, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.values[key]
	return v, ok
}

// Stop ends the watch and waits for the copy to stop updating. Get keeps
// answering with the last values seen.
func (m *Mirror[T]) Stop() { m.follower.Stop() }

// List reads, once, the values of bucket's keys that match filter (a
// subject filter: "acme.>"), in no order: a listing where a mirror would
// be too much. A key deleted between being listed and being read is left
// out.
func List[T any](ctx context.Context, kv jetstream.KeyValue, filter string, decode func(jetstream.KeyValueEntry) (T, error)) ([]T, error) {
	lister, err := kv.ListKeysFiltered(ctx, filter)
	if err != nil {
		return nil, err
	}
	var out []T
	for k := range lister.Keys() {
		kve, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		v, err := decode(kve)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
