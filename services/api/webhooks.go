package api

import (
	"context"
	"errors"
	"fmt"
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

type webhookInput struct {
	WebhookTenant
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
	huma.Register(s.api, huma.Operation{
		OperationID: "enable-webhook-endpoint", Method: http.MethodPost, Path: "/v1/webhooks/endpoints/{id}/enable",
		Summary:     "Enable a disabled webhook endpoint",
		Description: "Herald disables an endpoint that answers 410 Gone or keeps failing for webhooks.disable_after; once it is fixed, enable it (its failures are forgotten), then redeliver what it missed.",
		Tags:        []string{"Webhooks"}, Security: needs(ScopeSend), Errors: append(errs, http.StatusNotFound),
	}, s.enableWebhook)
	huma.Register(s.api, huma.Operation{
		OperationID: "redeliver-webhooks", Method: http.MethodPost, Path: "/v1/webhooks/endpoints/{id}/redeliver",
		Summary: "Send an endpoint's webhooks again",
		Description: "One webhook (message), or every one whose outcome was told between since and until (read from the ledger's writes: " +
			fmt.Sprintf("a range spans at most %d hours and %d of the tenant's ledger writes), ", int(webhooks.MaxRange.Hours()), webhooks.MaxLedgerReads) +
			fmt.Sprintf("at most %d at a time, optionally", webhooks.MaxRedeliveries) +
			" only those that failed. Each is sent again as it was: the same webhook-id and body, " +
			"signed with the endpoint's current secrets, as a new notification naming the original (redelivery_of). " +
			"The same id never sends a webhook twice. A tenant key's redelivery costs one request of its plan's rate per webhook sent " +
			"(at least one), and counts against the tenant's redeliveries an hour (api.redeliveries_per_hour): past either, it is " +
			"refused whole with 429, saying how many remain and when.",
		Tags: []string{"Webhooks"}, DefaultStatus: http.StatusAccepted, Security: needs(ScopeSend), MaxBodyBytes: s.bodyLimit(),
		Errors: append(errs, http.StatusNotFound, http.StatusTooManyRequests),
	}, s.redeliverWebhooks)
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
	st, tenant, err := s.webhookStore(ctx, in.Tenant)
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

type webhookOutput struct{ Body WebhookEndpoint }

func (s *Service) enableWebhook(ctx context.Context, in *webhookInput) (*webhookOutput, error) {
	st, tenant, err := s.webhookStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	err = st.webhooks.Enable(cctx, tenant, in.ID)
	var e webhooks.Endpoint
	if err == nil {
		e, err = st.webhooks.Get(cctx, tenant, in.ID)
	}
	switch {
	case errors.Is(err, webhooks.ErrNotFound):
		return nil, huma.Error404NotFound("no endpoint " + in.ID)
	case err != nil:
		return nil, huma.Error503ServiceUnavailable("the endpoint registry did not answer")
	}
	return &webhookOutput{Body: endpointOf(e)}, nil
}

// webhookStore is the stores and whose endpoints the request manages.
func (s *Service) webhookStore(ctx context.Context, named string) (*stores, string, error) {
	return s.managed(ctx, named, "endpoints")
}

// managed is the stores and the tenant whose things (what) the request
// manages: a tenant key's own, or the one an admin key names.
func (s *Service) managed(ctx context.Context, named, what string) (*stores, string, error) {
	st, err := s.ready()
	if err != nil {
		return nil, "", err
	}
	tenant, err := s.tenantOf(ctx, named)
	if err != nil {
		return nil, "", err
	}
	if !principal(ctx).Reaches(tenant) {
		return nil, "", huma.Error403Forbidden("this key manages tenant " + principal(ctx).Tenant + "'s " + what + " only")
	}
	return st, tenant, nil
}

func (s *Service) createWebhook(ctx context.Context, in *createWebhookInput) (*createWebhookOutput, error) {
	if s.cfg.Keyring == nil {
		return nil, huma.Error503ServiceUnavailable("no master key configured (vault.master_key_env or vault.master_key_file): signing secrets cannot be stored")
	}
	st, tenant, err := s.webhookStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	e, secret, err := st.webhooks.Create(cctx, tenant, webhooks.New{URL: in.Body.URL, Events: in.Body.Events, Description: in.Body.Description})
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

func (s *Service) listWebhooks(ctx context.Context, in *WebhookTenant) (*listWebhooksOutput, error) {
	st, tenant, err := s.webhookStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	list, err := st.webhooks.List(cctx, tenant)
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
	st, tenant, err := s.webhookStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	switch err := st.webhooks.Delete(cctx, tenant, in.ID); {
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
