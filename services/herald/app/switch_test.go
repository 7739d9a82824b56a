package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/email/ses"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/streams"
)

// upgrade is a NATS server with Herald's streams, a fake SES speaking the
// real wire protocol and a Redis lease shared by the replicas of a rolling
// upgrade: each replica is an email delivery service on a connection of
// its own, as another process's.
type upgrade struct {
	nats   *heraldtest.NATS
	ses    *sestest.Server
	locker *lock.Redis
	sent   int // deliveries published
	// logs are every replica's.
	logs heraldtest.Buffer
}

const (
	switchTenants   = 6
	switchPerTenant = 400
	// replicaWorkers is a replica's workers: 4 per priority, first come,
	// first served or fair alike.
	replicaWorkers = 12
	// sentBefore is how many sends the old replica makes before the next
	// replicaWorkers calls, whoever makes them, are held by a slow
	// provider: the upgrade comes with every send the old replica has in
	// flight held, its delivery unacknowledged.
	sentBefore = 300
)

// schedulingConfig is a deployment's configuration with scheduling.fair
// set.
func schedulingConfig(fair bool) app.Config {
	var cfg app.Config
	cfg.Scheduling.Fair = &fair
	return cfg
}

// newUpgrade applies the streams as a deployment with fair set does, and
// publishes a backlog across several tenants and every priority.
func newUpgrade(t *testing.T, fair bool) *upgrade {
	t.Helper()
	u := &upgrade{nats: heraldtest.StartNATS(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	u.apply(t, fair)
	for i := range switchTenants * switchPerTenant {
		u.publish(t, fmt.Sprintf("tenant%d", i%switchTenants), notification.Priorities[i%len(notification.Priorities)], i)
	}
	return u
}

// apply runs `herald streams apply` as a deployment with fair set does.
func (u *upgrade) apply(t *testing.T, fair bool) streams.Report {
	t.Helper()
	report, err := streams.Apply(heraldtest.Context(t), u.nats.JS, schedulingConfig(fair).StreamOptions())
	require.NoError(t, err)
	require.NoError(t, report.Err())
	return report
}

func (u *upgrade) publish(t *testing.T, tenant string, p notification.Priority, n int) {
	t.Helper()
	key := notification.Key{Tenant: tenant, Subject: fmt.Sprintf("PO-%d", n), Revision: 1, Document: "purchase_order",
		Channel: event.ChannelEmail, Recipient: "olga@zarya.example"}.String()
	body, err := json.Marshal(notification.Delivery{
		ID: notification.ID(key), DedupeKey: key, Tenant: tenant, Channel: event.ChannelEmail, Priority: p,
		Recipient: notification.Recipient{Name: "Olga", Address: "olga@zarya.example"}, Template: "purchase_order", Locale: "en",
		Document: &notification.Document{Type: "purchase_order"},
		Order:    &notification.OrderSummary{ID: fmt.Sprintf("PO-%d", n), Revision: 1, Currency: "EUR", Totals: event.Totals{Gross: "1.00"}},
	})
	require.NoError(t, err)
	msg := nats.NewMsg(fmt.Sprintf("notify.email.%s.%s", p, tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, key)
	_, err = u.nats.JS.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
	u.sent++
}

// replica starts an email delivery service with scheduling.fair set, on
// a NATS connection of its own; stop drains it (once, whether the test
// or its cleanup calls it).
func (u *upgrade) replica(t *testing.T, fair bool) (stop func()) {
	t.Helper()
	nc, err := nats.Connect(u.nats.Server.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	provider, err := ses.New(context.Background(), ses.Config{
		Region: "eu-west-1", Endpoint: u.ses.URL(), HTTPClient: &http.Client{Transport: tr},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	})
	require.NoError(t, err)
	ch, err := email.NewChannel(email.ChannelConfig{From: "Orders <orders@acme.example>", Providers: []email.Named{{Name: "ses", Provider: provider}}})
	require.NoError(t, err)
	svc, err := delivery.New(js, delivery.Config{Channel: ch, Locker: u.locker, Concurrency: replicaWorkers / len(notification.Priorities),
		RetryDelay: 50 * time.Millisecond, Fair: fair, Logger: slog.New(slog.NewTextHandler(&u.logs, nil))})
	require.NoError(t, err)
	// As a process's: its followers (templates, suppressions,
	// preferences) live as long as it does, not a round trip's 30 s.
	require.NoError(t, svc.Start(t.Context()))
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, svc.Stop(ctx), "the replica drains")
		})
	}
	t.Cleanup(stop)
	return stop
}

// holdAfter makes SES hold the replicaWorkers calls after the first
// sentBefore, until release is closed: a slow provider.
func (u *upgrade) holdAfter(release <-chan struct{}) {
	u.ses.Faults(func(call int) sestest.Fault {
		if call > sentBefore && call <= sentBefore+replicaWorkers {
			return sestest.Hold(release)
		}
		return sestest.None
	})
}

// settled waits until NOTIFY holds nothing, then asserts that SES received
// every delivery once (by notification id), none tried twice, and none was
// dead-lettered.
func (u *upgrade) settled(t *testing.T) {
	t.Helper()
	notify, err := u.nats.JS.Stream(heraldtest.Context(t), "NOTIFY")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		info, err := notify.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs == 0
	}, 3*time.Minute, 20*time.Millisecond, "nothing left pending: SES has %d of %d", u.ses.Calls(), u.sent)
	ids := map[string]int{}
	for _, r := range u.ses.Received() {
		ids[r.Tags[ses.TagNotificationID]]++
	}
	require.Len(t, ids, u.sent, "every delivery reached SES")
	for id, n := range ids {
		require.Equal(t, 1, n, "%s sent once", id)
	}
	require.Equal(t, u.sent, u.ses.Calls(), "no send tried twice")
	require.Empty(t, heraldtest.StreamMessages(t, u.nats.JS, "DLQ"), "nothing dead-lettered")
}

