package recipient_test

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/resource"
)

const apnsHex = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"

// browser is a Web Push subscription as a browser's toJSON() gives it,
// with a fresh P-256 key.
func browser(t *testing.T) *recipient.WebPushSubscription {
	t.Helper()
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	require.NoError(t, err)
	s := &recipient.WebPushSubscription{Endpoint: "https://updates.push.services.mozilla.com/wpush/v2/gAAAAABl"}
	s.Keys.P256dh = base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes())
	s.Keys.Auth = base64.RawURLEncoding.EncodeToString(make([]byte, 16))
	return s
}

// Each kind of device is checked for what its push service takes, and a
// refusal names each field at fault as the API names it.
func TestADeviceIsCheckedForItsKind(t *testing.T) {
	t.Parallel()
	base := recipient.Device{Tenant: "acme", Subscriber: "u-olga", ID: "phone"}
	with := func(edit func(*recipient.Device)) recipient.Device {
		d := base
		edit(&d)
		return d
	}
	web := func(edit func(*recipient.WebPushSubscription)) recipient.Device {
		s := browser(t)
		edit(s)
		return recipient.Device{Tenant: "acme", Subscriber: "u-olga", ID: "firefox", Kind: recipient.DeviceWebPush, Subscription: s}
	}
	offCurve := base64.RawURLEncoding.EncodeToString(append([]byte{4}, make([]byte, 64)...))
	for _, good := range []recipient.Device{
		with(func(d *recipient.Device) {
			d.Kind, d.Token = recipient.DeviceFCM, "cXyZ_1-2:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"
		}),
		with(func(d *recipient.Device) { d.Kind, d.Token, d.Locale = recipient.DeviceAPNs, apnsHex, "es-MX" }),
		with(func(d *recipient.Device) { d.Kind, d.Token = recipient.DeviceAPNs, strings.ToUpper(apnsHex)+apnsHex }),
		web(func(*recipient.WebPushSubscription) {}),
		web(func(s *recipient.WebPushSubscription) { s.Keys.Auth += "==" }),
		// A push service on this machine, as herald dev's push sink.
		web(func(s *recipient.WebPushSubscription) { s.Endpoint = "http://127.0.0.1:8082/push/0123" }),
		web(func(s *recipient.WebPushSubscription) { s.Endpoint = "http://[::1]:8082/push/0123" }),
		web(func(s *recipient.WebPushSubscription) { s.Endpoint = "http://localhost:8082/push/0123" }),
	} {
		require.NoError(t, good.Validate(), "%+v", good)
	}
	for says, bad := range map[string]recipient.Device{
		"id: ":                       with(func(d *recipient.Device) { d.Kind, d.Token, d.ID = recipient.DeviceAPNs, apnsHex, "" }),
		"kind: \"gcm\" is not one":   with(func(d *recipient.Device) { d.Kind, d.Token = "gcm", apnsHex }),
		"token: required for a fcm":  with(func(d *recipient.Device) { d.Kind = recipient.DeviceFCM }),
		"token: an FCM registration": with(func(d *recipient.Device) { d.Kind, d.Token = recipient.DeviceFCM, "abc def" }),
		"token: 4097 characters":     with(func(d *recipient.Device) { d.Kind, d.Token = recipient.DeviceFCM, strings.Repeat("a", 4097) }),
		"token: an APNs device token is hex": with(func(d *recipient.Device) {
			d.Kind, d.Token = recipient.DeviceAPNs, strings.Replace(apnsHex, "7", "g", 1)
		}),
		"token: 62 hex digits":                       with(func(d *recipient.Device) { d.Kind, d.Token = recipient.DeviceAPNs, apnsHex[:62] }),
		"token: 202 hex digits":                      with(func(d *recipient.Device) { d.Kind, d.Token = recipient.DeviceAPNs, strings.Repeat("ab", 101) }),
		"subscription: only a":                       with(func(d *recipient.Device) { d.Kind, d.Token, d.Subscription = recipient.DeviceAPNs, apnsHex, browser(t) }),
		"subscription: required":                     with(func(d *recipient.Device) { d.Kind = recipient.DeviceWebPush }),
		"token: a webpush device has a subscription": web(func(*recipient.WebPushSubscription) {}),
		"subscription.endpoint: an https URL":        web(func(s *recipient.WebPushSubscription) { s.Endpoint = "http://push.example/x" }),
		"gives (http on loopback only)":              web(func(s *recipient.WebPushSubscription) { s.Endpoint = "http://localhost.push.example/x" }),
		"subscription.endpoint: an https URL with a": web(func(s *recipient.WebPushSubscription) { s.Endpoint = "https:///x" }),
		"subscription.endpoint: required":            web(func(s *recipient.WebPushSubscription) { s.Endpoint = "" }),
		"subscription.endpoint: 2049 bytes": web(func(s *recipient.WebPushSubscription) {
			s.Endpoint = "https://push.example/" + strings.Repeat("a", 2049-len("https://push.example/"))
		}),
		"subscription.keys.p256dh: 33 bytes": web(func(s *recipient.WebPushSubscription) {
			s.Keys.P256dh = base64.RawURLEncoding.EncodeToString(append([]byte{2}, make([]byte, 32)...))
		}),
		"subscription.keys.p256dh: not an uncompressed point": web(func(s *recipient.WebPushSubscription) { s.Keys.P256dh = offCurve }),
		"subscription.keys.p256dh: not an uncompressed point on": web(func(s *recipient.WebPushSubscription) {
			s.Keys.P256dh = "A" + s.Keys.P256dh[1:] // 0x00…: not the uncompressed form's 0x04
		}),
		"subscription.keys.p256dh: not base64":    web(func(s *recipient.WebPushSubscription) { s.Keys.P256dh = "a+b/" }),
		"subscription.keys.auth: 15 bytes":        web(func(s *recipient.WebPushSubscription) { s.Keys.Auth = "AAAAAAAAAAAAAAAAAAAA" }),
		"subscription.keys.auth: required":        web(func(s *recipient.WebPushSubscription) { s.Keys.Auth = "" }),
		"locale: \"xx-QQQQQQQQQ\" is not a known": with(func(d *recipient.Device) { d.Kind, d.Token, d.Locale = recipient.DeviceAPNs, apnsHex, "xx-QQQQQQQQQ" }),
	} {
		if strings.HasPrefix(says, "token: a webpush") {
			bad.Token = apnsHex
		}
		err := bad.Validate()
		require.ErrorIs(t, err, recipient.ErrInvalid, says)
		require.ErrorIs(t, err, resource.ErrInvalid, says)
		require.Contains(t, err.Error(), says)
		require.NotContains(t, err.Error(), apnsHex[8:], "a refusal does not repeat the token")
	}
}

