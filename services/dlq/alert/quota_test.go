package alert_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/dlq/alert"
)

// thresholds are two tenants' months reaching 80 % and 100 %, told in the
// order workers in parallel might tell them.
func thresholds(at time.Time) []alert.Quota {
	return []alert.Quota{
		{Tenant: "globex", Channel: "sms", Month: "2026-12", Used: 500, Quota: 500, Threshold: 100, Time: at},
		{Tenant: "acme", Channel: "email", Month: "2026-12", Used: 80, Quota: 100, Threshold: 80, Time: at},
		{Tenant: "globex", Channel: "sms", Month: "2026-12", Used: 400, Quota: 500, Threshold: 80, Time: at},
		{Tenant: "acme", Channel: "email", Month: "2026-12", Used: 100, Quota: 100, Threshold: 100, Time: at},
	}
}

// Quota thresholds and dead letters that come together go out together:
// one post to each sender, whatever mix of tenants and thresholds.
func TestQuotaThresholdsJoinTheFailuresAlert(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	slack, hook := newFakeSlack(t), newFakeWebhook(t)
	tb.cfg.Senders = []alert.Sender{alert.Slack{URL: slack.url, Client: slack.client()}, alert.Webhook{URL: hook.url, Client: hook.client()}}
	agg := alert.New(tb.cfg)
	now := tb.clock.Now()
	// Pending before Run wakes, as a batch fetched from NATS is.
	for _, q := range thresholds(now) {
		agg.AddQuota(q)
	}
	agg.Add(failure(0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agg.Run(ctx) }()
	require.Eventually(t, func() bool { return len(slack.delivered()) == 1 && len(hook.bodies()) == 1 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)

	require.Len(t, slack.delivered(), 1, "one post for the lot")
	text := slack.delivered()[0]
	require.Equal(t, 1, countIn(t, text))
	require.True(t, strings.HasSuffix(text, strings.Join([]string{
		"",
		":warning: 4 monthly quota thresholds reached",
		"• acme email 2026-12: 80 % — 80/100",
		"• acme email 2026-12: 100 % — 100/100, the rest of the month is refused",
		"• globex sms 2026-12: 80 % — 400/500",
		"• globex sms 2026-12: 100 % — 500/500, the rest of the month is refused",
	}, "\n")), text)

	var keys map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(hook.bodies()[0], &keys))
	require.Contains(t, slices.Collect(maps.Keys(keys)), "quotas")
	s := decodeStrictly(t, hook.bodies()[0])
	require.Equal(t, 1, s.Count)
	require.Equal(t, []hookQuota{
		{Tenant: "acme", Channel: "email", Month: "2026-12", Used: 80, Quota: 100, Threshold: 80, Time: now},
		{Tenant: "acme", Channel: "email", Month: "2026-12", Used: 100, Quota: 100, Threshold: 100, Time: now},
		{Tenant: "globex", Channel: "sms", Month: "2026-12", Used: 400, Quota: 500, Threshold: 80, Time: now},
		{Tenant: "globex", Channel: "sms", Month: "2026-12", Used: 500, Quota: 500, Threshold: 100, Time: now},
	}, s.Quotas)
	require.Zero(t, s.QuotasOut)
}

// A month's end across a great many tenants costs a bounded alert: the
// summary keeps the first thousand thresholds and counts the rest, and the
// chat post lists twenty.
func TestQuotaThresholdsAreBounded(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	slack, hook := newFakeSlack(t), newFakeWebhook(t)
	tb.cfg.Senders = []alert.Sender{alert.Slack{URL: slack.url, Client: slack.client()}, alert.Webhook{URL: hook.url, Client: hook.client()}}
	agg := alert.New(tb.cfg)
	for i := range 1500 {
		agg.AddQuota(alert.Quota{Tenant: fmt.Sprintf("t%04d", i), Channel: "email", Month: "2026-12",
			Used: 80, Quota: 100, Threshold: 80})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agg.Run(ctx) }()
	require.Eventually(t, func() bool { return len(slack.delivered()) == 1 && len(hook.bodies()) == 1 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)

	s := decodeStrictly(t, hook.bodies()[0])
	require.Len(t, s.Quotas, 1000)
	require.Equal(t, 500, s.QuotasOut)
	lines := strings.Split(slack.delivered()[0], "\n")
	require.Equal(t, ":warning: 1,500 monthly quota thresholds reached", lines[0])
	require.Len(t, lines, 1+20+1)
	require.Equal(t, "• …and 1,480 more", lines[21])
}
