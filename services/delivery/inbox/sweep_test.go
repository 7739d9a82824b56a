package inbox_test

import (
	"cmp"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery/inbox"
	"github.com/heraldhq/herald/shared/heraldtest"
	feeds "github.com/heraldhq/herald/shared/inbox"
	"github.com/heraldhq/herald/shared/tenant"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

const day = 24 * time.Hour

// retained is a channel whose tenants are acme, keeping inbox items 30
// days, and zarya, keeping them as the deployment does (60 days here).
func retained(t *testing.T) bundle {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	reg, err := tenant.Open(ctx, n.JS, tenant.BuiltinPlans())
	require.NoError(t, err)
	_, err = reg.Create(ctx, tenant.Tenant{ID: "acme", Plan: "startup", Retention: tenant.Retention{Inbox: tenant.Period(30 * day)}})
	require.NoError(t, err)
	_, err = reg.Create(ctx, tenant.Tenant{ID: "zarya", Plan: "startup"})
	require.NoError(t, err)
	cache, err := tenant.Watch(ctx, n.JS)
	require.NoError(t, err)
	t.Cleanup(cache.Stop)
	c, err := inbox.NewChannel(inbox.ChannelConfig{Tenants: cache, Retention: 60 * day})
	require.NoError(t, err)
	require.NoError(t, c.Open(ctx, n.JS))
	store, err := feeds.Open(ctx, n.JS)
	require.NoError(t, err)
	return bundle{n: n, store: store, c: c}
}

// written puts an item made age ago in the tenant's subscriber's feed,
// under the longest limits, as a write long ago left it.
func (b bundle) written(t *testing.T, tenantID, sub, id string, age time.Duration) {
	t.Helper()
	_, _, err := b.store.Add(heraldtest.Context(t), tenantID, sub,
		feeds.Item{ID: id, Title: id, CreatedAt: time.Now().Add(-age)}, feeds.Limits{Retention: 365 * day})
	require.NoError(t, err)
}

// ids are the items of the tenant's subscriber's feed, newest first.
func (b bundle) ids(t *testing.T, tenantID, sub string) []string {
	t.Helper()
	page, err := b.store.List(heraldtest.Context(t), tenantID, sub, feeds.Query{})
	require.NoError(t, err)
	var out []string
	for _, it := range page.Items {
		out = append(out, it.ID)
	}
	return out
}

// sweeper is the sweep over the bundle's feeds, run by the test (an
// interval of -1) unless cfg sets one.
func (b bundle) sweeper(t *testing.T, cfg inbox.SweepConfig) *inbox.Sweeper {
	t.Helper()
	cfg.Channel, cfg.Interval = b.c, cmp.Or(cfg.Interval, -1)
	s, err := inbox.NewSweeper(b.n.JS, cfg)
	require.NoError(t, err)
	require.NoError(t, s.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, s.Stop(heraldtest.Context(t))) })
	return s
}

// A write keeps its tenant's items as long as the tenant says: acme's
// 40-day-old item goes with acme's next write.
func TestAWriteKeepsItemsForItsTenantsRetention(t *testing.T) {
	t.Parallel()
	b := retained(t)
	b.written(t, "acme", "sub_1", "old", 40*day)
	_, err := try(t, b.c, shipped())
	require.NoError(t, err)
	require.Equal(t, []string{"ntf_1"}, b.ids(t, "acme", "sub_1"))
}

