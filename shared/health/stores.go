package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// FailingAfter is how many writes in a row must fail before a store counts
// as failing: one timeout is a hiccup, three are a store that refuses.
const FailingAfter = 3

// Stores follows the writes this process makes to JetStream key-value
// buckets and object stores (the delivery ledger, the documents store…),
// store by store. A store whose last FailingAfter writes all failed makes
// Check fail and herald_store_failing 1 until a write succeeds again;
// herald_store_failures_total counts every failed write.
//
// This matters because a failing store may not recover by itself: once a
// write to a stream's files fails (a full disk), nats-server keeps failing
// every write to that stream, even after space returns, until the server is
// restarted — while connections, stream listings and account info all still
// answer.
type Stores struct {
	mu       sync.Mutex
	inARow   map[string]int   // failed writes in a row, by store
	last     map[string]error // the last failure, by store
	failures metric.Int64Counter
}

// NewStores creates the tracker and its metrics.
func NewStores(mp metric.MeterProvider) (*Stores, error) {
	s := &Stores{inARow: map[string]int{}, last: map[string]error{}}
	m := mp.Meter("github.com/heraldhq/herald/shared/health")
	var err error
	s.failures, err = m.Int64Counter("herald.store.failures",
		metric.WithDescription("Writes to a JetStream key-value bucket or object store that failed, by store."))
	if err != nil {
		return nil, err
	}
	failing, err := m.Int64ObservableGauge("herald.store.failing",
		metric.WithDescription(fmt.Sprintf("1 while a store's last %d writes failed, by store.", FailingAfter)))
	if err != nil {
		return nil, err
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		for store, n := range s.inARow {
			o.ObserveInt64(failing, boolInt(n >= FailingAfter), metric.WithAttributes(attribute.String("store", store)))
		}
		return nil
	}, failing)
	return s, err
}

// Observe records the outcome of one write to store. A refusal that proves
// the store works — the key exists, the revision moved on — is a success; a
// write abandoned by its caller (context.Canceled) says nothing either way.
func (s *Stores) Observe(ctx context.Context, store string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil || answered(err) {
		s.inARow[store] = 0
		delete(s.last, store)
		return
	}
	s.inARow[store]++
	s.last[store] = err
	s.failures.Add(ctx, 1, metric.WithAttributes(attribute.String("store", store)))
}

// answered reports whether err is the store's answer to a write it
// considered: proof it works.
func answered(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrObjectNotFound) ||
		(errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence)
}

// Check is a readiness check: it fails naming every failing store.
func (s *Stores) Check(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var failing []string
	for store, n := range s.inARow {
		if n >= FailingAfter {
			failing = append(failing, fmt.Sprintf("%s: the last %d writes failed (%v)", store, n, s.last[store]))
		}
	}
	if len(failing) == 0 {
		return nil
	}
	slices.Sort(failing)
	return fmt.Errorf("%s; if the NATS server's disk filled up, free space and restart that server", strings.Join(failing, "; "))
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Watch returns js with every key-value bucket and object store it binds
// (KeyValue, ObjectStore) reporting its writes to s.
func (s *Stores) Watch(js jetstream.JetStream) jetstream.JetStream {
	return watchedJS{JetStream: js, stores: s}
}

type watchedJS struct {
	jetstream.JetStream
	stores *Stores
}

func (w watchedJS) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	kv, err := w.JetStream.KeyValue(ctx, bucket)
	if err != nil {
		return nil, err
	}
	return watchedKV{KeyValue: kv, stores: w.stores}, nil
}

func (w watchedJS) ObjectStore(ctx context.Context, bucket string) (jetstream.ObjectStore, error) {
	obj, err := w.JetStream.ObjectStore(ctx, bucket)
	if err != nil {
		return nil, err
	}
	return watchedObjects{ObjectStore: obj, bucket: bucket, stores: w.stores}, nil
}

// watchedKV reports the writes to one bucket.
type watchedKV struct {
	jetstream.KeyValue
	stores *Stores
}

func (w watchedKV) observe(ctx context.Context, err error) { w.stores.Observe(ctx, w.Bucket(), err) }

func (w watchedKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	rev, err := w.KeyValue.Put(ctx, key, value)
	w.observe(ctx, err)
	return rev, err
}

func (w watchedKV) PutString(ctx context.Context, key, value string) (uint64, error) {
	return w.Put(ctx, key, []byte(value))
}

func (w watchedKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	rev, err := w.KeyValue.Create(ctx, key, value, opts...)
	w.observe(ctx, err)
	return rev, err
}

func (w watchedKV) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	rev, err := w.KeyValue.Update(ctx, key, value, revision)
	w.observe(ctx, err)
	return rev, err
}

func (w watchedKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	err := w.KeyValue.Delete(ctx, key, opts...)
	w.observe(ctx, err)
	return err
}

func (w watchedKV) Purge(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	err := w.KeyValue.Purge(ctx, key, opts...)
	w.observe(ctx, err)
	return err
}

// watchedObjects reports the writes to one object store.
type watchedObjects struct {
	jetstream.ObjectStore
	bucket string
	stores *Stores
}

func (w watchedObjects) Put(ctx context.Context, meta jetstream.ObjectMeta, r io.Reader) (*jetstream.ObjectInfo, error) {
	info, err := w.ObjectStore.Put(ctx, meta, r)
	w.stores.Observe(ctx, w.bucket, err)
	return info, err
}

func (w watchedObjects) PutBytes(ctx context.Context, name string, data []byte) (*jetstream.ObjectInfo, error) {
	info, err := w.ObjectStore.PutBytes(ctx, name, data)
	w.stores.Observe(ctx, w.bucket, err)
	return info, err
}

func (w watchedObjects) PutString(ctx context.Context, name, data string) (*jetstream.ObjectInfo, error) {
	info, err := w.ObjectStore.PutString(ctx, name, data)
	w.stores.Observe(ctx, w.bucket, err)
	return info, err
}

func (w watchedObjects) PutFile(ctx context.Context, file string) (*jetstream.ObjectInfo, error) {
	info, err := w.ObjectStore.PutFile(ctx, file)
	w.stores.Observe(ctx, w.bucket, err)
	return info, err
}

func (w watchedObjects) UpdateMeta(ctx context.Context, name string, meta jetstream.ObjectMeta) error {
	err := w.ObjectStore.UpdateMeta(ctx, name, meta)
	w.stores.Observe(ctx, w.bucket, err)
	return err
}

func (w watchedObjects) Delete(ctx context.Context, name string) error {
	err := w.ObjectStore.Delete(ctx, name)
	w.stores.Observe(ctx, w.bucket, err)
	return err
}
