package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// named is a channel adapter that only has a name.
type named event.Channel

func (n named) Name() event.Channel                           { return event.Channel(n) }
func (named) Open(context.Context, jetstream.JetStream) error { return nil }
func (named) LongestChain() int                               { return 1 }
func (named) Prepare(context.Context, notification.Delivery) (delivery.Try, error) {
	return delivery.Try{}, nil
}

// Validate names fields as the configuration file spells them: the webhook
// channel is set under webhooks:, not webhook:.
func TestValidateNamesTheSectionOfTheFile(t *testing.T) {
	t.Parallel()
	bad := delivery.Config{Concurrency: -1, ProviderTimeout: time.Millisecond}
	for _, tt := range []struct {
		channel, section, want string
	}{
		{"email", "", "email"},
		{"sms", "", "sms"},
		{"webhook", "webhooks", "webhooks"},
	} {
		c := bad
		c.Channel, c.Section = named(tt.channel), tt.section
		err := c.Validate()
		require.EqualError(t, err, "redis.url: required by "+tt.channel+" delivery, which never sends without its lock (REDIS_URL)\n"+
			tt.want+".concurrency: must be 1 or more (got -1)\n"+
			tt.want+".timeout: 1ms is too short (at least 100ms)")
	}
}