// consumers names NOTIFY's consumers.
func (u *upgrade) consumers(t *testing.T) []string {
	t.Helper()
	ctx := heraldtest.Context(t)
	s, err := u.nats.JS.Stream(ctx, "NOTIFY")
	require.NoError(t, err)
	var out []string
	names := s.ConsumerNames(ctx)
	for name := range names.Name() {
		out = append(out, name)
	}
	require.NoError(t, names.Err())
	return out
}

// roll is a rolling upgrade from a replica with scheduling.fair set to
// from, to one with it set to to: the old replica works through the
// backlog until every send it has in flight is held by a slow provider; the
// chart's hook runs `herald streams apply` with the new configuration (if
// apply) and a new replica starts beside the old one; the provider
// answers, and the old replica is stopped once the new one is serving.
func roll(t *testing.T, from, to, apply bool) *upgrade {
	t.Helper()
	u := newUpgrade(t, from)
	release := make(chan struct{})
	u.holdAfter(release)
	stopOld := u.replica(t, from)
	// Every worker's: first come, first served keeps them all in flight,
	// and a fair replica too — its limit's least (delivery's
	// leastInFlight, 18 sends a core) is above its 12 workers.
	require.Eventually(t, func() bool { return u.ses.Calls() >= sentBefore+replicaWorkers }, time.Minute, 5*time.Millisecond,
		"the old replica's sends in flight are held")
	if apply {
		u.apply(t, to)
	}
	u.replica(t, to)
	require.Eventually(t, func() bool { return u.ses.Calls() >= sentBefore+replicaWorkers+200 }, time.Minute, 5*time.Millisecond,
		"the new replica serves beside the old one")
	close(release)
	stopOld()
	u.settled(t)
	return u
}

// A deployment that served first come, first served switches to fair in
// a rolling upgrade: `streams apply` (the chart's hook, before the new
// pods) removes the durables while the old replica holds deliveries a slow
// provider keeps, a fair replica starts beside it and takes the backlog —
// the deliveries the old replica held included, which its lease and the
// ledger keep from being sent again — and the old replica, stopped, drains.
func TestRollingUpgradeToFairSendsEveryDeliveryOnce(t *testing.T) {
	t.Parallel()
	u := roll(t, false, true, true)
	for _, name := range u.consumers(t) {
		_, perTenant := streams.DurableOf(name)
		require.True(t, perTenant, "%s: only the tenants' consumers are left", name)
	}
}

// Without the hook (streamsJob disabled, the services applying nothing),
// the fair replica removes the durables itself when it starts: the same
// upgrade sends every delivery once.
func TestFairReplicaConvertsWhenStreamsWereNotApplied(t *testing.T) {
	t.Parallel()
	roll(t, false, true, false)
}

// Back: a fair deployment switches to first come, first served. `streams
// apply` removes the tenants' consumers (the old replica's, some holding
// deliveries) and makes the durables; the old replica, its consumers gone,
// cannot make them again beside the durables and serves nothing more; the
// new one takes everything, the deliveries the old one held included.
func TestRollingUpgradeToFirstComeSendsEveryDeliveryOnce(t *testing.T) {
	t.Parallel()
	u := roll(t, true, false, true)
	var durables []string
	for _, p := range notification.Priorities {
		durables = append(durables, fmt.Sprintf("email-%s", p))
	}
	for _, name := range u.consumers(t) {
		_, perTenant := streams.DurableOf(name)
		require.False(t, perTenant, "%s: no tenant's consumer is left", name)
	}
	require.Subset(t, u.consumers(t), durables)
}

// An old release's `streams apply` running mid-upgrade (a retried hook, an
// operator) puts the first-come durables back and removes the tenants'
// consumers under a fair replica, which then cannot make them beside the
// durables and retries. Once `streams apply` runs with fair on again, the
// same replica, not restarted, serves the rest: every delivery once.
func TestFairReplicaRecoversFromAnOldApply(t *testing.T) {
	t.Parallel()
	u := newUpgrade(t, true)
	u.replica(t, true)
	require.Eventually(t, func() bool { return u.ses.Calls() >= sentBefore }, time.Minute, 5*time.Millisecond)
	report := u.apply(t, false)
	require.NotEmpty(t, byAction(report, streams.Removed), "the old apply removed the tenants' consumers")
	require.Eventually(t, func() bool {
		return strings.Contains(u.logs.String(), "filtered consumer not unique on workqueue stream")
	},
		time.Minute, 10*time.Millisecond, "the fair replica says why it cannot make a tenant's consumer")
	stalled := u.ses.Calls()
	report = u.apply(t, true)
	require.Subset(t, byAction(report, streams.Removed), []string{"NOTIFY > email-normal", "NOTIFY > email-low", "NOTIFY > email-critical"})
	u.settled(t)
	require.Less(t, stalled, u.sent, "the old apply came while deliveries were waiting")
}

// byAction lists the consumers a report gives action, as "STREAM > name".
func byAction(r streams.Report, action streams.Action) []string {
	var out []string
	for _, res := range r {
		if res.Kind == "consumer" && res.Action == action {
			out = append(out, res.Stream+" > "+res.Name)
		}
	}
	return out
}