// A subscriber's devices are stored under her, listed in id order,
// replaced by id, capped at MaxDevices, and removed; a device of nobody
// is refused.
func TestASubscribersDevices(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	dir, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	_, err = dir.Subscribers.Put(ctx, olga().Normalize())
	require.NoError(t, err)
	apns := func(id string) recipient.Device {
		return recipient.Device{Tenant: "acme", Subscriber: "u-olga", ID: id, Kind: recipient.DeviceAPNs, Token: apnsHex}
	}

	_, _, err = dir.PutDevice(ctx, recipient.Device{Tenant: "acme", Subscriber: "u-ghost", ID: "p", Kind: recipient.DeviceAPNs, Token: apnsHex})
	require.ErrorIs(t, err, recipient.ErrNoSubscriber)
	_, _, err = dir.PutDevice(ctx, recipient.Device{Tenant: "globex", Subscriber: "u-olga", ID: "p", Kind: recipient.DeviceAPNs, Token: apnsHex})
	require.ErrorIs(t, err, recipient.ErrNoSubscriber, "acme's subscriber, not globex's")

	for i := range recipient.MaxDevices {
		_, created, err := dir.PutDevice(ctx, apns(fmt.Sprintf("d%02d", recipient.MaxDevices-1-i)))
		require.NoError(t, err)
		require.True(t, created)
	}
	_, _, err = dir.PutDevice(ctx, apns("one-more"))
	require.ErrorIs(t, err, recipient.ErrInvalid)
	require.Contains(t, err.Error(), "id: the subscriber has 20 devices, the most one may have (20)")
	replaced := apns("d07")
	replaced.Token = strings.Repeat("0", 64)
	got, created, err := dir.PutDevice(ctx, replaced)
	require.NoError(t, err, "replacing one at the cap is no new device")
	require.False(t, created)
	require.False(t, got.UpdatedAt.IsZero())

	list, err := dir.Devices(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Len(t, list, recipient.MaxDevices)
	ids := make([]string, len(list))
	for i, d := range list {
		ids[i] = d.ID
	}
	require.IsIncreasing(t, ids, "in id order")
	require.Equal(t, strings.Repeat("0", 64), list[7].Token)

	require.NoError(t, dir.RemoveDevice(ctx, "acme", "u-olga", "d07"))
	require.ErrorIs(t, dir.RemoveDevice(ctx, "acme", "u-olga", "d07"), recipient.ErrNoDevice, "gone already: the caller can tell")
	list, err = dir.Devices(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Len(t, list, recipient.MaxDevices-1)
	none, err := dir.Devices(ctx, "acme", "u-ghost")
	require.NoError(t, err)
	require.Empty(t, none)
}

// Erasing a subscriber purges her devices, every kept revision of them
// (a token she replaced too), and leaves another's.
func TestEraseRemovesTheSubscribersDevices(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	dir, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	for _, s := range []recipient.Subscriber{olga(), {Tenant: "acme", ID: "u-ivan", Email: "ivan@zarya.example"}} {
		_, err = dir.Subscribers.Put(ctx, s.Normalize())
		require.NoError(t, err)
	}
	oldToken := strings.Repeat("1", 64)
	for _, d := range []recipient.Device{
		{Tenant: "acme", Subscriber: "u-olga", ID: "phone", Kind: recipient.DeviceAPNs, Token: oldToken},
		{Tenant: "acme", Subscriber: "u-olga", ID: "phone", Kind: recipient.DeviceAPNs, Token: apnsHex},
		{Tenant: "acme", Subscriber: "u-olga", ID: "firefox", Kind: recipient.DeviceWebPush, Subscription: browser(t)},
		{Tenant: "acme", Subscriber: "u-ivan", ID: "phone", Kind: recipient.DeviceFCM, Token: "ivan-token"},
	} {
		_, _, err = dir.PutDevice(ctx, d)
		require.NoError(t, err)
	}

	erased, err := dir.Erase(ctx, "acme", "u-olga", false)
	require.NoError(t, err)
	require.Equal(t, 2, erased.Devices)
	for _, m := range heraldtest.StreamMessages(t, n.JS, "KV_devices") {
		for _, trace := range []string{"u-olga", oldToken, apnsHex, "mozilla"} {
			require.NotContains(t, string(m.Data), trace, "revision %d (%s)", m.Sequence, m.Subject)
		}
	}
	mine, err := dir.Devices(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Empty(t, mine)
	ivans, err := dir.Devices(ctx, "acme", "u-ivan")
	require.NoError(t, err)
	require.Len(t, ivans, 1, "another's device stands")
}

// Deleting a subscriber without erasing her deletes her devices, which
// would otherwise still be pushed to, and leaves another's; one she does
// not have is ErrNoSubscriber.
func TestDeletingASubscriberDeletesHerDevices(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	dir, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	for _, s := range []recipient.Subscriber{olga(), {Tenant: "acme", ID: "u-ivan", Email: "ivan@zarya.example"}} {
		_, err = dir.Subscribers.Put(ctx, s.Normalize())
		require.NoError(t, err)
	}
	for _, d := range []recipient.Device{
		{Tenant: "acme", Subscriber: "u-olga", ID: "phone", Kind: recipient.DeviceAPNs, Token: apnsHex},
		{Tenant: "acme", Subscriber: "u-olga", ID: "firefox", Kind: recipient.DeviceWebPush, Subscription: browser(t)},
		{Tenant: "acme", Subscriber: "u-ivan", ID: "phone", Kind: recipient.DeviceFCM, Token: "ivan-token"},
	} {
		_, _, err = dir.PutDevice(ctx, d)
		require.NoError(t, err)
	}

	require.NoError(t, dir.DeleteSubscriber(ctx, "acme", "u-olga"))
	_, _, err = dir.Subscribers.Get(ctx, recipient.SubscriberKey("acme", "u-olga"))
	require.ErrorIs(t, err, recipient.ErrNoSubscriber)
	left, err := dir.Devices(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Empty(t, left, "no device outlives her")
	ivans, err := dir.Devices(ctx, "acme", "u-ivan")
	require.NoError(t, err)
	require.Len(t, ivans, 1)
	require.ErrorIs(t, dir.DeleteSubscriber(ctx, "acme", "u-olga"), recipient.ErrNoSubscriber)
}
