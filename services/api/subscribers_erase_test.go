package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/erasure"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/suppression"
)

var linkSecret = []byte(strings.Repeat("k", 32))

// erasureBundle is the API with erasure on, and the stores under it.
type erasureBundle struct {
	*bundle
	dir     *recipient.Directory
	history *history.Store
}

func setupErasure(t *testing.T) erasureBundle {
	t.Helper()
	ctx := heraldtest.Context(t)
	store, err := history.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	b := setup(t, api.Config{History: store, Erasure: erasure.Config{Secret: linkSecret, History: store}})
	dir, err := recipient.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	return erasureBundle{bundle: b, dir: dir, history: store}
}

// delivered records a notification to address as delivered, in the
// ledger and the index, as a worker and the history service do.
func (b erasureBundle) delivered(t *testing.T, address string) string {
	t.Helper()
	ctx := heraldtest.Context(t)
	l, err := ledger.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	key := notification.Key{Tenant: "acme", Subject: "PO-1", Revision: 1, Document: "purchase_order", Channel: event.ChannelEmail, Recipient: address}.String()
	e, err := l.Get(ctx, "acme", key)
	require.NoError(t, err)
	e.NotificationID, e.Channel, e.State, e.Recipient, e.Order, e.Document = notification.ID(key), "email", ledger.Delivered, address, "PO-1", "purchase_order"
	e.Record(ledger.Attempt{Time: time.Now(), Delivery: 1, Provider: "ses"})
	require.NoError(t, l.Put(ctx, &e))
	require.NoError(t, b.history.Apply(ctx, []history.Row{{Tenant: "acme", ID: e.NotificationID, Order: "PO-1", Document: "purchase_order",
		Channel: "email", Recipient: address, State: history.Delivered, Tries: 1, UpdatedAt: e.UpdatedAt, Revision: 1}}))
	return e.NotificationID
}

// DELETE /v1/subscribers/{id}?erase=true erases her and answers what it
// erased: afterwards her notification is listed, delivered, under a mask
// and not under her address, her bounced address is still suppressed but
// listed without it, and her profile is gone. Erasing again, or a
// subscriber never known, answers a receipt of nothing.
func TestEraseASubscriberThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setupErasure(t)
	ctx := heraldtest.Context(t)
	_, err := b.dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u/olga 1", Email: "olga@zarya.example", Phone: "+79161234567"})
	require.NoError(t, err)
	_, err = b.dir.PutAccount(ctx, recipient.Account{Tenant: "acme", ID: "zarya", Members: []recipient.Member{{Subscriber: "u/olga 1", Roles: []string{"sales"}}}})
	require.NoError(t, err)
	_, err = b.dir.Memberships.Put(ctx, recipient.Membership{Tenant: "acme", Topic: "warehouse-sevilla", Subscriber: "u/olga 1"})
	require.NoError(t, err)
	_, err = b.dir.SetPreferences(ctx, "acme", "u/olga 1", recipient.Choices{"alerts": {event.ChannelSMS: false}}, nil, false)
	require.NoError(t, err)
	_, _, err = b.dir.PutDevice(ctx, recipient.Device{Tenant: "acme", Subscriber: "u/olga 1", ID: "phone", Kind: recipient.DeviceAPNs, Token: deviceAPNsToken})
	require.NoError(t, err)
	id := b.delivered(t, "olga@zarya.example")
	supp, err := suppression.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	_, err = supp.Add(ctx, suppression.Entry{Tenant: "acme", Channel: event.ChannelEmail, Address: "olga@zarya.example",
		Reason: suppression.HardBounce, Detail: "550 user unknown", Source: "ses:ev-1"})
	require.NoError(t, err)
	path := "/v1/subscribers/" + url.PathEscape("u/olga 1")

	require.Equal(t, http.StatusForbidden, b.do(t, http.MethodDelete, path+"?erase=true", acmeRead, nil).status, "a read key erases nothing")
	erased := b.do(t, http.MethodDelete, path+"?erase=true", acmeSend, nil)
	require.Equal(t, http.StatusOK, erased.status, erased.body)
	var r api.ErasureReceipt
	require.NoError(t, json.Unmarshal([]byte(erased.body), &r))
	require.Equal(t, api.ErasureReceipt{Tenant: "acme", Subscriber: "u/olga 1", Profile: 1, Preferences: 1, TopicMemberships: 1, Accounts: 1,
		Devices: 1, Addresses: 2, HistoryRows: 1, LedgerEntries: 1, Suppressions: 1, Complete: true, Time: r.Time}, r)
	require.NotContains(t, erased.body, "olga@")

	_, _, err = b.dir.Subscribers.Get(ctx, recipient.SubscriberKey("acme", "u/olga 1"))
	require.ErrorIs(t, err, recipient.ErrNoSubscriber)
	n := b.do(t, http.MethodGet, "/v1/notifications/"+id, acmeRead, nil)
	require.Equal(t, http.StatusOK, n.status, n.body)
	require.Contains(t, n.body, `"state":"delivered"`)
	require.Contains(t, n.body, `"recipient":"erased:`)
	require.NotContains(t, n.body, "olga@")
	require.JSONEq(t, `[]`, jsonField(t, b.do(t, http.MethodGet, "/v1/notifications?recipient=olga@zarya.example", acmeRead, nil).body, "notifications"))
	list := b.do(t, http.MethodGet, "/v1/suppressions", acmeRead, nil)
	require.Equal(t, http.StatusOK, list.status, list.body)
	require.NotContains(t, list.body, "olga@")
	require.Contains(t, list.body, `"address_hash":"`)
	asked := b.do(t, http.MethodGet, "/v1/suppressions/"+url.PathEscape("Olga@zarya.example")+"?channel=email", acmeRead, nil)
	require.Equal(t, http.StatusOK, asked.status, "an operator asking with the address finds it: %s", asked.body)
	require.NotContains(t, asked.body, "olga@")
	require.Contains(t, asked.body, `"reason":"hard_bounce"`)
	still, err := supp.Blocks(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "")
	require.NoError(t, err, "a new notification to her address is still suppressed")
	require.Equal(t, suppression.HardBounce, still.Reason)

	again := b.do(t, http.MethodDelete, path+"?erase=true", acmeSend, nil)
	require.Equal(t, http.StatusOK, again.status, again.body)
	require.NoError(t, json.Unmarshal([]byte(again.body), &r))
	require.Equal(t, api.ErasureReceipt{Tenant: "acme", Subscriber: "u/olga 1", Complete: true, Time: r.Time}, r, "nothing left")
	unknown := b.do(t, http.MethodDelete, "/v1/subscribers/u-nobody?erase=true", acmeSend, nil)
	require.Equal(t, http.StatusOK, unknown.status, "answered as one erased before: %s", unknown.body)
	bad := b.do(t, http.MethodDelete, "/v1/subscribers/u%07olga?erase=true", acmeSend, nil)
	require.Equal(t, http.StatusUnprocessableEntity, bad.status, bad.body)
}

