package api

import (
	"cmp"
	"context"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/suppression"
)

// Suppression is an address the tenant's notifications are not sent to.
type Suppression struct {
	Tenant      string    `json:"tenant"`
	Channel     string    `json:"channel,omitempty" enum:"email,sms,whatsapp" doc:"The channel it holds back. Absent: every channel the address is reached on."`
	Address     string    `json:"address" example:"jane@example.com" doc:"As compared: trimmed, lowercased. Empty once the subscriber it belonged to was erased (DELETE /v1/subscribers/{id}?erase=true): the address stays suppressed, and asking about it (GET /v1/suppressions/{address}, with the channel the entry is for) still finds its entry, but the entry no longer says it."`
	AddressHash string    `json:"address_hash,omitempty" doc:"For an erased subscriber's address, its keyed hash (HMAC-SHA256 under a key of the deployment's), in the address's place."`
	Reason      string    `json:"reason" enum:"hard_bounce,complaint,manual,unsubscribed"`
	Detail      string    `json:"detail,omitempty" doc:"What caused it: the provider's bounce message, an operator's note."`
	Source      string    `json:"source,omitempty" doc:"The provider event that caused it, or who added it by hand (api, cli), or the recipient's unsubscribe (unsubscribe link)."`
	Category    string    `json:"category,omitempty" doc:"Only the notifications of this category (a route's, such as alerts) are held back: the recipient unsubscribed from it. Absent: all are."`
	CreatedAt   time.Time `json:"created_at"`
}

// NewSuppression is an address to suppress.
type NewSuppression struct {
	Address string `json:"address" maxLength:"320" doc:"An email address, or a phone number in E.164 form (+34600111222), as the channel sends to."`
	// Not an enum: the store checks it, and its answer names the field.
	Channel string `json:"channel,omitempty" doc:"email, sms or whatsapp: only that channel's notifications are held back. Default: every channel the address is reached on."`
	// Not an enum: the store checks it, and its answer names the field.
	Reason string `json:"reason,omitempty" doc:"hard_bounce, complaint, manual or unsubscribed; defaults to manual."`
	Detail string `json:"detail,omitempty" maxLength:"1000"`
	// Not a pattern either, for the same reason.
	Category string `json:"category,omitempty" maxLength:"64" doc:"Only the notifications of this category (a route's); default all."`
}

type createSuppressionInput struct {
	WebhookTenant
	Body NewSuppression
}

// record is the entry to add: by hand, through the API.
func (in createSuppressionInput) record(tenant string) suppression.Entry {
	b := in.Body
	return suppression.Entry{Tenant: tenant, Channel: event.Channel(b.Channel), Address: b.Address,
		Reason: cmp.Or(b.Reason, suppression.Manual), Detail: b.Detail, Category: b.Category, Source: "api"}
}

type suppressionInput struct {
	WebhookTenant
	Address  string `path:"address"`
	Channel  string `query:"channel" maxLength:"16" doc:"The channel the suppression is limited to; default the one for every channel."`
	Category string `query:"category" maxLength:"64" doc:"The category the suppression is limited to; default the one for all notifications."`
}

// suppressionKey names one suppression: an address on a channel (or all),
// for a category (or all).
type suppressionKey struct{ channel, address, category string }

func (in suppressionInput) key() suppressionKey {
	return suppressionKey{channel: in.Channel, address: in.Address, category: in.Category}
}

// listSuppressionsOutputBody is the envelope of a list of suppressions
// (listRoute); its name is the OpenAPI document's for it.
type listSuppressionsOutputBody struct {
	Suppressions []Suppression `json:"suppressions"`
}

func registerSuppressions(s *Service) {
	r := &resource[suppressionKey, suppression.Entry, suppression.Entry, Suppression]{
		what: "suppressions", path: "/v1/suppressions", item: "/{address}", tags: []string{"Suppressions"},
		read: ScopeRead, write: ScopeSend,
		store: func(st *stores) (resourceStore[suppressionKey, suppression.Entry, suppression.Entry], error) {
			return suppressions{st.suppressions}, nil
		},
		view:     suppressionOf,
		notFound: suppression.ErrNotFound, invalid: suppression.ErrInvalid, // its message names the field
		absent: func(_ string, k suppressionKey) string { return k.address + " is not suppressed" },
		broken: "the suppressions could not be read or written right now",
	}
	listRoute(s, r, route{Operation: huma.Operation{OperationID: "list-suppressions",
		Summary: "List suppressed addresses", Description: "The tenant's addresses Herald does not send to, newest first."}},
		func(l []Suppression) listSuppressionsOutputBody { return listSuppressionsOutputBody{l} })
	createRoute[createSuppressionInput](s, r, route{Operation: huma.Operation{OperationID: "create-suppression",
		Summary:     "Suppress an address",
		Description: "Herald sends the tenant's notifications to it no more: each is recorded as suppressed, not tried. Suppressing an address again replaces its entry."}},
		suppressionOf)
	getRoute[suppressionInput](s, r, route{Operation: huma.Operation{OperationID: "get-suppression",
		Summary:     "Is an address suppressed",
		Description: "The entry that suppresses the address (on the channel, in the category, the query names), 404 when none does. An erased subscriber's address is found as any other, its entry holding a keyed hash, not the address."}})
	deleteRoute[suppressionInput](s, r, route{Operation: huma.Operation{OperationID: "delete-suppression",
		Summary: "Lift a suppression", Description: "The address is sent to again."}})
}

// suppressions is the suppression store as the API exposes it.
type suppressions struct{ *suppression.Store }

func (s suppressions) Get(ctx context.Context, tenant string, k suppressionKey) (suppression.Entry, error) {
	return s.Store.Get(ctx, tenant, event.Channel(k.channel), k.address, k.category)
}

func (s suppressions) Put(ctx context.Context, _ string, e suppression.Entry) (suppression.Entry, error) {
	return s.Add(ctx, e)
}

func (s suppressions) Delete(ctx context.Context, tenant string, k suppressionKey) error {
	return s.Remove(ctx, tenant, event.Channel(k.channel), k.address, k.category)
}

func suppressionOf(e suppression.Entry) Suppression {
	return Suppression{Tenant: e.Tenant, Channel: string(e.Channel), Address: e.Address, AddressHash: e.AddressHash, Reason: e.Reason, Detail: e.Detail, Source: e.Source,
		Category: e.Category, CreatedAt: e.CreatedAt}
}
