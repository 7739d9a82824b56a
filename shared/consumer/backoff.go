package consumer

import (
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// NakWithBackoff asks for redelivery after a delay that starts near first
// and doubles with each delivery of msg, up to limit; it returns the delay.
// Handlers use it for transient failures because a consumer's BackOff
// applies only to ack timeouts, not to naks.
//
// The delay is jittered (between half and all of it): messages that failed
// together would otherwise come back together, every time — copies of one
// notification then keep colliding on its lease.
func NakWithBackoff(msg jetstream.Msg, first, limit time.Duration) time.Duration {
	n := uint64(1)
	if md, err := msg.Metadata(); err == nil && md.NumDelivered > 0 {
		n = md.NumDelivered
	}
	delay := min(first<<min(n-1, 20), limit)
	delay = delay/2 + rand.N(delay/2+1)
	_ = msg.NakWithDelay(delay)
	return delay
}