// Without erase=true only the profile and her push devices go (204, then
// 404): her preferences stay. Another tenant's key reaches its own tenant's
// subscriber of that id, never this one.
func TestDeleteASubscriberRemovesTheProfileOnly(t *testing.T) {
	t.Parallel()
	b := setupErasure(t)
	ctx := heraldtest.Context(t)
	_, err := b.dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u-ivan", Email: "ivan@zarya.example"})
	require.NoError(t, err)
	_, err = b.dir.SetPreferences(ctx, "acme", "u-ivan", recipient.Choices{"alerts": {event.ChannelEmail: false}}, nil, false)
	require.NoError(t, err)
	_, _, err = b.dir.PutDevice(ctx, recipient.Device{Tenant: "acme", Subscriber: "u-ivan", ID: "phone", Kind: recipient.DeviceAPNs, Token: deviceAPNsToken})
	require.NoError(t, err)

	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodDelete, "/v1/subscribers/u-ivan", globexSend, nil).status)
	other := b.do(t, http.MethodDelete, "/v1/subscribers/u-ivan?erase=true", globexSend, nil)
	require.Equal(t, http.StatusOK, other.status, other.body)
	require.Contains(t, other.body, `"profile":0`)

	deleted := b.do(t, http.MethodDelete, "/v1/subscribers/u-ivan", acmeSend, nil)
	require.Equal(t, http.StatusNoContent, deleted.status, deleted.body)
	require.Empty(t, deleted.body)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodDelete, "/v1/subscribers/u-ivan", acmeSend, nil).status)
	own, _, err := b.dir.Choices(ctx, "acme", "u-ivan")
	require.NoError(t, err)
	require.NotEmpty(t, own, "her preferences stay")
	devices, err := b.dir.Devices(ctx, "acme", "u-ivan")
	require.NoError(t, err)
	require.Empty(t, devices, "no device outlives her, to be pushed to")
	addresses, err := b.dir.Addresses(ctx, "acme", "u-ivan")
	require.NoError(t, err)
	require.Equal(t, []string{"ivan@zarya.example"}, addresses, "an erasure later still finds the address")
}

// Without the link secret to key its hashes, an erasure answers 503 and
// erases nothing.
func TestEraseNeedsTheLinkSecret(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	ctx := heraldtest.Context(t)
	dir, err := recipient.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	_, err = dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u-olga", Email: "olga@zarya.example"})
	require.NoError(t, err)
	got := b.do(t, http.MethodDelete, "/v1/subscribers/u-olga?erase=true", acmeSend, nil)
	require.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
	require.Contains(t, got.body, "link secret")
	_, _, err = dir.Subscribers.Get(ctx, recipient.SubscriberKey("acme", "u-olga"))
	require.NoError(t, err)
}
