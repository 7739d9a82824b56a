package push_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/apns"
	"github.com/heraldhq/herald/services/delivery/push/apns/apnstest"
	"github.com/heraldhq/herald/services/delivery/push/fcm"
	"github.com/heraldhq/herald/services/delivery/push/fcm/fcmtest"
	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/services/delivery/push/webpush/webpushtest"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/recipient"
)

// devices is an in-memory device directory: the recipient directory's
// devices store had not landed when this channel was written.
type devices struct {
	mu   sync.Mutex
	byID map[string][]recipient.Device // by tenant/subscriber
	// failRemove, when set, is every RemoveDevice's answer.
	failRemove error
}

func newDevices(list ...recipient.Device) *devices {
	d := &devices{byID: map[string][]recipient.Device{}}
	for _, dev := range list {
		k := dev.Tenant + "/" + dev.Subscriber
		d.byID[k] = append(d.byID[k], dev)
	}
	return d
}

func (d *devices) Devices(_ context.Context, tenant, subscriber string) ([]recipient.Device, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.byID[tenant+"/"+subscriber]), nil
}

func (d *devices) RemoveDevice(_ context.Context, tenant, subscriber, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failRemove != nil {
		return d.failRemove
	}
	k := tenant + "/" + subscriber
	d.byID[k] = slices.DeleteFunc(d.byID[k], func(dev recipient.Device) bool { return dev.ID == id })
	return nil
}

// ids are the subscriber's devices left.
func (d *devices) ids(subscriber string) []string {
	list, _ := d.Devices(context.Background(), "acme", subscriber)
	var out []string
	for _, dev := range list {
		out = append(out, dev.ID)
	}
	return out
}

const (
	apnsKeyID  = "ABC123DEFG"
	apnsTeamID = "DEF123GHIJ"
	apnsTopic  = "com.example.shop"
	iPadToken  = "6f1c2b0e9d8a7f6e5d4c3b2a19080706f1c2b0e9d8a7f6e5d4c3b2a190807066"
	iPadToken2 = "7f1c2b0e9d8a7f6e5d4c3b2a19080706f1c2b0e9d8a7f6e5d4c3b2a190807066"
)

type testBundle struct {
	apns      *apnstest.Server
	fcm       *fcmtest.Server
	webpush   *webpushtest.Server
	vapidKey  string
	senders   map[recipient.DeviceKind]push.NamedSender
	directory *devices
}

// setup is the three real providers, each against its wire fake.
func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{fcm: fcmtest.New(t), webpush: webpushtest.NewServer(t)}
	p8, key := apnstest.NewKey(t)
	b.apns = apnstest.NewServer(t, apnstest.Account{KeyID: apnsKeyID, TeamID: apnsTeamID, Key: &key.PublicKey, Topic: apnsTopic})
	apnsSender, err := apns.New(apns.Config{KeyID: apnsKeyID, TeamID: apnsTeamID, AuthKey: p8, Topic: apnsTopic,
		Host: b.apns.URL, Transport: b.apns.Client().Transport})
	require.NoError(t, err)
	fcmSender, err := fcm.New(context.Background(), fcm.Config{CredentialsJSON: b.fcm.ServiceAccountJSON(), Endpoint: b.fcm.Endpoint()})
	require.NoError(t, err)
	private, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	webpushSender, err := webpush.New(webpush.Config{VAPIDPublicKey: public, VAPIDPrivateKey: private,
		Subscriber: "mailto:ops@example.com", AllowPrivateNetworks: true})
	require.NoError(t, err)
	b.vapidKey = public
	b.senders = map[recipient.DeviceKind]push.NamedSender{
		recipient.DeviceAPNs:    {Name: "apns", Sender: apnsSender},
		recipient.DeviceFCM:     {Name: "fcm", Sender: fcmSender},
		recipient.DeviceWebPush: {Name: "webpush", Sender: webpushSender},
	}
	return b
}

func (b *testBundle) browser(t *testing.T, id, locale string) recipient.Device {
	t.Helper()
	sub := b.webpush.Subscribe(t, b.vapidKey)
	dev := recipient.Device{Tenant: "acme", Subscriber: "sub_1", ID: id, Kind: recipient.DeviceWebPush, Locale: locale,
		Subscription: &recipient.WebPushSubscription{Endpoint: sub.Endpoint}}
	dev.Subscription.Keys.P256dh, dev.Subscription.Keys.Auth = sub.Keys.P256dh, sub.Keys.Auth
	return dev
}

func device(id string, kind recipient.DeviceKind, token string) recipient.Device {
	return recipient.Device{Tenant: "acme", Subscriber: "sub_1", ID: id, Kind: kind, Token: token}
}

