package delivery_test

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/quota"
)

// perMonth is every tenant's email quota, changed as an upgrade would.
type perMonth struct{ n atomic.Int64 }

func (p *perMonth) Limit(_ string, c event.Channel) quota.Limit {
	return quota.Limit{PerMonth: p.n.Load(), Limited: c == event.ChannelEmail}
}

// A tenant with an email quota of 3 a month gets 5 notifications, and
// copies of them: 3 are sent and counted once each, whatever copies come;
// 2 are dead-lettered unsent with the quota in their reason and counted as
// refused; the tenant is told at 80 % and 100 %. After an upgrade, a
// redriven refusal is counted again, and sent.
func TestNotificationsOverTheMonthlyQuotaAreDeadLetteredUnsent(t *testing.T) {
	t.Parallel()
	limit := &perMonth{}
	limit.n.Store(3)
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	b.svc = b.worker(t, b.nats.JS, func(c *config) { c.Quotas = limit })
	ctx := heraldtest.Context(t)
	month := quota.Month(time.Now())

	for n := range 5 {
		b.publish(t, n)
	}
	b.waitSettled(t)
	// Copies past the duplicate window: the ledger stops them, and they
	// count nothing more.
	b.publishAs(t, 0, "copy-0")
	b.publishAs(t, 1, "copy-1")
	b.waitSettled(t)
	require.Equal(t, 3, b.sent())

	dlq := b.dlq(t)
	require.Len(t, dlq, 2)
	reason := fmt.Sprintf("quota exceeded: email 3/3 (%s)", month)
	for _, e := range dlq {
		require.Equal(t, reason, e.Header.Get(deadletter.HeaderReason))
	}
	refused := b.ledgerEntry(t, 4)
	require.Equal(t, ledger.Failed, refused.State)
	require.Equal(t, reason, refused.Reason)
	require.Empty(t, refused.Counted, "a refusal is not counted as used")
	require.Equal(t, month, b.ledgerEntry(t, 0).Counted)
	require.Zero(t, b.ses.Calls()-3, "no provider was called for a refusal")

	counter := quota.New(b.nats.JS)
	key := quota.Key{Tenant: "acme", Channel: event.ChannelEmail, Month: month}
	usage, err := counter.Usage(ctx, key, quota.Limit{PerMonth: 3, Limited: true})
	require.NoError(t, err)
	require.EqualValues(t, 3, usage.Used)
	require.EqualValues(t, 2, usage.Refused)

	var told []quota.Event
	for _, m := range b.streamMessages(t, "STATUS") {
		var ev quota.Event
		require.NoError(t, json.Unmarshal(m.Data, &ev))
		if ev.Type == quota.WarningType || ev.Type == quota.ExceededType {
			ev.Time = time.Time{}
			told = append(told, ev)
		}
	}
	require.Equal(t, []quota.Event{
		{Type: quota.WarningType, Tenant: "acme", Channel: event.ChannelEmail, Month: month, Used: 3, Quota: 3, Threshold: 80},
		{Type: quota.ExceededType, Tenant: "acme", Channel: event.ChannelEmail, Month: month, Used: 3, Quota: 3, Threshold: 100},
	}, told, "80 %% of 3 rounds up to 3")

	// An upgrade, then a redrive of one refusal (its original subject and
	// body, a fresh Nats-Msg-Id): counted now, and sent.
	limit.n.Store(10)
	b.publishAs(t, 4, "redrive-4")
	b.waitSettled(t)
	require.Equal(t, 4, b.sent())
	require.Equal(t, ledger.Delivered, b.ledgerEntry(t, 4).State)
	usage, err = counter.Usage(ctx, key, quota.Limit{PerMonth: 10, Limited: true})
	require.NoError(t, err)
	require.EqualValues(t, 4, usage.Used)
	require.EqualValues(t, 2, usage.Refused)
}

// A notification whose first two tries fail at the provider (transient) and
// whose third is delivered is one notification of the month: the claims of
// its redelivered copies find it Counted and count nothing more.
func TestANotificationRetriedAfterATransientFailureCountsOnce(t *testing.T) {
	t.Parallel()
	limit := &perMonth{}
	limit.n.Store(10)
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	b.ses.Faults(emailtest.FailFirst(2, sestest.ServerError))
	b.svc = b.worker(t, b.nats.JS, func(c *config) { c.Quotas = limit })
	month := quota.Month(time.Now())

	b.publish(t, 1)
	b.waitSettled(t)
	require.Equal(t, 3, b.calls(), "two transient failures, then the send")
	require.Equal(t, 1, b.sent())
	e := b.ledgerEntry(t, 1)
	require.Equal(t, ledger.Delivered, e.State)
	require.Equal(t, 3, e.Tries)
	require.Equal(t, month, e.Counted)

	usage, err := quota.New(b.nats.JS).Usage(heraldtest.Context(t), quota.Key{Tenant: "acme", Channel: event.ChannelEmail, Month: month},
		quota.Limit{PerMonth: 10, Limited: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, usage.Used, "counted once, not once per try")
	require.Zero(t, usage.Refused)
}