// A feed nobody writes to loses what its tenant's retention no longer
// keeps at the sweep; another tenant's, kept longer, stays.
func TestASweepDropsWhatATenantsRetentionNoLongerKeeps(t *testing.T) {
	t.Parallel()
	b := retained(t)
	b.written(t, "acme", "sub_1", "old", 40*day)
	b.written(t, "acme", "sub_1", "new", day)
	b.written(t, "zarya", "sub_1", "old", 40*day)
	b.written(t, "zarya", "sub_1", "older", 70*day)

	swept, err := b.sweeper(t, inbox.SweepConfig{}).Sweep(heraldtest.Context(t))
	require.NoError(t, err)
	require.Equal(t, feeds.Swept{Items: 2, Feeds: 2, Tenants: map[string]int{"acme": 1, "zarya": 1}}, swept)
	require.Equal(t, []string{"new"}, b.ids(t, "acme", "sub_1"))
	require.Equal(t, []string{"old"}, b.ids(t, "zarya", "sub_1"), "zarya keeps 60 days, the deployment's")
}

// One pass changes at most MaxFeeds feeds; the next goes on.
func TestASweepIsBoundedPerPass(t *testing.T) {
	t.Parallel()
	b := retained(t)
	for _, sub := range []string{"sub_1", "sub_2", "sub_3"} {
		b.written(t, "acme", sub, "old", 40*day)
	}
	s := b.sweeper(t, inbox.SweepConfig{MaxFeeds: 2})
	first, err := s.Sweep(heraldtest.Context(t))
	require.NoError(t, err)
	require.Equal(t, 2, first.Feeds)
	require.True(t, first.More)
	second, err := s.Sweep(heraldtest.Context(t))
	require.NoError(t, err)
	require.Equal(t, feeds.Swept{Items: 1, Feeds: 1, Tenants: map[string]int{"acme": 1}}, second)
	for _, sub := range []string{"sub_1", "sub_2", "sub_3"} {
		require.Empty(t, b.ids(t, "acme", sub), sub)
	}
}

// Replicas elect one sweeper: while another holds the sweep's lease, a
// pass drops nothing.
func TestOneInboxSweeperAtATime(t *testing.T) {
	t.Parallel()
	b := retained(t)
	b.written(t, "acme", "sub_1", "old", 40*day)
	locker := heraldtest.Locker(t)
	s := b.sweeper(t, inbox.SweepConfig{Locker: locker})
	lease, err := locker.Acquire(heraldtest.Context(t), "inbox-sweep", time.Minute)
	require.NoError(t, err)
	swept, err := s.Sweep(heraldtest.Context(t))
	require.NoError(t, err)
	require.Zero(t, swept.Items, "another replica is sweeping")
	require.Equal(t, []string{"old"}, b.ids(t, "acme", "sub_1"))
	require.NoError(t, lease.Release(heraldtest.Context(t)))
	swept, err = s.Sweep(heraldtest.Context(t))
	require.NoError(t, err)
	require.Equal(t, 1, swept.Items)
}

// Started, the inbox service sweeps at once and then on its schedule,
// with nobody calling it; stopped, it stops.
func TestTheSweepRunsOnItsOwn(t *testing.T) {
	t.Parallel()
	b := retained(t)
	b.written(t, "acme", "sub_1", "old", 40*day)
	b.sweeper(t, inbox.SweepConfig{Interval: time.Hour})
	require.Eventually(t, func() bool {
		page, err := b.store.List(heraldtest.Context(t), "acme", "sub_1", feeds.Query{})
		return err == nil && len(page.Items) == 0
	}, 10*time.Second, 10*time.Millisecond, "the first pass runs at start")
}

// A pass that stops at its bound with more feeds listed than the lister
// holds leaves nothing running (TestMain's goleak): the listing is
// cancelled and drained.
func TestAPassStoppedAtItsBoundLeavesNoListerBehind(t *testing.T) {
	t.Parallel()
	b := retained(t)
	b.written(t, "acme", "sub_0", "old", 40*day)
	for i := range 300 {
		b.written(t, "acme", fmt.Sprintf("sub_%d", i+1), "new", day)
	}
	swept, err := b.sweeper(t, inbox.SweepConfig{MaxFeeds: 1}).Sweep(heraldtest.Context(t))
	require.NoError(t, err)
	require.True(t, swept.More)
	require.Equal(t, 1, swept.Items)
}
