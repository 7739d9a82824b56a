package delivery

import (
	"context"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
)

// Channel is what the protocol needs of one channel (email, sms, whatsapp,
// webhook): how to turn a delivery into one try. An adapter composes the
// message and picks its tenant's providers; it never leases, records,
// retries or settles — the protocol does that for every channel alike.
type Channel interface {
	// Name is the channel; its consumers are <name>-<priority>.
	Name() event.Channel
	// Open readies the adapter on js (the stores it reads), once, at Start.
	Open(ctx context.Context, js jetstream.JetStream) error
	// Prepare composes d and picks the providers to try, in order. A
	// permanent error (provider.Permanent) gives the notification up with
	// its reason; any other is retried like a failed try.
	Prepare(ctx context.Context, d notification.Delivery) (Try, error)
	// LongestChain is the most providers one try may call: with the
	// provider timeout, how long a try may take, which the lease outlives.
	LongestChain() int
}

// Try is one try, ready to go: the providers to pass over in order, each
// bound to the composed message.
type Try struct {
	Calls []Call
	// Note is what the ledger should know about the message, such as an
	// SMS's encoding and segments. Optional.
	Note string
}

// Call is one provider of a try, bound to the message.
type Call struct {
	// Provider names the provider in receipts, logs, metrics and the
	// ledger: the name the chain knows it by (a platform provider's, or a
	// tenant's account name).
	Provider string
	// Breaker keys the provider's circuit breaker: a tenant's account is
	// its own, so one tenant's dead account trips no other's. Defaults to
	// Provider.
	Breaker string
	Send    func(ctx context.Context) (provider.Receipt, error)
}

// pinned narrows a try to the providers a delivery pins, in their order: a
// request's pin and its fallback. A name the chain lacks is a permanent
// failure naming it: no retry can find it.
func (t Try) pinned(names []string) (Try, error) {
	if len(names) == 0 {
		return t, nil
	}
	pinned := Try{Note: t.Note}
	for _, name := range names {
		i := slices.IndexFunc(t.Calls, func(c Call) bool { return c.Provider == name })
		if i < 0 {
			return Try{}, provider.Permanentf("the notification pins provider %q, which is not in the tenant's chain (or the platform's, when the tenant names none)", name)
		}
		pinned.Calls = append(pinned.Calls, t.Calls[i])
	}
	return pinned, nil
}
