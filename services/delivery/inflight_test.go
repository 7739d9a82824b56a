package delivery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// Served fairly, a send waiting on the provider is told apart from one
// queueing on the cores: with SES answering in 30 ms, the fair loop's
// limit on sends in flight rises above the few it keeps when a provider
// answers at once.
func TestSendsWaitingOnASlowProviderRaiseTheLimit(t *testing.T) {
	t.Parallel()
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	b.ses.Faults(func(int) sestest.Fault {
		answer := make(chan struct{})
		time.AfterFunc(30*time.Millisecond, func() { close(answer) })
		return sestest.Hold(answer)
	})
	const n = 200
	for i := range n {
		b.publish(t, i)
	}
	// More workers than the least, wherever many cores make it large.
	workers := max(64, delivery.LeastInFlight)
	b.svc = b.worker(t, b.nats.JS, func(c *config) { c.Fair, c.Concurrency = true, workers })
	require.Eventually(t, func() bool { return len(b.ses.Received()) == n }, time.Minute, 10*time.Millisecond)
	require.Greater(t, b.svc.Work().Limit, delivery.LeastInFlight, "the limit on sends in flight")
}
