package history_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	svchistory "github.com/heraldhq/herald/services/history"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/streams"
)

// directory is the tenants' subscribers, as the API and the CLI write them.
func directory(t *testing.T, b *bundle) *recipient.Directory {
	t.Helper()
	d, err := recipient.Open(heraldtest.Context(t), b.nats.JS)
	require.NoError(t, err)
	return d
}

// listed waits until the index lists want (ids) for q, and returns them.
func listed(t *testing.T, store *history.Store, q history.SubscriberQuery, want ...string) []history.Subscriber {
	t.Helper()
	var got []history.Subscriber
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		page, err := store.Subscribers(heraldtest.Context(t), q)
		require.NoError(c, err)
		ids := []string{}
		for _, s := range page.Subscribers {
			ids = append(ids, s.ID)
		}
		require.Equal(c, append([]string{}, want...), ids)
		got = page.Subscribers
	}, 10*time.Second, 10*time.Millisecond)
	return got
}

// The index follows the subscribers bucket: a subscriber put is listed,
// found by their email and either number; a changed email moves them from
// one search to the other; a delete or a purge takes them out.
func TestTheIndexFollowsTheSubscribersBucket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	store := openStore(t)
	start(t, b, store)
	d, ctx := directory(t, b), heraldtest.Context(t)
	olga := recipient.Subscriber{Tenant: "acme", ID: "u-olga", Name: "Olga", Email: "olga@zarya.example",
		Phone: "+34600111222", WhatsApp: "+34600111333", Locale: "ru", Timezone: "Europe/Moscow", Data: []byte(`{"vip":true}`)}
	_, err := d.Subscribers.Put(ctx, olga)
	require.NoError(t, err)
	_, err = d.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "Ivan Petrov.*>", Email: "ivan@zarya.example"})
	require.NoError(t, err)

	all := listed(t, store, history.SubscriberQuery{Tenant: "acme"}, "Ivan Petrov.*>", "u-olga")
	got := all[1]
	require.Positive(t, got.Revision)
	require.False(t, got.UpdatedAt.IsZero())
	got.Revision, got.UpdatedAt = 0, time.Time{}
	require.Equal(t, history.Subscriber{Tenant: "acme", ID: "u-olga", Name: "Olga", Email: "olga@zarya.example",
		Phone: "+34600111222", WhatsApp: "+34600111333", Locale: "ru", Timezone: "Europe/Moscow"}, got)
	listed(t, store, history.SubscriberQuery{Tenant: "acme", Email: "OLGA@zarya.example"}, "u-olga")
	listed(t, store, history.SubscriberQuery{Tenant: "acme", Phone: "+34600111333"}, "u-olga")

	olga.Email = "olga@sales.zarya.example"
	_, err = d.Subscribers.Put(ctx, olga)
	require.NoError(t, err)
	listed(t, store, history.SubscriberQuery{Tenant: "acme", Email: "olga@sales.zarya.example"}, "u-olga")
	listed(t, store, history.SubscriberQuery{Tenant: "acme", Email: "olga@zarya.example"})

	require.NoError(t, d.Subscribers.Delete(ctx, recipient.SubscriberKey("acme", "u-olga")))
	listed(t, store, history.SubscriberQuery{Tenant: "acme"}, "Ivan Petrov.*>")
	listed(t, store, history.SubscriberQuery{Tenant: "acme", Phone: "+34600111222"})

	// Erasure purges the key, history and all.
	kv, err := b.nats.JS.KeyValue(ctx, recipient.SubscribersBucket)
	require.NoError(t, err)
	require.NoError(t, kv.Purge(ctx, recipient.SubscriberKey("acme", "Ivan Petrov.*>")))
	listed(t, store, history.SubscriberQuery{Tenant: "acme"})
}

// The subscriber index is derived: a new one, fed from the start of the
// bucket's stream (the consumer deleted and declared again), lists what
// the first one did.
func TestTheSubscriberIndexIsRebuiltFromTheBucket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d, ctx := directory(t, b), heraldtest.Context(t)
	var want []string
	for i := range 30 {
		id := fmt.Sprintf("u-%02d", i)
		s := recipient.Subscriber{Tenant: "acme", ID: id, Email: id + "@old.example"}
		_, err := d.Subscribers.Put(ctx, s)
		require.NoError(t, err)
		s.Email = id + "@new.example"
		_, err = d.Subscribers.Put(ctx, s)
		require.NoError(t, err)
		if i%3 == 0 {
			require.NoError(t, d.Subscribers.Delete(ctx, recipient.SubscriberKey("acme", id)))
			continue
		}
		want = append(want, id)
	}
	first := openStore(t)
	svc, err := svchistory.New(b.nats.JS, svchistory.Config{Store: first})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	q := history.SubscriberQuery{Tenant: "acme", Limit: history.MaxLimit}
	indexed := listed(t, first, q, want...)
	require.NoError(t, svc.Stop(ctx))

	require.NoError(t, b.nats.JS.DeleteConsumer(ctx, svchistory.SubscribersStream, svchistory.Durable))
	report, err := streams.Apply(ctx, b.nats.JS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	rebuilt := openStore(t)
	start(t, b, rebuilt)
	require.Equal(t, indexed, listed(t, rebuilt, q, want...))
	for _, s := range indexed {
		require.Equal(t, s.ID+"@new.example", s.Email)
	}
}

// refusingSubscribers refuses its first subscriber writes, as a database
// restarting does.
type refusingSubscribers struct {
	*history.Store
	refusals int
	calls    chan struct{}
}

func (r *refusingSubscribers) ApplySubscribers(ctx context.Context, changes []history.SubscriberChange) error {
	r.calls <- struct{}{}
	if r.refusals > 0 {
		r.refusals--
		return fmt.Errorf("connection refused")
	}
	return r.Store.ApplySubscribers(ctx, changes)
}

// A subscriber change the index refused is delivered again until it takes
// it.
func TestSubscriberChangesWaitForTheIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	store := &refusingSubscribers{Store: openStore(t), refusals: 2, calls: make(chan struct{}, 100)}
	start(t, b, store)
	_, err := directory(t, b).Subscribers.Put(heraldtest.Context(t), recipient.Subscriber{Tenant: "acme", ID: "u-olga"})
	require.NoError(t, err)
	listed(t, store.Store, history.SubscriberQuery{Tenant: "acme"}, "u-olga")
	require.GreaterOrEqual(t, len(store.calls), 3, "refused twice first")
}
