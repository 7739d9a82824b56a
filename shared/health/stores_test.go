package health_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/health"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
)

type storesBundle struct {
	stores *health.Stores
	reader *sdkmetric.ManualReader
}

func newStores(t *testing.T) *storesBundle {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	s, err := health.NewStores(mp)
	require.NoError(t, err)
	return &storesBundle{stores: s, reader: reader}
}

// metrics returns herald.store.failures and herald.store.failing by store.
func (b *storesBundle) metrics(t *testing.T) (failures, failing map[string]int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, b.reader.Collect(context.Background(), &rm))
	failures, failing = map[string]int64{}, map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var points []metricdata.DataPoint[int64]
			into := failures
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				points = d.DataPoints
			case metricdata.Gauge[int64]:
				points, into = d.DataPoints, failing
			}
			for _, p := range points {
				store, _ := p.Attributes.Value("store")
				into[store.AsString()] = p.Value
			}
		}
	}
	return failures, failing
}

func TestStoreFailingAfterWritesInARowFail(t *testing.T) {
	t.Parallel()
	b := newStores(t)
	ctx := context.Background()
	full := errors.New("nats: timeout waiting for ack")

	for range health.FailingAfter - 1 {
		b.stores.Observe(ctx, "documents", full)
	}
	require.NoError(t, b.stores.Check(ctx), "a hiccup is not a failing store")
	b.stores.Observe(ctx, "documents", full)
	err := b.stores.Check(ctx)
	require.ErrorContains(t, err, "documents: the last 3 writes failed (nats: timeout waiting for ack)")
	require.ErrorContains(t, err, "restart that server")
	failures, failing := b.metrics(t)
	require.Equal(t, map[string]int64{"documents": 3}, failures)
	require.Equal(t, map[string]int64{"documents": 1}, failing)

	// Refusals that prove the store works, and abandoned writes.
	b.stores.Observe(ctx, "deliveries", full)
	b.stores.Observe(ctx, "deliveries", full)
	b.stores.Observe(ctx, "deliveries", jetstream.ErrKeyExists)
	b.stores.Observe(ctx, "deliveries", full)
	b.stores.Observe(ctx, "deliveries", &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence})
	b.stores.Observe(ctx, "deliveries", full)
	b.stores.Observe(ctx, "deliveries", context.Canceled)
	b.stores.Observe(ctx, "deliveries", full)
	err = b.stores.Check(ctx)
	require.ErrorContains(t, err, "documents:")
	require.NotContains(t, err.Error(), "deliveries")

	b.stores.Observe(ctx, "documents", nil)
	require.NoError(t, b.stores.Check(ctx), "one write went through: the store works again")
	failures, failing = b.metrics(t)
	require.Equal(t, map[string]int64{"documents": 3, "deliveries": 5}, failures)
	require.Equal(t, map[string]int64{"documents": 0, "deliveries": 0}, failing)
}

// faultyJS binds buckets whose writes fail while down is set: a JetStream
// stream that keeps its write error, as nats-server does after a full disk.
type faultyJS struct {
	jetstream.JetStream
	down *atomic.Bool
}

var errWrite = errors.New("nats: timeout waiting for ack")

func (f faultyJS) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	kv, err := f.JetStream.KeyValue(ctx, bucket)
	return faultyKV{KeyValue: kv, down: f.down}, err
}

func (f faultyJS) ObjectStore(ctx context.Context, bucket string) (jetstream.ObjectStore, error) {
	obj, err := f.JetStream.ObjectStore(ctx, bucket)
	return faultyObjects{ObjectStore: obj, down: f.down}, err
}

type faultyKV struct {
	jetstream.KeyValue
	down *atomic.Bool
}

func (f faultyKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if f.down.Load() {
		return 0, errWrite
	}
	return f.KeyValue.Create(ctx, key, value, opts...)
}

type faultyObjects struct {
	jetstream.ObjectStore
	down *atomic.Bool
}

func (f faultyObjects) Put(ctx context.Context, meta jetstream.ObjectMeta, r io.Reader) (*jetstream.ObjectInfo, error) {
	if f.down.Load() {
		return nil, errWrite
	}
	return f.ObjectStore.Put(ctx, meta, r)
}

// The ledger's and the documents store's writes reach readiness through
// the JetStream handle they are opened with.
func TestWatchedStoresReachReadiness(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	b := newStores(t)
	down := &atomic.Bool{}
	js := b.stores.Watch(faultyJS{JetStream: n.JS, down: down})
	l, err := ledger.Open(ctx, js)
	require.NoError(t, err)
	docs, err := documents.Open(ctx, js)
	require.NoError(t, err)
	var checks health.Checks
	checks.Add("stores", b.stores.Check)
	ready := func() (int, string) {
		rec := httptest.NewRecorder()
		checks.ReadyHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}

	down.Store(true)
	for i := range health.FailingAfter {
		e := ledger.Entry{DedupeKey: "acme:PO-1:1:purchase_order:email:" + string(rune('a'+i)), Tenant: "acme", State: ledger.Sending}
		require.ErrorIs(t, l.Put(ctx, &e), errWrite)
		_, err := docs.Put(ctx, "acme/PO-1/purchase_order-r1.pdf", "purchase_order", []byte("%PDF-1.7"))
		require.ErrorIs(t, err, errWrite)
	}
	code, body := ready()
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "deliveries: the last 3 writes failed")
	require.Contains(t, body, "documents: the last 3 writes failed")

	down.Store(false)
	e := ledger.Entry{DedupeKey: "acme:PO-1:1:purchase_order:email:z", Tenant: "acme", State: ledger.Sending}
	require.NoError(t, l.Put(ctx, &e))
	_, err = docs.Put(ctx, "acme/PO-1/purchase_order-r1.pdf", "purchase_order", []byte("%PDF-1.7"))
	require.NoError(t, err)
	code, body = ready()
	require.Equal(t, http.StatusOK, code, body)
}
