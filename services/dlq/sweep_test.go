package dlq_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
)

// countingJS hands out a ledger bucket that counts how the sweep reads it.
type countingJS struct {
	jetstream.JetStream
	gets, lists atomic.Int64
}

func (c *countingJS) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	kv, err := c.JetStream.KeyValue(ctx, bucket)
	if err != nil || bucket != ledger.Bucket {
		return kv, err
	}
	return countingKV{KeyValue: kv, js: c}, nil
}

type countingKV struct {
	jetstream.KeyValue
	js *countingJS
}

func (c countingKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	c.js.gets.Add(1)
	return c.KeyValue.Get(ctx, key)
}

func (c countingKV) ListKeys(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyLister, error) {
	c.js.lists.Add(1)
	return c.KeyValue.ListKeys(ctx, opts...)
}

func (c countingKV) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	c.js.lists.Add(1)
	return c.KeyValue.WatchAll(ctx, opts...)
}

func (c countingKV) Keys(ctx context.Context, opts ...jetstream.WatchOpt) ([]string, error) {
	c.js.lists.Add(1)
	return c.KeyValue.Keys(ctx, opts...)
}

// delivered records n notifications as delivered.
func (b *bundle) delivered(t *testing.T, n int) {
	t.Helper()
	ctx := heraldtest.Context(t)
	for i := range n {
		e, err := b.ledger.Get(ctx, "acme", fmt.Sprintf("acme:SO-%d:1:sales_order:email:olga@zarya.example", i))
		require.NoError(t, err)
		e.State, e.Provider, e.ProviderMessageID = ledger.Delivered, "ses", fmt.Sprintf("ses-%d", i)
		require.NoError(t, b.ledger.Put(ctx, &e))
	}
}

// The sweep reads the retry index and the entries it names, nothing else:
// among 300 delivered notifications it finds the 3 retryable ones with 3
// reads of the ledger and no listing of it.
func TestSweepReadsOnlyTheRetryIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The index is complete from the start (the one full scan that finds
	// what an older Herald left retryable is the ledger's own test).
	require.NoError(t, b.ledger.EachRetryable(heraldtest.Context(t), func(ledger.Entry) bool { return true }))
	b.delivered(t, 150)
	b.failed(t, 3, 0)
	b.delivered(t, 300)
	js := &countingJS{JetStream: b.nats.JS}
	svc, err := dlq.New(js, dlq.Config{Sweep: dlq.SweepConfig{Interval: -1, MinAge: time.Nanosecond}})
	require.NoError(t, err)
	require.NoError(t, svc.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	n, err := svc.Sweep(heraldtest.Context(t))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Len(t, b.notify(t), 3)
	require.Zero(t, js.lists.Load(), "the sweep listed the ledger")
	require.Equal(t, int64(3), js.gets.Load(), "the sweep read ledger entries the index does not name")
	require.Empty(t, b.retryIndex(t), "resent: retrying now, out of the index")
}

// An index key naming a notification delivered or refused for good — left
// by a crash between the index write and the ledger write, say — never
// causes a resend, even when the entry still holds its delivery.
func TestStaleIndexKeyResendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	b.delivered(t, 1)
	b.failed(t, 1, 1)
	refused, err := b.ledger.Get(ctx, "acme", "acme:PO-0:1:purchase_order:email:olga@zarya.example")
	require.NoError(t, err)
	refused.Retryable, refused.Reason = false, "ses: 400 invalid address"
	require.NoError(t, b.ledger.Put(ctx, &refused))
	require.NotEmpty(t, refused.Delivery)
	require.Empty(t, b.retryIndex(t))

	idx, err := b.nats.JS.KeyValue(ctx, ledger.RetryBucket)
	require.NoError(t, err)
	for _, key := range []string{"acme:SO-0:1:sales_order:email:olga@zarya.example", refused.DedupeKey, "acme:gone"} {
		_, err = idx.Put(ctx, ledger.Key("acme", key), nil)
		require.NoError(t, err)
	}
	svc := b.service(t, dlq.SweepConfig{MinAge: time.Nanosecond}, nil)

	n, err := svc.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, b.notify(t))
}

// A notification resent as often as it may be leaves the index: later
// sweeps do not read it again.
func TestSweepRetiresWhatItMayNotResend(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.failed(t, 2, 3)
	svc := b.service(t, dlq.SweepConfig{MinAge: time.Nanosecond, MaxResends: 3}, nil)
	require.Len(t, b.retryIndex(t), 2)

	n, err := svc.Sweep(heraldtest.Context(t))
	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, b.retryIndex(t))
	e, err := b.ledger.Get(heraldtest.Context(t), "acme", "acme:PO-0:1:purchase_order:email:olga@zarya.example")
	require.NoError(t, err)
	require.Equal(t, ledger.Failed, e.State, "retired from the sweep, still failed in the ledger")
}

func (b *bundle) retryIndex(t *testing.T) []string {
	t.Helper()
	idx, err := b.nats.JS.KeyValue(heraldtest.Context(t), ledger.RetryBucket)
	require.NoError(t, err)
	keys, err := idx.Keys(heraldtest.Context(t))
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	require.NoError(t, err)
	// Ledger keys are tenant.digest; the index's mark of completeness is not one.
	return slices.DeleteFunc(keys, func(k string) bool { return !strings.Contains(k, ".") })
}
