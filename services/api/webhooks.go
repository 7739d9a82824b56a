package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

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
	Events      []string `json:"events,omitempty" maxItems:"20" doc:"Event types, as patterns; defaults to [\"notification.*\", \"webhook.*\"]: notification.delivered, notification.failed, webhook.endpoint_disabled."`
	Description string   `json:"description,omitempty" maxLength:"200"`
}

type webhookTenant struct {
	Tenant string `query:"tenant" doc:"The tenant, for an admin key; a tenant's key manages its own."`
}

type createWebhookInput struct {
	webhookTenant
	Body NewWebhookEndpoint
}

type webhookInput struct {
	webhookTenant
	ID string `path:"id"`
}

type createWebhookOutput struct{ Body CreatedWebhookEndpoint }

type listWebhooksOutput struct {
	Body struct {
		Endpoints []WebhookEndpoint `json:"endpoints"`
	}
}

func registerWebhooks(s *Service) {
	errs := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}
	huma.Register(s.api, huma.Operation{
		OperationID: "create-webhook-endpoint", Method: http.MethodPost, Path: "/v1/webhooks/endpoints",
		Summary:     "Register a webhook endpoint",
		Description: "Herald POSTs the tenant's status events (and webhook-channel notifications) to it, signed per the Standard Webhooks spec with a secret generated here and shown this once. Addresses in private networks are refused when dialled.",
		Tags:        []string{"Webhooks"}, DefaultStatus: http.StatusCreated, Security: needs(ScopeSend), MaxBodyBytes: s.bodyLimit(),
		Errors: append(errs, http.StatusConflict),
	}, s.createWebhook)
	huma.Register(s.api, huma.Operation{
		OperationID: "list-webhook-endpoints", Method: http.MethodGet, Path: "/v1/webhooks/endpoints",
		Summary: "List webhook endpoints", Description: "With their status; never a secret.",
		Tags: []string{"Webhooks"}, Security: needs(ScopeRead), Errors: errs,
	}, s.listWebhooks)
	huma.Register(s.api, huma.Operation{
		OperationID: "delete-webhook-endpoint", Method: http.MethodDelete, Path: "/v1/webhooks/endpoints/{id}",
		Summary: "Remove a webhook endpoint", Description: "Nothing more is sent to it.",
		Tags: []string{"Webhooks"}, DefaultStatus: http.StatusNoContent, Security: needs(ScopeSend),
		Errors: append(errs, http.StatusNotFound),
	}, s.deleteWebhook)
}

// webhookStore is the registry and whose endpoints the request manages.
func (s *Service) webhookStore(ctx context.Context, named string) (*webhooks.Store, string, error) {
	st, err := s.ready()
	if err != nil {
		return nil, "", err
	}
	tenant, err := s.tenantOf(ctx, named)
	if err != nil {
		return nil, "", err
	}
	if !principal(ctx).Reaches(tenant) {
		return nil, "", huma.Error403Forbidden("this key manages tenant " + principal(ctx).Tenant + "'s endpoints only")
	}
	return st.webhooks, tenant, nil
}

func (s *Service) createWebhook(ctx context.Context, in *createWebhookInput) (*createWebhookOutput, error) {
	if s.cfg.Keyring == nil {
		return nil, huma.Error503ServiceUnavailable("no master key configured (vault.master_key_env or vault.master_key_file): signing secrets cannot be stored")
	}
	store, tenant, err := s.webhookStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	e, secret, err := store.Create(cctx, tenant, webhooks.New{URL: in.Body.URL, Events: in.Body.Events, Description: in.Body.Description})
	switch {
	case errors.Is(err, webhooks.ErrConflict):
		return nil, huma.Error409Conflict(err.Error())
	case err != nil && cctx.Err() == nil:
		return nil, huma.Error422UnprocessableEntity(err.Error())
	case err != nil:
		return nil, huma.Error503ServiceUnavailable("the endpoint registry did not answer")
	}
	return &createWebhookOutput{Body: CreatedWebhookEndpoint{WebhookEndpoint: endpointOf(e), Secret: secret}}, nil
}

func (s *Service) listWebhooks(ctx context.Context, in *webhookTenant) (*listWebhooksOutput, error) {
	store, tenant, err := s.webhookStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	list, err := store.List(cctx, tenant)
	if err != nil {
		return nil, huma.Error503ServiceUnavailable("the endpoint registry did not answer")
	}
	out := &listWebhooksOutput{}
	out.Body.Endpoints = make([]WebhookEndpoint, len(list))
	for i, e := range list {
		out.Body.Endpoints[i] = endpointOf(e)
	}
	return out, nil
}

func (s *Service) deleteWebhook(ctx context.Context, in *webhookInput) (*struct{}, error) {
	store, tenant, err := s.webhookStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	switch err := store.Delete(cctx, tenant, in.ID); {
	case errors.Is(err, webhooks.ErrNotFound):
		return nil, huma.Error404NotFound("no endpoint " + in.ID)
	case err != nil:
		return nil, huma.Error503ServiceUnavailable("the endpoint registry did not answer")
	}
	return nil, nil
}

func endpointOf(e webhooks.Endpoint) WebhookEndpoint {
	return WebhookEndpoint{ID: e.ID, URL: e.URL, Events: e.Events, Description: e.Description, Status: string(e.Status),
		DisabledReason: e.DisabledReason, DisabledAt: e.DisabledAt, FailingSince: e.FailingSince, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}
