package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
)

// WebhookEndpoint is one of a tenant's endpoints, never its secret.
type WebhookEndpoint struct {
	ID             string    `json:"id" example:"we_3j5k7m9p2r4t6v8x1z3b5d7f9h"`
	URL            string    `json:"url" example:"https://erp.acme.example/herald"`
	Events         []string  `json:"events" example:"[\"notification.*\"]"`
	Description    string    `json:"description,omitempty"`
	Status         string    `json:"status" enum:"active,disabled"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	DisabledAt     time.Time `json:"disabled_at,omitzero" doc:"When Herald disabled it; the tenant's endpoints that want webhook.endpoint_disabled were told."`
	FailingSince   time.Time `json:"failing_since,omitzero"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// CreatedWebhookEndpoint is a new endpoint, with its signing secret: shown
// this once.
type CreatedWebhookEndpoint struct {
	WebhookEndpoint
	Secret string `json:"secret" doc:"The signing secret (whsec_…), shown this once: verify webhook-signature with it, per the Standard Webhooks spec."`
}

// NewWebhookEndpoint is an endpoint to register.
type NewWebhookEndpoint struct {
	URL         string   `json:"url" format:"uri" maxLength:"2048"`
	Events      []string `json:"events,omitempty" maxItems:"20" doc:"Event types, as patterns; defaults to [\"notification.*\", \"report.*\", \"webhook.*\", \"tenant.*\"]: notification.delivered, notification.failed, notification.suppressed, report.delivered, report.bounced, report.complained, report.opened, report.clicked, report.unsubscribed, webhook.endpoint_disabled, tenant.quota.warning, tenant.quota.exceeded."`
	Description string   `json:"description,omitempty" maxLength:"200"`
}

// WebhookTenant names whose endpoints a request manages. Exported: huma
// fills the fields of exported embedded structs only.
type WebhookTenant struct {
	Tenant string `query:"tenant" doc:"The tenant, for an admin key; a tenant's key manages its own."`
}

type createWebhookInput struct {
	WebhookTenant
	Body NewWebhookEndpoint
}

func (in createWebhookInput) record(string) webhooks.New {
	return webhooks.New{URL: in.Body.URL, Events: in.Body.Events, Description: in.Body.Description}
}

type webhookInput struct {
	WebhookTenant
	ID string `path:"id"`
}

func (in webhookInput) key() string { return in.ID }

type listWebhooksOutputBody struct {
	Endpoints []WebhookEndpoint `json:"endpoints"`
}

func registerWebhooks(s *Service) {
	r := &resource[string, webhooks.New, endpoint, WebhookEndpoint]{
		what: "endpoints", path: "/v1/webhooks/endpoints", item: "/{id}", tags: []string{"Webhooks"},
		read: ScopeRead, write: ScopeSend,
		store: func(st *stores) (resourceStore[string, webhooks.New, endpoint], error) {
			return endpoints{st.webhooks, s.cfg.Keyring}, nil
		},
		view:     func(e endpoint) WebhookEndpoint { return endpointOf(e.Endpoint) },
		notFound: webhooks.ErrNotFound, conflict: webhooks.ErrConflict,
		absent: func(_, id string) string { return "no endpoint " + id },
		broken: "the endpoint registry did not answer",
	}
	createRoute[createWebhookInput](s, r, route{Operation: huma.Operation{OperationID: "create-webhook-endpoint",
		Summary:     "Register a webhook endpoint",
		Description: "Herald POSTs the tenant's status events (and webhook-channel notifications) to it, signed per the Standard Webhooks spec with a secret generated here and shown this once. Addresses in private networks are refused when dialled.",
		Errors:      []int{http.StatusConflict}}},
		func(e endpoint) CreatedWebhookEndpoint {
			return CreatedWebhookEndpoint{WebhookEndpoint: endpointOf(e.Endpoint), Secret: e.secret}
		})
	listRoute(s, r, route{Operation: huma.Operation{OperationID: "list-webhook-endpoints",
		Summary: "List webhook endpoints", Description: "With their status; never a secret."}},
		func(l []WebhookEndpoint) listWebhooksOutputBody { return listWebhooksOutputBody{l} })
	deleteRoute[webhookInput](s, r, route{Operation: huma.Operation{OperationID: "delete-webhook-endpoint",
		Summary: "Remove a webhook endpoint", Description: "Nothing more is sent to it."}})
	actionRoute[webhookInput](s, r, route{Operation: huma.Operation{OperationID: "enable-webhook-endpoint",
		Summary:     "Enable a disabled webhook endpoint",
		Description: "Herald disables an endpoint that answers 410 Gone or keeps failing for webhooks.disable_after; once it is fixed, enable it (its failures are forgotten), then redeliver what it missed."}},
		http.MethodPost, r.item+"/enable", r.write,
		func(st resourceStore[string, webhooks.New, endpoint], ctx context.Context, tenant, id string) (endpoint, error) {
			return st.(endpoints).enable(ctx, tenant, id)
		})
	huma.Register(s.api, r.operation(route{Operation: huma.Operation{OperationID: "redeliver-webhooks",
		Summary: "Send an endpoint's webhooks again",
		Description: "One webhook (message), or every one whose outcome was told between since and until (read from the ledger's writes: " +
			fmt.Sprintf("a range spans at most %d hours and %d of the tenant's ledger writes), ", int(webhooks.MaxRange.Hours()), webhooks.MaxLedgerReads) +
			fmt.Sprintf("at most %d at a time, optionally", webhooks.MaxRedeliveries) +
			" only those that failed. Each is sent again as it was: the same webhook-id and body, " +
			"signed with the endpoint's current secrets, as a new notification naming the original (redelivery_of). " +
			"The same id never sends a webhook twice. A tenant key's redelivery costs one request of its plan's rate per webhook sent " +
			"(at least one), and counts against the tenant's redeliveries an hour (api.redeliveries_per_hour): past either, it is " +
			"refused whole with 429, saying how many remain and when.",
		DefaultStatus: http.StatusAccepted, MaxBodyBytes: s.bodyLimit(),
		Errors: []int{http.StatusNotFound, http.StatusTooManyRequests}}}, http.MethodPost, r.path+r.item+"/redeliver", r.write),
		s.redeliverWebhooks)
}

// endpoint is a webhook endpoint, with its signing secret when it was
// just created.
type endpoint struct {
	webhooks.Endpoint
	secret string
}

// endpoints is the endpoint registry as the API exposes it.
type endpoints struct {
	st   *webhooks.Store
	keys *vault.Keyring
}

func (e endpoints) List(ctx context.Context, tenant string) ([]endpoint, error) {
	list, err := e.st.List(ctx, tenant)
	out := make([]endpoint, len(list))
	for i, ep := range list {
		out[i] = endpoint{Endpoint: ep}
	}
	return out, err
}

func (e endpoints) Get(ctx context.Context, tenant, id string) (endpoint, error) {
	ep, err := e.st.Get(ctx, tenant, id)
	return endpoint{Endpoint: ep}, err
}

// Put registers a new endpoint. What the registry refuses before it runs
// out of time is the caller's to fix, in the registry's words.
func (e endpoints) Put(ctx context.Context, tenant string, n webhooks.New) (endpoint, error) {
	if e.keys == nil {
		return endpoint{}, huma.Error503ServiceUnavailable("no master key configured (vault.master_key_env or vault.master_key_file): signing secrets cannot be stored")
	}
	ep, secret, err := e.st.Create(ctx, tenant, n)
	if err != nil && !errors.Is(err, webhooks.ErrConflict) && ctx.Err() == nil {
		return endpoint{}, huma.Error422UnprocessableEntity(err.Error())
	}
	return endpoint{Endpoint: ep, secret: secret}, err
}

func (e endpoints) Delete(ctx context.Context, tenant, id string) error {
	return e.st.Delete(ctx, tenant, id)
}

// enable sends to a disabled endpoint again, and answers it as it then is.
func (e endpoints) enable(ctx context.Context, tenant, id string) (endpoint, error) {
	if err := e.st.Enable(ctx, tenant, id); err != nil {
		return endpoint{}, err
	}
	return e.Get(ctx, tenant, id)
}

// RedeliveryRequest selects the webhooks to send again.
type RedeliveryRequest struct {
	ID         string    `json:"id,omitempty" pattern:"^rd_[A-Za-z0-9_-]{1,64}$" doc:"Names this redelivery: asked again under the same id, it sends nothing twice. Generated when absent."`
	Message    string    `json:"message,omitempty" doc:"One webhook's notification id (ntf_…). Or since:"`
	Since      time.Time `json:"since,omitzero" doc:"The range's start: when the webhooks' outcomes were told."`
	Until      time.Time `json:"until,omitzero" doc:"The range's end; defaults to now."`
	FailedOnly bool      `json:"failed_only,omitempty" doc:"Only the range's webhooks that failed."`
	DryRun     bool      `json:"dry_run,omitempty" doc:"List what would be sent; send nothing."`
}

type redeliverInput struct {
	WebhookTenant
	ID   string `path:"id"`
	Body RedeliveryRequest
}

type redeliverOutput struct {
	RateLimit string `header:"RateLimit" doc:"Where the tenant stands after the webhooks' share of its rate, per the IETF RateLimit fields."`
	Body      webhooks.Redelivered
}

// redeliverTimeout bounds a redelivery: reading up to MaxLedgerReads of a
// tenant's ledger writes, then a thousand ledger entries.
const redeliverTimeout = time.Minute

func (s *Service) redeliverWebhooks(ctx context.Context, in *redeliverInput) (*redeliverOutput, error) {
	st, tenant, err := s.managed(ctx, in.Tenant, "endpoints")
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, redeliverTimeout)
	defer cancel()
	b, rate := in.Body, ""
	out, err := st.webhooks.Redeliver(cctx, s.js, st.ledger, webhooks.Redelivery{Tenant: tenant, ID: b.ID, Message: b.Message,
		Since: b.Since, Until: b.Until, Endpoint: in.ID, FailedOnly: b.FailedOnly, DryRun: b.DryRun,
		Admit: s.admitRedelivery(principal(ctx).Tenant, &rate)}, nil)
	var (
		bad     webhooks.BadRedelivery
		refused huma.StatusError
	)
	switch {
	case errors.Is(err, webhooks.ErrNotFound):
		return nil, huma.Error404NotFound("no endpoint " + in.ID)
	case errors.As(err, &bad):
		return nil, huma.Error422UnprocessableEntity(bad.Reason)
	case errors.As(err, &refused):
		return nil, err
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "webhooks not redelivered", "tenant", tenant, "error", err)
		return nil, unavailable("the webhooks could not be redelivered right now")
	}
	return &redeliverOutput{RateLimit: rate, Body: out}, nil
}

func endpointOf(e webhooks.Endpoint) WebhookEndpoint {
	return WebhookEndpoint{ID: e.ID, URL: e.URL, Events: e.Events, Description: e.Description, Status: string(e.Status),
		DisabledReason: e.DisabledReason, DisabledAt: e.DisabledAt, FailingSince: e.FailingSince, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}
