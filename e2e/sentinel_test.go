package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// Redis behind Sentinel loses its master in the middle of a burst of 800
// notifications whose provider calls take 20 ms: the sentinels promote the
// replica, Herald follows it, and every notification is delivered exactly
// once — the leases taken on the old master may be gone (replication is
// asynchronous), but the ledger's claim still stops a second send. The
// pause is measured and printed (the target, resuming within 10 s
// of the promotion, is a figure to read, not a timed assertion).
func TestASentinelFailoverSendsNothingTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("failover")
	}
	t.Parallel()
	set := heraldtest.StartSentinelSet(t)
	failoverBurst(t, set.URL(), func() string { return set.KillMaster() }, func(old string) bool { return set.MasterAddr() != old })
}

// The same against a Redis Cluster of three masters, one of them killed:
// the lease's batched round trips are split by node, and its keys live in
// every slot.
func TestAClusterFailoverSendsNothingTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("failover")
	}
	t.Parallel()
	set := heraldtest.StartClusterSet(t)
	failoverBurst(t, set.URL(), func() string { return set.KillMaster() }, func(string) bool { return set.Healed() })
}

func failoverBurst(t *testing.T, redisURL string, kill func() string, promoted func(old string) bool) {
	f := fakeProviders(t)
	f.ses.Faults(func(int) sestest.Fault { return sestest.Timeout(20 * time.Millisecond) })
	p := startPipeline(t, f.configure, withoutDocuments, func(c *app.Config) {
		c.Redis.URL = redisURL
		c.Email.Timeout = 10 * time.Second // slow, never ambiguous
	})

	// × 2 recipients: hundreds wait when the master is killed, as 2,000
	// did, at two fifths of the CPU under -race.
	const orders = 400
	start := time.Now()
	for i := range orders {
		p.publishAsync(t, "orders.created", fmt.Sprintf("evt-failover-%d", i), sample(t, "order.created.json", func(m map[string]any) {
			m["id"] = fmt.Sprintf("evt-failover-%d", i)
			m["data"].(map[string]any)["order"].(map[string]any)["id"] = fmt.Sprintf("PO-FAILOVER-%04d", i)
		}))
	}
	p.waitPublished(t)
	require.Eventually(t, func() bool { return len(f.ses.Received()) >= 2*orders/3 }, 2*time.Minute, 10*time.Millisecond)

	old := kill()
	killed, before := time.Now(), len(f.ses.Received())
	var promotedAfter time.Duration
	require.Eventually(t, func() bool {
		if !promoted(old) {
			return false
		}
		promotedAfter = time.Since(killed)
		return true
	}, 60*time.Second, 50*time.Millisecond, "a replica took the killed master's place")
	require.Eventually(t, func() bool { return len(f.ses.Received()) > before+10 }, 60*time.Second, 10*time.Millisecond,
		"deliveries resume")
	resumed := time.Since(killed)
	p.settle(t)
	settled := time.Since(killed)

	sent := f.sent(t)
	require.Len(t, sent, 2*orders, "every notification delivered")
	for id, n := range sent {
		require.Equal(t, 1, n, "notification %s sent once", id)
	}
	_, ready := p.get(t, "/readyz")
	require.Regexp(t, `"redis":"ok: (sentinel|cluster), masters 127\.0\.0\.1:\d+`, ready, "readiness names the masters")
	t.Logf("master %s killed %s into the burst, with %d of %d sent; a replica promoted after %s; deliveries resumed %s after the kill; all settled %s after it",
		old, killed.Sub(start).Round(10*time.Millisecond), before, 2*orders, promotedAfter.Round(10*time.Millisecond),
		resumed.Round(10*time.Millisecond), settled.Round(10*time.Millisecond))
}
