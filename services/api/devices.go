package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/services/delivery/webhook"
	"github.com/heraldhq/herald/shared/recipient"
	records "github.com/heraldhq/herald/shared/resource"
)

// Device is one of a subscriber's push devices as the API shows it: never
// its whole token or Web Push endpoint, for whoever holds either can push
// to the device.
type Device struct {
	ID   string               `json:"id" example:"olga-iphone"`
	Kind recipient.DeviceKind `json:"kind" enum:"fcm,apns,webpush"`
	// Token is the token's last 8 characters, after an ellipsis.
	Token string `json:"token,omitempty" example:"…61bb78ad" doc:"FCM and APNs: the token's last 8 characters, enough to tell two apart."`
	// Endpoint is the Web Push endpoint's origin: the push service.
	Endpoint  string    `json:"endpoint,omitempty" example:"https://updates.push.services.mozilla.com" doc:"Web Push: the endpoint's origin, the browser's push service; its path, which reaches the browser, is not shown."`
	Locale    string    `json:"locale,omitempty" example:"ru"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// DeviceBody is a device as PUT writes it.
type DeviceBody struct {
	Kind         recipient.DeviceKind           `json:"kind" enum:"fcm,apns,webpush" doc:"The push service the device is reached through."`
	Token        string                         `json:"token,omitempty" doc:"FCM: the registration token (letters, digits, _ : -, up to 4096). APNs: the device token in hex (64 to 200 digits). Not for webpush."`
	Subscription *recipient.WebPushSubscription `json:"subscription,omitempty" doc:"Web Push: the browser's PushSubscription as its toJSON() gives it — an https endpoint and keys p256dh and auth, base64url. Not for fcm or apns."`
	Locale       string                         `json:"locale,omitempty" example:"ru" doc:"A BCP 47 tag: this device's notifications are written in it, before the subscriber's locale."`
}

// deviceOf is d as the API shows it, masked.
func deviceOf(d recipient.Device) Device {
	v := Device{ID: d.ID, Kind: d.Kind, Locale: d.Locale, UpdatedAt: d.UpdatedAt}
	if d.Subscription != nil {
		v.Endpoint = d.Masked()
	} else {
		v.Token = d.Masked()
	}
	return v
}

// deviceKey names a device: its subscriber and its own id.
type deviceKey struct{ subscriber, id string }

type devicesInput struct {
	WebhookTenant
	ID string `path:"id" doc:"The subscriber's id, URL-escaped."`
}

type deviceInput struct {
	WebhookTenant
	ID       string `path:"id" doc:"The subscriber's id, URL-escaped."`
	DeviceID string `path:"device_id" doc:"The publisher's own id for the device: any printable text up to 128 bytes, URL-escaped."`
}

func (in deviceInput) key() deviceKey { return deviceKey{in.ID, in.DeviceID} }

// putDeviceInput repeats deviceInput's fields: huma reads no path
// parameter of an embedded struct's.
type putDeviceInput struct {
	WebhookTenant
	ID       string `path:"id" doc:"The subscriber's id, URL-escaped."`
	DeviceID string `path:"device_id" doc:"The publisher's own id for the device: any printable text up to 128 bytes, URL-escaped."`
	Body     DeviceBody
}

func (in putDeviceInput) key() deviceKey { return deviceKey{in.ID, in.DeviceID} }

func (in putDeviceInput) record(tenant string) recipient.Device {
	return recipient.Device{Tenant: tenant, Subscriber: in.ID, ID: in.DeviceID, Kind: in.Body.Kind, Token: in.Body.Token,
		Subscription: in.Body.Subscription, Locale: in.Body.Locale}
}

type listDevicesOutputBody struct {
	Devices []Device `json:"devices"`
}

func registerDevices(s *Service) {
	r := &resource[deviceKey, recipient.Device, recipient.Device, Device]{
		what: "subscribers", path: "/v1/subscribers", item: "/{id}/devices/{device_id}", tags: []string{"Subscribers"},
		read: ScopeRead, write: ScopeSend,
		store: func(st *stores) (resourceStore[deviceKey, recipient.Device, recipient.Device], error) {
			return devices{d: st.recipients, allowPrivate: s.cfg.AllowPrivateNetworks}, nil
		},
		view:     deviceOf,
		notFound: recipient.ErrNoDevice, invalid: records.ErrInvalid, conflict: records.ErrConflict,
		absent: func(tenant string, k deviceKey) string {
			return "tenant " + tenant + "'s subscriber " + quoted(k.subscriber) + " has no device " + quoted(k.id)
		},
		broken: "the devices could not be read or written right now",
	}
	upsertRoute[putDeviceInput](s, r, route{Operation: huma.Operation{OperationID: "put-subscriber-device", Errors: []int{http.StatusNotFound},
		Summary: "Add or replace a subscriber's push device",
		Description: fmt.Sprintf("Stores an FCM or APNs token, or a browser's Web Push subscription, under the publisher's own id "+
			"for the device. A subscriber has at most %d devices: a new one past that is refused (422). A refusal names every field "+
			"at fault; a Web Push endpoint whose host is in a private network is refused too. The answer shows the device masked, "+
			"as listings do.", recipient.MaxDevices)}})
	deleteRoute[deviceInput](s, r, route{Operation: huma.Operation{OperationID: "delete-subscriber-device",
		Summary: "Remove a subscriber's push device"}})
	o := r.operation(route{Operation: huma.Operation{OperationID: "list-subscriber-devices", Summary: "List a subscriber's push devices",
		Description: "In the order of their ids, masked: a token's last 8 characters, a Web Push endpoint's origin."}},
		http.MethodGet, r.path+"/{id}/devices", r.read, http.StatusNotFound)
	huma.Register(s.api, o, func(ctx context.Context, in *devicesInput) (*bodyOf[listDevicesOutputBody], error) {
		list, err := call(ctx, s, r, in.Tenant, deviceKey{subscriber: in.ID}, 0,
			func(ctx context.Context, st resourceStore[deviceKey, recipient.Device, recipient.Device], tenant string) ([]recipient.Device, error) {
				return st.(devices).list(ctx, tenant, in.ID)
			})
		if err != nil {
			return nil, err
		}
		out := listDevicesOutputBody{Devices: make([]Device, len(list))}
		for i, d := range list {
			out.Devices[i] = deviceOf(d)
		}
		return &bodyOf[listDevicesOutputBody]{Body: out}, nil
	})
}

// SubscriberWithDevices is a subscriber as GET shows her: with her push
// devices, masked as their listing shows them.
type SubscriberWithDevices struct {
	Subscriber
	Devices []Device `json:"devices" doc:"Her push devices in the order of their ids, masked: PUT /v1/subscribers/{id}/devices/{device_id} adds one."`
}

// registerSubscriberGet registers GET /v1/subscribers/{id}: the
// subscriber, and her devices read after her.
func registerSubscriberGet(s *Service, r *resource[string, recipient.Subscriber, recipient.Subscriber, Subscriber]) {
	o := r.operation(route{Operation: huma.Operation{OperationID: "get-subscriber", Summary: "Get a subscriber",
		Description: "With her push devices, masked."}}, http.MethodGet, r.path+r.item, r.read, http.StatusNotFound)
	huma.Register(s.api, o, func(ctx context.Context, in *subscriberInput) (*bodyOf[SubscriberWithDevices], error) {
		out, err := call(ctx, s, r, in.Tenant, in.ID, 0,
			func(ctx context.Context, st resourceStore[string, recipient.Subscriber, recipient.Subscriber], tenant string) (SubscriberWithDevices, error) {
				sub, err := st.Get(ctx, tenant, in.ID)
				if err != nil {
					return SubscriberWithDevices{}, err
				}
				list, err := st.(subscribers).d.Devices(ctx, tenant, in.ID)
				out := SubscriberWithDevices{Subscriber: subscriberOf(sub), Devices: make([]Device, len(list))}
				for i, d := range list {
					out.Devices[i] = deviceOf(d)
				}
				return out, err
			})
		if err != nil {
			return nil, err
		}
		return &bodyOf[SubscriberWithDevices]{Body: out}, nil
	})
}

// devices is the device store as the API exposes it.
type devices struct {
	d            *recipient.Directory
	allowPrivate bool
}

// List is not a route: devices are listed per subscriber (list).
func (st devices) List(context.Context, string) ([]recipient.Device, error) {
	return nil, errors.New("devices are listed per subscriber")
}

func (st devices) list(ctx context.Context, tenant, subscriber string) ([]recipient.Device, error) {
	if _, _, err := st.d.Subscribers.Get(ctx, recipient.SubscriberKey(tenant, subscriber)); err != nil {
		return nil, noSubscriber(tenant, subscriber, err)
	}
	return st.d.Devices(ctx, tenant, subscriber)
}

func (st devices) Get(ctx context.Context, tenant string, k deviceKey) (recipient.Device, error) {
	v, _, err := st.d.DeviceStore.Get(ctx, recipient.DeviceKey(tenant, k.subscriber, k.id))
	return v, err
}

func (st devices) Put(ctx context.Context, tenant string, v recipient.Device) (recipient.Device, error) {
	v, _, err := st.Upsert(ctx, tenant, v)
	return v, err
}

// Upsert checks the Web Push endpoint's addresses, then stores the device.
func (st devices) Upsert(ctx context.Context, tenant string, v recipient.Device) (recipient.Device, bool, error) {
	if err := v.Validate(); err != nil {
		return v, false, err
	}
	if v.Subscription != nil && !st.allowPrivate {
		if err := checkEndpointAddresses(ctx, v.Subscription.Endpoint); err != nil {
			return v, false, huma.Error422UnprocessableEntity("subscription.endpoint: " + err.Error())
		}
	}
	v, created, err := st.d.PutDevice(ctx, v)
	return v, created, noSubscriber(tenant, v.Subscriber, err)
}

func (st devices) Delete(ctx context.Context, tenant string, k deviceKey) error {
	return st.d.RemoveDevice(ctx, tenant, k.subscriber, k.id)
}

// noSubscriber answers ErrNoSubscriber as the subscriber routes do (404),
// and leaves every other error to the resource.
func noSubscriber(tenant, subscriber string, err error) error {
	if errors.Is(err, recipient.ErrNoSubscriber) {
		return huma.Error404NotFound("tenant " + tenant + " has no subscriber " + quoted(subscriber))
	}
	return err
}

// checkEndpointAddresses refuses an endpoint whose host is, or resolves
// to, an address a webhook may not reach (webhook.CheckAddress): the push
// channel POSTs to it, and a tenant could otherwise aim it inside the
// deployment's network. The push channel's dialer checks again when it
// connects, for a name may resolve otherwise then.
func checkEndpointAddresses(ctx context.Context, endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return errors.New("not a URL")
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		return webhook.CheckAddress(ip)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("its host %s could not be resolved", host)
	}
	for _, ip := range ips {
		if err := webhook.CheckAddress(ip); err != nil {
			return err
		}
	}
	return nil
}
