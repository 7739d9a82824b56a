package router

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/recipient"
)

// A subscriber and an account stored a moment before the event, which the
// watches have not delivered yet, are read from their buckets — here the
// watched copy follows another server, so it never delivers them — and
// the event reaches them. A name the buckets lack too names nobody.
func TestARecordTheWatchHasNotDeliveredIsRead(t *testing.T) {
	t.Parallel()
	ctx := heraldtest.Context(t)
	elsewhere, n := heraldtest.StartNATSWithStreams(t), heraldtest.StartNATSWithStreams(t)
	d, err := watchDirectory(ctx, elsewhere.JS)
	require.NoError(t, err)
	t.Cleanup(d.Stop)
	d.stores, err = recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	_, err = d.stores.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u-new", Email: "new@zarya.example"})
	require.NoError(t, err)
	_, err = d.stores.Accounts.Put(ctx, recipient.Account{Tenant: "acme", ID: "zarya", Members: []recipient.Member{
		{Subscriber: "u-new", Roles: []string{"sales"}}}})
	require.NoError(t, err)

	s := &Service{cfg: Config{Recipients: d}.WithDefaults(), dir: d}
	got, invalid, err := s.decide(ctx, nil, sampleEvent(t, func(m map[string]any) {
		withRecipients(map[string]any{"role": "supplier", "subscriber": "u-ghost"})(m)
		order(m)["buyer"].(map[string]any)["account"] = "zarya"
	}))
	require.NoError(t, err)
	require.NoError(t, invalid)
	require.Equal(t, []string{"acme:PO-2026-0042:1:purchase_order:email:new@zarya.example"}, keys(got),
		"the account, then its member, read from their buckets")
	require.Equal(t, []string{`subscriber "u-ghost" → skipped: no recipient: subscriber "u-ghost"`}, unplanned(t, got))
}

// The members of a topic are followed as they join and leave.
func TestTheDirectoryFollowsATopicsMembers(t *testing.T) {
	t.Parallel()
	ctx := heraldtest.Context(t)
	n := heraldtest.StartNATSWithStreams(t)
	stores, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	for _, id := range []string{"u-b", "u-a"} {
		_, err = stores.Memberships.Put(ctx, recipient.Membership{Tenant: "acme", Topic: "sevilla.*", Subscriber: id})
		require.NoError(t, err)
	}
	d, err := watchDirectory(ctx, n.JS)
	require.NoError(t, err)
	t.Cleanup(d.Stop)
	require.Equal(t, []string{"u-a", "u-b"}, d.Members("acme", "sevilla.*"), "loaded before it answers, sorted")
	require.Empty(t, d.Members("other", "sevilla.*"))

	require.NoError(t, stores.Memberships.Delete(ctx, recipient.MembershipKey("acme", "sevilla.*", "u-a")))
	_, err = stores.Memberships.Put(ctx, recipient.Membership{Tenant: "acme", Topic: "sevilla.*", Subscriber: "u-c"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return slices.Equal(d.Members("acme", "sevilla.*"), []string{"u-b", "u-c"})
	}, 10*time.Second, 10*time.Millisecond)
}

// Whether a subscriber has a push device is followed from the devices
// bucket as she registers and removes them, and the router pushes to her
// only while she has one: without, her fallback reaches her phone.
func TestTheDirectoryFollowsASubscribersDevices(t *testing.T) {
	t.Parallel()
	ctx := heraldtest.Context(t)
	n := heraldtest.StartNATSWithStreams(t)
	stores, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	for _, id := range []string{"u-olga", "u-pepe"} {
		_, err = stores.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: id, Phone: "+34600111333"})
		require.NoError(t, err)
	}
	phone := func(subscriber, id string) recipient.Device {
		return recipient.Device{Tenant: "acme", Subscriber: subscriber, ID: id, Kind: recipient.DeviceAPNs,
			Token: "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"}
	}
	for _, id := range []string{"phone", "tablet"} {
		_, _, err = stores.PutDevice(ctx, phone("u-olga", id))
		require.NoError(t, err)
	}
	d, err := watchDirectory(ctx, n.JS)
	require.NoError(t, err)
	t.Cleanup(d.Stop)
	require.True(t, d.HasDevices("acme", "u-olga"), "loaded before it answers")
	require.False(t, d.HasDevices("acme", "u-pepe"))
	require.False(t, d.HasDevices("other", "u-olga"), "another tenant's subscriber of that id")

	cfg := pushing(nil, []event.Channel{event.ChannelPush, event.ChannelSMS})
	cfg.Recipients = d
	s := &Service{cfg: cfg.WithDefaults(), dir: d}
	alert := stockEvent(t, withRecipients(map[string]any{"role": "warehouse", "subscriber": "u-olga"}))
	got, _, err := s.decide(ctx, nil, alert)
	require.NoError(t, err)
	require.Equal(t, []string{"acme:evt-2026-11-30-0100:0:low_stock:push:u-olga"}, keys(got))

	// One device removed, she still has the other: a device of Pepe's,
	// written after the removal, shows the removal was applied.
	require.NoError(t, stores.RemoveDevice(ctx, "acme", "u-olga", "phone"))
	_, _, err = stores.PutDevice(ctx, phone("u-pepe", "phone"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return d.HasDevices("acme", "u-pepe") }, 10*time.Second, 10*time.Millisecond)
	require.True(t, d.HasDevices("acme", "u-olga"), "her tablet is left")

	require.NoError(t, stores.RemoveDevice(ctx, "acme", "u-olga", "tablet"))
	require.Eventually(t, func() bool { return !d.HasDevices("acme", "u-olga") }, 10*time.Second, 10*time.Millisecond)
	got, _, err = s.decide(ctx, nil, alert)
	require.NoError(t, err)
	require.Equal(t, []string{"acme:evt-2026-11-30-0100:0:low_stock:sms:+34600111333"}, keys(got), "her fallback's next channel")
}