// channel is the push channel on the bundle's providers and list of
// devices.
func (b *testBundle) channel(t *testing.T, list ...recipient.Device) *push.Channel {
	t.Helper()
	b.directory = newDevices(list...)
	c, err := push.NewChannel(push.ChannelConfig{Devices: b.directory, Senders: b.senders, MaxConcurrent: 2})
	require.NoError(t, err)
	return c
}

func shipped() notification.Delivery {
	return notification.Delivery{
		ID: "ntf_1", DedupeKey: "acme:PO-2026-0042:1:delivery_note:push:sub_1", Tenant: "acme",
		Channel: event.ChannelPush, Template: "delivery_note", Locale: "en",
		Recipient: notification.Recipient{Address: "sub_1", Subscriber: "sub_1"},
		Order: &notification.OrderSummary{ID: "PO-2026-0042", Kind: event.KindPurchase, Revision: 1, Currency: "EUR",
			Buyer: "Frutas del Sur S.L.", Supplier: "Granja La Aurora S.L.", Totals: event.Totals{Gross: "183.48"}},
	}
}

// try prepares d and makes its one call, as the protocol does.
func try(t *testing.T, c *push.Channel, d notification.Delivery) (provider.Receipt, error) {
	t.Helper()
	tr, err := c.Prepare(context.Background(), d)
	require.NoError(t, err)
	require.Len(t, tr.Calls, 1, "every device in one call")
	require.Equal(t, push.CallName, tr.Calls[0].Provider)
	return tr.Calls[0].Send(context.Background())
}

func TestEveryDeviceReceivesItInItsLanguage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.channel(t, b.browser(t, "laptop", ""), device("ipad", recipient.DeviceAPNs, iPadToken),
		func() recipient.Device {
			d := device("phone-1", recipient.DeviceFCM, "fcm-token-1")
			d.Locale = "es"
			return d
		}())

	r, err := try(t, c, shipped())
	require.NoError(t, err)
	require.Equal(t, "ntf_1", r.MessageID)
	require.Equal(t, "webpush:laptop accepted; apns:ipad accepted; fcm:phone-1 accepted", r.Note)

	pushes := b.webpush.Pushes()
	require.Len(t, pushes, 1)
	var payload webpush.Payload
	require.NoError(t, json.Unmarshal(pushes[0].Plaintext, &payload), "the browser can read it")
	require.Equal(t, webpush.Payload{ID: "ntf_1", Title: "Order PO-2026-0042 shipped",
		Body: "Granja La Aurora S.L. shipped order PO-2026-0042 to Frutas del Sur S.L., total €183.48.", Tag: "PO-2026-0042"}, payload)
	apnsPushes := b.apns.Pushes()
	require.Len(t, apnsPushes, 1)
	require.Equal(t, payload.Title, apnsPushes[0].Title)
	require.Equal(t, "PO-2026-0042", apnsPushes[0].CollapseID)
	messages := b.fcm.Messages()
	require.Len(t, messages, 1)
	require.Equal(t, "Pedido PO-2026-0042 enviado", messages[0].Notification.Title, "the device's own language")
}

func TestAGoneDeviceIsRemovedAndTheOtherStillDelivers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.apns.Refuse(iPadToken, apnstest.Answer{Status: http.StatusGone, Reason: "Unregistered", Timestamp: time.Now()})
	c := b.channel(t, b.browser(t, "laptop", ""), device("ipad", recipient.DeviceAPNs, iPadToken))

	r, err := try(t, c, shipped())
	require.NoError(t, err)
	require.Equal(t, "webpush:laptop accepted; apns:ipad gone (removed)", r.Note)
	require.Equal(t, []string{"laptop"}, b.directory.ids("sub_1"))
	require.NotContains(t, r.Note, iPadToken)
}

func TestEveryDeviceGoneFailsForGoodAndRemovesThem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	laptop := b.browser(t, "laptop", "")
	b.webpush.Unsubscribe(laptop.Subscription.Endpoint)
	b.apns.Refuse(iPadToken, apnstest.Answer{Status: http.StatusGone, Reason: "Unregistered", Timestamp: time.Now()})
	b.fcm.Refuse("fcm-token-1", "UNREGISTERED", 0)
	c := b.channel(t, laptop, device("ipad", recipient.DeviceAPNs, iPadToken), device("phone-1", recipient.DeviceFCM, "fcm-token-1"))

	_, err := try(t, c, shipped())
	require.True(t, provider.IsPermanent(err), "%v", err)
	require.EqualError(t, err, "permanent: every device is gone: webpush:laptop gone (removed); apns:ipad gone (removed); fcm:phone-1 gone (removed)")
	require.Empty(t, b.directory.ids("sub_1"))
	require.NotContains(t, err.Error(), laptop.Subscription.Endpoint)
}

func TestAGoneDeviceNotRemovedSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.apns.Refuse(iPadToken, apnstest.Answer{Status: http.StatusGone, Reason: "Unregistered", Timestamp: time.Now()})
	c := b.channel(t, device("ipad", recipient.DeviceAPNs, iPadToken))
	b.directory.failRemove = errors.New("the directory is down")

	_, err := try(t, c, shipped())
	require.True(t, provider.IsPermanent(err), "%v", err)
	require.EqualError(t, err, "permanent: every device is gone: apns:ipad gone (not removed: the directory is down)")
}

func TestThrottledWithNoneAcceptedIsRetriedAfterTheLongestWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	laptop := b.browser(t, "laptop", "")
	b.webpush.Refuse(webpushtest.Answer{Status: http.StatusTooManyRequests, RetryAfter: "30", Body: "slow down"})
	b.apns.Refuse(iPadToken, apnstest.Answer{Status: http.StatusGone, Reason: "Unregistered", Timestamp: time.Now()})
	b.apns.Refuse(iPadToken2, apnstest.Answer{Status: http.StatusTooManyRequests, Reason: "TooManyRequests"})
	c := b.channel(t, laptop, device("ipad", recipient.DeviceAPNs, iPadToken), device("ipad-2", recipient.DeviceAPNs, iPadToken2))

	_, err := try(t, c, shipped())
	require.Error(t, err)
	require.False(t, provider.IsPermanent(err), "one throttled device may take it later: %v", err)
	require.False(t, provider.IsAmbiguous(err))
	require.Equal(t, 30*time.Second, provider.RetryAfter(err))
	require.ErrorContains(t, err, "webpush:laptop failed: ")
	require.ErrorContains(t, err, "apns:ipad gone (removed); apns:ipad-2 failed: ")
	require.Equal(t, []string{"laptop", "ipad-2"}, b.directory.ids("sub_1"))
}

func TestRefusedEverywhereFailsForGood(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.apns.Refuse(iPadToken, apnstest.Answer{Status: http.StatusBadRequest, Reason: "BadTopic"})
	// A kind with no provider configured is that device's outcome.
	b.senders = map[recipient.DeviceKind]push.NamedSender{recipient.DeviceAPNs: b.senders[recipient.DeviceAPNs]}
	c := b.channel(t, device("ipad", recipient.DeviceAPNs, iPadToken), device("phone-1", recipient.DeviceFCM, "fcm-token-1"))

	_, err := try(t, c, shipped())
	require.True(t, provider.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "no device took the notification: apns:ipad failed: apns: permanent: HTTP 400: BadTopic; fcm:phone-1 failed: permanent: no provider for fcm")
	require.Equal(t, []string{"ipad", "phone-1"}, b.directory.ids("sub_1"), "a refusal is not a gone device")
}

func TestNoDevicesFailsForGood(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.channel(t, device("ipad", recipient.DeviceAPNs, iPadToken))
	d := shipped()
	d.Recipient = notification.Recipient{Address: "sub_2", Subscriber: "sub_2"}
	_, err := c.Prepare(context.Background(), d)
	require.True(t, provider.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "subscriber has no push devices")
	require.Zero(t, b.apns.Requests())
}

func TestAWrittenMessageGoesAsWritten(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.channel(t, device("ipad", recipient.DeviceAPNs, iPadToken))
	d := shipped()
	d.Template, d.Order, d.Message = "", nil, &notification.Message{Subject: "Dock 4 is closed", Text: "Use dock 2 today."}
	_, err := try(t, c, d)
	require.NoError(t, err)
	pushes := b.apns.Pushes()
	require.Len(t, pushes, 1)
	require.Equal(t, []string{"Dock 4 is closed", "Use dock 2 today.", "ntf_1"}, []string{pushes[0].Title, pushes[0].Body, pushes[0].CollapseID},
		"no order: it collapses with nothing but itself")
}

func TestManyDevicesAreSentToWithinTheBound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var list []recipient.Device
	for i := range 7 {
		list = append(list, device(strings.Repeat("p", i+1), recipient.DeviceFCM, "fcm-token-"+strings.Repeat("x", i+1)))
	}
	c := b.channel(t, list...)
	r, err := try(t, c, shipped())
	require.NoError(t, err)
	require.Len(t, b.fcm.Messages(), 7)
	require.Equal(t, 7, strings.Count(r.Note, " accepted"))
}

