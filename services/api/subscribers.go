package api

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/recipient"
	records "github.com/heraldhq/herald/shared/resource"
)

// Subscriber is one of the tenant's people, under the publisher's own id.
type Subscriber struct {
	Tenant string `json:"tenant"`
	ID     string `json:"id" example:"u-olga" doc:"The publisher's own id for the person: any printable text up to 128 bytes."`
	SubscriberBody
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// SubscriberBody is a subscriber as PUT writes it and PATCH changes it.
type SubscriberBody struct {
	Name     string `json:"name,omitempty" example:"Olga Petrova"`
	Email    string `json:"email,omitempty" example:"olga@zarya.example" doc:"Kept lowercased, the form it is matched in."`
	Phone    string `json:"phone,omitempty" example:"+79161234567" doc:"For SMS: an E.164 number."`
	WhatsApp string `json:"whatsapp,omitempty" example:"+79161234567" doc:"For WhatsApp: an E.164 number (not taken from phone: a number is on WhatsApp when its owner says so)."`
	Locale   string `json:"locale,omitempty" example:"ru" doc:"A BCP 47 tag (ru, es-MX): the language of the person's messages and documents."`
	Timezone string `json:"timezone,omitempty" example:"Europe/Moscow" doc:"An IANA time zone."`
	// Any JSON: the store checks its size and strings, and names the field.
	Data json.RawMessage `json:"data,omitempty" doc:"The publisher's own, any JSON up to 16 KiB, for templates. No control characters in its strings."`
}

// subscriber is b as the store keeps it, for tenant, under id.
func (b SubscriberBody) subscriber(tenant, id string) recipient.Subscriber {
	data := b.Data
	if string(data) == "null" {
		data = nil
	}
	return recipient.Subscriber{Tenant: tenant, ID: id, Name: b.Name, Email: b.Email, Phone: b.Phone, WhatsApp: b.WhatsApp,
		Locale: b.Locale, Timezone: b.Timezone, Data: data, UpdatedAt: time.Now().UTC()}.Normalize()
}

func bodyOfSubscriber(s recipient.Subscriber) SubscriberBody {
	return SubscriberBody{Name: s.Name, Email: s.Email, Phone: s.Phone, WhatsApp: s.WhatsApp, Locale: s.Locale,
		Timezone: s.Timezone, Data: s.Data}
}

func subscriberOf(s recipient.Subscriber) Subscriber {
	return Subscriber{Tenant: s.Tenant, ID: s.ID, SubscriberBody: bodyOfSubscriber(s), UpdatedAt: s.UpdatedAt}
}

type subscriberInput struct {
	WebhookTenant
	ID string `path:"id" doc:"The subscriber's id. Any printable text up to 128 bytes, URL-escaped."`
}

func (in subscriberInput) key() string { return in.ID }

type putSubscriberInput struct {
	WebhookTenant
	ID   string `path:"id" doc:"The subscriber's id. Any printable text up to 128 bytes, URL-escaped."`
	Body SubscriberBody
}

func (in putSubscriberInput) key() string { return in.ID }

func (in putSubscriberInput) record(tenant string) recipient.Subscriber {
	return in.Body.subscriber(tenant, in.ID)
}

type patchSubscriberInput struct {
	WebhookTenant
	ID      string `path:"id" doc:"The subscriber's id. Any printable text up to 128 bytes, URL-escaped."`
	RawBody []byte `contentType:"application/merge-patch+json"`
}

func (in patchSubscriberInput) key() string { return in.ID }

func (in patchSubscriberInput) patch() []byte { return in.RawBody }

// subscriberResource is how subscribers are exposed; their listing and
// their removal are routes of their own (subscribers_list.go,
// subscribers_erase.go).
func subscriberResource(s *Service) *resource[string, recipient.Subscriber, recipient.Subscriber, Subscriber] {
	return &resource[string, recipient.Subscriber, recipient.Subscriber, Subscriber]{
		what: "subscribers", path: "/v1/subscribers", item: "/{id}", tags: []string{"Subscribers"},
		read: ScopeRead, write: ScopeSend,
		store: func(st *stores) (resourceStore[string, recipient.Subscriber, recipient.Subscriber], error) {
			return subscribers{st.recipients}, nil
		},
		view:     subscriberOf,
		notFound: recipient.ErrNoSubscriber, invalid: records.ErrInvalid, conflict: records.ErrConflict,
		absent: func(tenant, id string) string { return "tenant " + tenant + " has no subscriber " + quoted(id) },
		broken: "the subscribers could not be read or written right now",
	}
}

func registerSubscribers(s *Service) {
	r := subscriberResource(s)
	registerSubscriberGet(s, r)
	upsertRoute[putSubscriberInput](s, r, route{Operation: huma.Operation{OperationID: "put-subscriber",
		Summary: "Create or replace a subscriber",
		Description: "Stores the person under the publisher's own id, replacing whatever it held. Each field is checked — an unknown " +
			"time zone or locale, a malformed email or E.164 number, a control character anywhere, data over 16 KiB — and a refusal " +
			"(422) names every field at fault; nothing is written then."}})
	patchRoute[patchSubscriberInput, SubscriberBody](s, r, route{Operation: huma.Operation{OperationID: "patch-subscriber",
		Summary: "Change some of a subscriber's fields",
		Description: "A JSON merge patch (RFC 7396) on the subscriber as PUT writes it: a field present replaces, null clears, " +
			"and data is merged the same way, key by key. It is applied to the subscriber as read and written at that revision, " +
			"so two patches at once both hold. The result is checked as a PUT is."}})
	registerImport(s, r)
}

// subscribers is the subscriber store as the API exposes it.
type subscribers struct{ d *recipient.Directory }

// List is every subscriber of the tenant; the API lists them from the
// index instead (GET /v1/subscribers), a page at a time.
func (st subscribers) List(ctx context.Context, tenant string) ([]recipient.Subscriber, error) {
	return st.d.Subscribers.All(ctx, tenant)
}

func (st subscribers) Get(ctx context.Context, tenant, id string) (recipient.Subscriber, error) {
	v, _, err := st.d.Subscribers.Get(ctx, recipient.SubscriberKey(tenant, id))
	return v, err
}

func (st subscribers) Put(ctx context.Context, _ string, v recipient.Subscriber) (recipient.Subscriber, error) {
	_, err := st.d.Subscribers.Put(ctx, v)
	return v, err
}

func (st subscribers) Upsert(ctx context.Context, _ string, v recipient.Subscriber) (recipient.Subscriber, bool, error) {
	created, err := st.d.Subscribers.Upsert(ctx, v)
	return v, created, err
}

func (st subscribers) Delete(ctx context.Context, tenant, id string) error {
	return st.d.DeleteSubscriber(ctx, tenant, id)
}

func (st subscribers) Patch(ctx context.Context, tenant, id string, edit func(*SubscriberBody) error) (recipient.Subscriber, error) {
	return st.d.Subscribers.Patch(ctx, recipient.SubscriberKey(tenant, id), func(v *recipient.Subscriber, found bool) (records.Write, error) {
		if !found {
			return records.Skip, recipient.ErrNoSubscriber
		}
		b := bodyOfSubscriber(*v)
		if err := edit(&b); err != nil {
			return records.Skip, err
		}
		*v = b.subscriber(tenant, id)
		return records.Save, nil
	})
}

// quoted is an id as a problem repeats it: Go-quoted, so a control
// character in it shows as an escape, and cut at the longest an id is.
func quoted(id string) string {
	if len(id) > recipient.MaxID {
		id = id[:recipient.MaxID] + "…"
	}
	return strconv.Quote(id)
}
