package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/suppression"
)

// Suppression is an address the tenant's notifications are not sent to.
type Suppression struct {
	Tenant    string    `json:"tenant"`
	Channel   string    `json:"channel,omitempty" enum:"email,sms,whatsapp" doc:"The channel it holds back. Absent: every channel the address is reached on."`
	Address   string    `json:"address" example:"jane@example.com" doc:"As compared: trimmed, lowercased."`
	Reason    string    `json:"reason" enum:"hard_bounce,complaint,manual,unsubscribed"`
	Detail    string    `json:"detail,omitempty" doc:"What caused it: the provider's bounce message, an operator's note."`
	Source    string    `json:"source,omitempty" doc:"The provider event that caused it, or who added it by hand (api, cli), or the recipient's unsubscribe (unsubscribe link)."`
	Category  string    `json:"category,omitempty" doc:"Only the notifications of this category (a route's, such as alerts) are held back: the recipient unsubscribed from it. Absent: all are."`
	CreatedAt time.Time `json:"created_at"`
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

type suppressionInput struct {
	WebhookTenant
	Address  string `path:"address"`
	Channel  string `query:"channel" maxLength:"16" doc:"The channel the suppression is limited to; default the one for every channel."`
	Category string `query:"category" maxLength:"64" doc:"The category the suppression is limited to; default the one for all notifications."`
}

type suppressionOutput struct{ Body Suppression }

// listSuppressionsOutput is enveloped as every list the API answers: a
// member named for what it lists.
type listSuppressionsOutput struct {
	Body struct {
		Suppressions []Suppression `json:"suppressions"`
	}
}

func registerSuppressions(s *Service) {
	errs := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}
	huma.Register(s.api, huma.Operation{
		OperationID: "list-suppressions", Method: http.MethodGet, Path: "/v1/suppressions",
		Summary: "List suppressed addresses", Description: "The tenant's addresses Herald does not send to, newest first.",
		Tags: []string{"Suppressions"}, Security: needs(ScopeRead), Errors: errs,
	}, s.listSuppressions)
	huma.Register(s.api, huma.Operation{
		OperationID: "create-suppression", Method: http.MethodPost, Path: "/v1/suppressions",
		Summary:     "Suppress an address",
		Description: "Herald sends the tenant's notifications to it no more: each is recorded as suppressed, not tried. Suppressing an address again replaces its entry.",
		Tags:        []string{"Suppressions"}, DefaultStatus: http.StatusCreated, Security: needs(ScopeSend), MaxBodyBytes: s.bodyLimit(),
		Errors: errs,
	}, s.createSuppression)
	huma.Register(s.api, huma.Operation{
		OperationID: "delete-suppression", Method: http.MethodDelete, Path: "/v1/suppressions/{address}",
		Summary: "Lift a suppression", Description: "The address is sent to again.",
		Tags: []string{"Suppressions"}, DefaultStatus: http.StatusNoContent, Security: needs(ScopeSend),
		Errors: append(errs, http.StatusNotFound),
	}, s.deleteSuppression)
}

// suppressionStore is the store and whose addresses the request manages,
// scoped as the webhook endpoints are.
func (s *Service) suppressionStore(ctx context.Context, named string) (*suppression.Store, string, error) {
	st, tenant, err := s.managed(ctx, named, "suppressions")
	if err != nil {
		return nil, "", err
	}
	return st.suppressions, tenant, nil
}

func (s *Service) listSuppressions(ctx context.Context, in *WebhookTenant) (*listSuppressionsOutput, error) {
	st, tenant, err := s.suppressionStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	list, err := st.List(cctx, tenant)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "suppressions not listed", "tenant", tenant, "error", err)
		return nil, unavailable("the suppressions could not be read right now")
	}
	out := &listSuppressionsOutput{}
	out.Body.Suppressions = make([]Suppression, len(list))
	for i, e := range list {
		out.Body.Suppressions[i] = suppressionOf(e)
	}
	return out, nil
}

func (s *Service) createSuppression(ctx context.Context, in *createSuppressionInput) (*suppressionOutput, error) {
	st, tenant, err := s.suppressionStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	reason := in.Body.Reason
	if reason == "" {
		reason = suppression.Manual
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	e, err := st.Add(cctx, suppression.Entry{Tenant: tenant, Channel: event.Channel(in.Body.Channel), Address: in.Body.Address,
		Reason: reason, Detail: in.Body.Detail, Category: in.Body.Category, Source: "api"})
	switch {
	case errors.Is(err, suppression.ErrInvalid): // its message names the field
		return nil, huma.Error422UnprocessableEntity(err.Error())
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "suppression not added", "tenant", tenant, "error", err)
		return nil, unavailable("the suppression could not be stored right now")
	}
	return &suppressionOutput{Body: suppressionOf(e)}, nil
}

func (s *Service) deleteSuppression(ctx context.Context, in *suppressionInput) (*struct{}, error) {
	st, tenant, err := s.suppressionStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	switch err := st.Remove(cctx, tenant, event.Channel(in.Channel), in.Address, in.Category); {
	case errors.Is(err, suppression.ErrNotFound):
		return nil, huma.Error404NotFound(in.Address + " is not suppressed")
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "suppression not lifted", "tenant", tenant, "error", err)
		return nil, unavailable("the suppression could not be lifted right now")
	}
	return nil, nil
}

func suppressionOf(e suppression.Entry) Suppression {
	return Suppression{Tenant: e.Tenant, Channel: string(e.Channel), Address: e.Address, Reason: e.Reason, Detail: e.Detail, Source: e.Source,
		Category: e.Category, CreatedAt: e.CreatedAt}
}