func TestConfigNamesItsFields(t *testing.T) {
	t.Parallel()
	dir := newDevices()
	for _, tt := range []struct {
		cfg  push.ChannelConfig
		want string
	}{
		{push.ChannelConfig{Devices: dir}, "push: at least one provider (push.fcm, push.apns or push.webpush) is required"},
		{push.ChannelConfig{Devices: dir, Senders: map[recipient.DeviceKind]push.NamedSender{recipient.DeviceAPNs: {Name: "apns"}}}, "push.apns: provider is not set up"},
		{push.ChannelConfig{Devices: dir, Senders: map[recipient.DeviceKind]push.NamedSender{"hms": {Name: "hms", Sender: fakeSender{}}}}, "push.hms: not a kind of device (fcm, apns, webpush)"},
		{push.ChannelConfig{Senders: map[recipient.DeviceKind]push.NamedSender{recipient.DeviceFCM: {Name: "fcm", Sender: fakeSender{}}}}, "push: the device directory is not set up"},
		{push.ChannelConfig{Devices: dir, Senders: map[recipient.DeviceKind]push.NamedSender{recipient.DeviceFCM: {Name: "fcm", Sender: fakeSender{}}}, MaxConcurrent: -1}, "push.max_concurrent: -1 is not a number of devices"},
	} {
		_, err := push.NewChannel(tt.cfg)
		require.EqualError(t, err, tt.want)
	}
	c, err := push.NewChannel(push.ChannelConfig{Devices: dir, Senders: map[recipient.DeviceKind]push.NamedSender{recipient.DeviceFCM: {Name: "fcm", Sender: fakeSender{}}}})
	require.NoError(t, err)
	require.Equal(t, event.ChannelPush, c.Name())
	require.Equal(t, 1, c.LongestChain())
	var _ delivery.Channel = c
}

// fakeSender only fills a config: these tests never send through it.
type fakeSender struct{}

func (fakeSender) Send(context.Context, push.Message) (provider.Receipt, error) {
	return provider.Receipt{}, errors.New("not for sending")
}

func TestADeviceThatMayHaveTakenItMakesTheTryAmbiguous(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A push service that takes the request and never answers: the try's
	// deadline ends it, after the push may have been taken.
	silent := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(silent.Close)
	laptop := b.browser(t, "laptop", "")
	laptop.Subscription.Endpoint = silent.URL + "/push/sub1"
	b.apns.Refuse(iPadToken, apnstest.Answer{Status: http.StatusTooManyRequests, Reason: "TooManyRequests"})
	c := b.channel(t, laptop, device("ipad", recipient.DeviceAPNs, iPadToken))

	tr, err := c.Prepare(context.Background(), shipped())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = tr.Calls[0].Send(ctx)
	require.False(t, provider.IsPermanent(err), "%v", err)
	require.True(t, provider.IsAmbiguous(err), "the laptop may show it: %v", err)
}

// A tenant whose pushes keep failing trips its own breaker only: the
// protocol keys breakers by the call's Breaker.
func TestEachTenantHasItsOwnBreaker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tr, err := b.channel(t, b.browser(t, "laptop", "")).Prepare(context.Background(), shipped())
	require.NoError(t, err)
	require.Equal(t, "push/acme", tr.Calls[0].Breaker, "one breaker per tenant, not one for all")
}

// The notification's action URL is what each device opens when it is
// clicked; one the inbox would refuse fails it for good, unsent.
func TestAPushOpensTheActionURL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.channel(t, b.browser(t, "laptop", ""), device("ipad", recipient.DeviceAPNs, iPadToken),
		device("phone-1", recipient.DeviceFCM, "fcm-token-1"))
	d := shipped()
	d.ActionURL = "https://app.example/orders/PO-2026-0042"
	_, err := try(t, c, d)
	require.NoError(t, err)

	var payload webpush.Payload
	require.NoError(t, json.Unmarshal(b.webpush.Pushes()[0].Plaintext, &payload))
	require.Equal(t, d.ActionURL, payload.URL)
	require.Equal(t, d.ActionURL, b.apns.Pushes()[0].URL)
	require.Equal(t, d.ActionURL, b.fcm.Messages()[0].Data["url"])

	d.ActionURL = "javascript:alert(1)"
	_, err = c.Prepare(context.Background(), d)
	require.True(t, provider.IsPermanent(err), "%v", err)
	require.NotContains(t, err.Error(), d.ActionURL, "the link is not repeated")
	require.Len(t, b.webpush.Pushes(), 1, "nothing more sent")
}
