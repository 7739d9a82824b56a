package webhook_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/webhook"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
	"github.com/heraldhq/herald/streams"
)

// untold is an endpoint a worker disabled (it answered 410 Gone) while the
// tenant's status stream could not be written: the worker could not tell
// the tenant, as if it had died right after the disabling.
type untold struct {
	nats     *heraldtest.NATS
	store    *webhooks.Store
	endpoint webhooks.Endpoint
	// worker is the channel that disabled it, still open.
	worker *webhook.Channel
}

func disableUntold(t *testing.T, announceEvery time.Duration) *untold {
	t.Helper()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	key, err := vault.ParseKey([]byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="))
	require.NoError(t, err)
	keys, err := vault.NewKeyring(key)
	require.NoError(t, err)
	u := &untold{nats: n}
	u.store, err = webhooks.Open(ctx, n.JS, keys)
	require.NoError(t, err)
	gone := newReceiver(t, status(http.StatusGone, ""))
	e, _, err := u.store.Create(ctx, "acme", webhooks.New{URL: gone.URL + "/hook?token=t0ps3cret"})
	require.NoError(t, err)

	require.NoError(t, n.JS.DeleteStream(ctx, "STATUS"))
	u.worker = u.open(t, announceEvery)
	try, err := u.worker.Prepare(ctx, notification.Delivery{ID: "ntf_gone", Tenant: "acme", Channel: event.ChannelWebhook,
		Recipient: notification.Recipient{Address: e.ID}, Payload: json.RawMessage(body)})
	require.NoError(t, err)
	_, err = try.Calls[0].Send(ctx)
	require.ErrorContains(t, err, "endpoint "+e.ID+" disabled: the endpoint answered 410 Gone")
	u.endpoint, err = u.store.Get(ctx, "acme", e.ID)
	require.NoError(t, err)
	require.Equal(t, webhooks.Disabled, u.endpoint.Status)
	return u
}

// open starts a webhook worker's channel, as delivery.Service.Start does.
func (u *untold) open(t *testing.T, announceEvery time.Duration) *webhook.Channel {
	t.Helper()
	c, err := webhook.NewChannel(webhook.ChannelConfig{Endpoints: u.store, Sender: loopbackSender(t), AnnounceEvery: announceEvery})
	require.NoError(t, err)
	require.NoError(t, c.Open(heraldtest.Context(t), u.nats.JS))
	t.Cleanup(c.Close)
	return c
}

// statusBack makes the tenants' status stream writable again.
func (u *untold) statusBack(t *testing.T) {
	t.Helper()
	s, err := streams.Find("STATUS")
	require.NoError(t, err)
	_, err = u.nats.JS.CreateStream(heraldtest.Context(t), s.Config)
	require.NoError(t, err)
}

// told are the endpoint_disabled events on acme's status stream.
func (u *untold) told(t *testing.T) []notification.EndpointDisabled {
	t.Helper()
	var out []notification.EndpointDisabled
	for _, m := range heraldtest.StreamMessages(t, u.nats.JS, "STATUS") {
		var ev notification.EndpointDisabled
		if m.Subject == notification.StatusSubject("acme") && json.Unmarshal(m.Data, &ev) == nil && ev.Type == notification.EndpointDisabledType {
			out = append(out, ev)
		}
	}
	return out
}

// done says whether the tenant was told and its record holds nothing left
// to tell: the workers' work is over, and closing them cuts nothing short.
func (u *untold) done(t *testing.T) bool {
	t.Helper()
	kv, err := u.nats.JS.KeyValue(heraldtest.Context(t), webhooks.Bucket)
	require.NoError(t, err)
	e, err := kv.Get(heraldtest.Context(t), "acme")
	require.NoError(t, err)
	var r struct {
		Unannounced []json.RawMessage `json:"unannounced"`
	}
	require.NoError(t, json.Unmarshal(e.Value(), &r))
	return len(u.told(t)) > 0 && len(r.Unannounced) == 0
}

// settled checks, once every worker is closed, that the tenant was told
// exactly once, and that nothing is left to tell.
func (u *untold) settled(t *testing.T) {
	t.Helper()
	left, err := u.store.Announce(heraldtest.Context(t), u.nats.JS, "acme")
	require.NoError(t, err)
	require.Zero(t, left, "nothing is left to tell")
	told := u.told(t)
	require.Len(t, told, 1, "told exactly once")
	require.Equal(t, notification.EndpointDisabled{Type: notification.EndpointDisabledType, Tenant: "acme", EndpointID: u.endpoint.ID,
		URL: u.endpoint.ShownURL(), Reason: "the endpoint answered 410 Gone", NotificationID: "ntf_gone", Time: u.endpoint.DisabledAt}, told[0])
}

// The worker that disabled an endpoint dies before telling its tenant: the
// workers that start next — two at once — tell it, once.
func TestADisablingAWorkerDidNotTellIsToldOnRestart(t *testing.T) {
	t.Parallel()
	u := disableUntold(t, 0)
	u.worker.Close() // it dies
	u.statusBack(t)
	restarted := []*webhook.Channel{u.open(t, 0), u.open(t, 0)}
	require.Eventually(t, func() bool { return u.done(t) }, 15*time.Second, 20*time.Millisecond)
	for _, c := range restarted {
		c.Close()
	}
	u.settled(t)
}

// The worker that disabled an endpoint lives on after its publish failed:
// it tells the tenant once the stream takes writes again.
func TestADisablingWhoseEventFailedIsToldAgain(t *testing.T) {
	t.Parallel()
	u := disableUntold(t, 50*time.Millisecond)
	u.statusBack(t)
	require.Eventually(t, func() bool { return u.done(t) }, 15*time.Second, 20*time.Millisecond)
	u.worker.Close()
	u.settled(t)
}
