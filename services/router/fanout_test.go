package router_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
)

// topic puts n subscribers with a phone on acme's topic, and switches
// sms off for the first of them.
func topic(t *testing.T, n *heraldtest.NATS, id string, count int) {
	t.Helper()
	ctx := heraldtest.Context(t)
	dir, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	for i := range count {
		sub := fmt.Sprintf("u-%03d", i)
		_, err := dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: sub, Phone: fmt.Sprintf("+3460011%04d", i)})
		require.NoError(t, err)
		_, err = dir.Memberships.Put(ctx, recipient.Membership{Tenant: "acme", Topic: id, Subscriber: sub})
		require.NoError(t, err)
	}
	_, err = dir.SetPreferences(ctx, "acme", "u-000", recipient.Choices{"alerts": {event.ChannelSMS: false}}, nil, true)
	require.NoError(t, err)
}

func stockAlert(t testing.TB, recipients ...map[string]any) []byte {
	t.Helper()
	b, err := os.ReadFile("../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["data"].(map[string]any)["recipients"] = recipients
	b, err = json.Marshal(m)
	require.NoError(t, err)
	return b
}

// A topic larger than a page is planned a page at a time on FANOUT: every
// member hears once, each page is recorded as it is planned (a member's
// preference too), and the work queue ends empty.
func TestALargeTopicFansOutAPageAtATime(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	topic(t, n, "sevilla", 8)
	start(t, n, router.Config{FanoutPage: 3, Channels: []event.Channel{event.ChannelSMS}}, nil)
	publishOn(t, n, "inventory.low_stock", stockAlert(t, map[string]any{"role": "warehouse", "topic": "sevilla"}))

	var phones []string
	require.Eventually(t, func() bool {
		phones = phones[:0]
		for _, m := range heraldtest.StreamMessages(t, n.JS, "NOTIFY") {
			d, err := notification.Decode(m.Data)
			require.NoError(t, err)
			phones = append(phones, d.Recipient.Address)
		}
		return len(phones) == 7
	}, 30*time.Second, 20*time.Millisecond, "the seven members with sms on")
	slices.Sort(phones)
	require.Equal(t, "+34600110001", phones[0], "u-000 switched sms off")
	require.Equal(t, "+34600110007", phones[6])

	var planned, skipped int
	require.Eventually(t, func() bool {
		planned, skipped = 0, 0
		for _, a := range accepted(t, n) {
			for _, n := range a.Notifications {
				if n.State == notification.Skipped {
					skipped++
				} else {
					planned++
				}
			}
		}
		return planned == 7 && skipped == 1
	}, 30*time.Second, 20*time.Millisecond, "each page recorded")
	require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, router.FanoutStream)) == 0 },
		30*time.Second, 20*time.Millisecond, "every page acknowledged")
}
