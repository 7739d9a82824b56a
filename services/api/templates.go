package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/templates"
)

// TemplateRenderer renders email templates for a sample delivery
// (email.Composer).
type TemplateRenderer interface {
	// Check renders a tenant's template, or says why it cannot — naming
	// the part: subject, text or html.
	Check(t templates.Template) (templates.Rendered, error)
	// Shipped renders Herald's own template name for locale.
	Shipped(tenant, name, locale string) (templates.Rendered, error)
}

// Template is a tenant's own version of one email template in one locale.
type Template struct {
	Tenant    string    `json:"tenant"`
	Name      string    `json:"name" example:"purchase_order"`
	Locale    string    `json:"locale" example:"es"`
	Subject   string    `json:"subject" example:"Pedido {{.Order.ID}} de {{.Order.Buyer}}"`
	Text      string    `json:"text"`
	HTML      string    `json:"html,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// TemplateBody is a template's parts, as Go templates over what Herald's
// own see (.Recipient, .Order, .Stock, .DocumentName, .Sender, .Attached,
// .Link, .Unsubscribe…), which may use their parts: {{template "summary" .}},
// {{template "footer" .}}, and in HTML {{template "top" .}} and
// {{template "bottom" .}}.
type TemplateBody struct {
	Subject string `json:"subject" maxLength:"1024"`
	Text    string `json:"text" maxLength:"65536"`
	HTML    string `json:"html,omitempty" maxLength:"65536" doc:"Optional: without it, these emails are text only."`
}

// Preview is a template rendered for a sample delivery.
type Preview struct {
	Subject string `json:"subject"`
	Text    string `json:"text"`
	HTML    string `json:"html,omitempty"`
	// Source says whose template it is: the tenant's own, the one in the
	// request, or Herald's.
	Source string `json:"source" enum:"tenant,request,herald"`
}

// PreviewRequest names the template to preview, and optionally the parts
// to try instead of the stored ones.
type PreviewRequest struct {
	Name    string `json:"name" example:"purchase_order"`
	Locale  string `json:"locale" example:"es"`
	Subject string `json:"subject,omitempty" maxLength:"1024" doc:"With text (and html): try these parts; without any part: the tenant's template, or Herald's."`
	Text    string `json:"text,omitempty" maxLength:"65536"`
	HTML    string `json:"html,omitempty" maxLength:"65536"`
}

type templateInput struct {
	WebhookTenant
	Name   string `path:"name"`
	Locale string `path:"locale"`
}

type putTemplateInput struct {
	WebhookTenant
	Name   string `path:"name"`
	Locale string `path:"locale"`
	Body   TemplateBody
}

type templateOutput struct{ Body Template }

type listTemplatesOutput struct {
	Body struct {
		Templates []Template `json:"templates"`
	}
}

type previewInput struct {
	WebhookTenant
	Body PreviewRequest
}

type previewOutput struct{ Body Preview }

func registerTemplates(s *Service) {
	errs := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}
	// Rendering a template counts against the tenant's rate (ratelimit.go).
	rendering := append(slices.Clone(errs), http.StatusTooManyRequests)
	huma.Register(s.api, huma.Operation{
		OperationID: "list-templates", Method: http.MethodGet, Path: "/v1/templates",
		Summary: "List the tenant's own email templates", Tags: []string{"Templates"}, Security: needs(ScopeRead), Errors: errs,
	}, s.listTemplates)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-template", Method: http.MethodGet, Path: "/v1/templates/{name}/{locale}",
		Summary: "Get one of the tenant's own email templates", Tags: []string{"Templates"}, Security: needs(ScopeRead),
		Errors: append(errs, http.StatusNotFound),
	}, s.getTemplate)
	huma.Register(s.api, huma.Operation{
		OperationID: "put-template", Method: http.MethodPut, Path: "/v1/templates/{name}/{locale}",
		Summary: "Set the tenant's own email template",
		Description: "Replaces Herald's template name for the tenant's recipients of locale (and its regions). " +
			"It is rendered for a sample delivery first: one that does not parse or run, or runs past a bound on rendering " +
			"(its work, its output, how deep it nests or calls templates), is refused (422), naming the part and the bound.",
		Tags: []string{"Templates"}, Security: needs(ScopeSend), MaxBodyBytes: s.bodyLimit(), Errors: rendering,
	}, s.putTemplate)
	huma.Register(s.api, huma.Operation{
		OperationID: "delete-template", Method: http.MethodDelete, Path: "/v1/templates/{name}/{locale}",
		Summary: "Go back to Herald's template", Tags: []string{"Templates"}, DefaultStatus: http.StatusNoContent,
		Security: needs(ScopeSend), Errors: append(errs, http.StatusNotFound),
	}, s.deleteTemplate)
	huma.Register(s.api, huma.Operation{
		OperationID: "preview-template", Method: http.MethodPost, Path: "/v1/templates/preview",
		Summary: "Preview an email template",
		Description: "Renders, for a sample delivery, the parts given — or the tenant's own template, or Herald's — without storing anything. " +
			"A render that runs past a bound (its work, its output, how deep it nests or calls templates) is refused (422), naming the bound.",
		Tags: []string{"Templates"}, Security: needs(ScopeRead), MaxBodyBytes: s.bodyLimit(), Errors: rendering,
	}, s.previewTemplate)
}

// templateStore is the store and whose templates the request manages.
func (s *Service) templateStore(ctx context.Context, named string) (*templates.Store, string, error) {
	if s.cfg.Templates == nil {
		return nil, "", huma.Error503ServiceUnavailable("templates cannot be rendered by this process (no email channel configured)")
	}
	st, tenant, err := s.managed(ctx, named, "templates")
	if err != nil {
		return nil, "", err
	}
	return st.templates, tenant, nil
}

func (s *Service) listTemplates(ctx context.Context, in *WebhookTenant) (*listTemplatesOutput, error) {
	st, tenant, err := s.templateStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	list, err := st.List(cctx, tenant)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "templates not listed", "tenant", tenant, "error", err)
		return nil, unavailable("the templates cannot be read right now")
	}
	out := &listTemplatesOutput{}
	out.Body.Templates = make([]Template, len(list))
	for i, t := range list {
		out.Body.Templates[i] = templateOf(t)
	}
	return out, nil
}

func (s *Service) getTemplate(ctx context.Context, in *templateInput) (*templateOutput, error) {
	st, tenant, err := s.templateStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	t, err := st.Get(cctx, tenant, in.Name, in.Locale)
	if err != nil {
		return nil, s.templateError(ctx, tenant, in.Name, in.Locale, err)
	}
	return &templateOutput{Body: templateOf(t)}, nil
}

func (s *Service) putTemplate(ctx context.Context, in *putTemplateInput) (*templateOutput, error) {
	st, tenant, err := s.templateStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	t := templates.Template{Tenant: tenant, Name: in.Name, Locale: templates.NormalizeLocale(in.Locale),
		Subject: in.Body.Subject, Text: in.Body.Text, HTML: in.Body.HTML}
	if err := t.Check(); err != nil {
		return nil, huma.Error422UnprocessableEntity(err.Error())
	}
	if _, err := s.cfg.Templates.Check(t); err != nil {
		return nil, huma.Error422UnprocessableEntity("the template does not render: " + err.Error())
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	t, err = st.Put(cctx, t)
	if err != nil {
		return nil, s.templateError(ctx, tenant, in.Name, in.Locale, err)
	}
	return &templateOutput{Body: templateOf(t)}, nil
}

func (s *Service) deleteTemplate(ctx context.Context, in *templateInput) (*struct{}, error) {
	st, tenant, err := s.templateStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	if err := st.Delete(cctx, tenant, in.Name, in.Locale); err != nil {
		return nil, s.templateError(ctx, tenant, in.Name, in.Locale, err)
	}
	return nil, nil
}

func (s *Service) previewTemplate(ctx context.Context, in *previewInput) (*previewOutput, error) {
	st, tenant, err := s.templateStore(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	b := in.Body
	t := templates.Template{Tenant: tenant, Name: b.Name, Locale: templates.NormalizeLocale(b.Locale),
		Subject: b.Subject, Text: b.Text, HTML: b.HTML}
	source := "request"
	if b.Subject == "" && b.Text == "" && b.HTML == "" {
		cctx, cancel := context.WithTimeout(ctx, natsTimeout)
		defer cancel()
		stored, err := st.Get(cctx, tenant, b.Name, t.Locale)
		switch {
		case errors.Is(err, templates.ErrNotFound):
			r, err := s.cfg.Templates.Shipped(tenant, b.Name, t.Locale)
			if err != nil {
				return nil, huma.Error422UnprocessableEntity(err.Error())
			}
			return &previewOutput{Body: Preview{Subject: r.Subject, Text: r.Text, HTML: r.HTML, Source: "herald"}}, nil
		case err != nil:
			return nil, s.templateError(ctx, tenant, b.Name, b.Locale, err)
		}
		t, source = stored, "tenant"
	}
	if err := t.Check(); err != nil {
		return nil, huma.Error422UnprocessableEntity(err.Error())
	}
	r, err := s.cfg.Templates.Check(t)
	if err != nil {
		return nil, huma.Error422UnprocessableEntity("the template does not render: " + err.Error())
	}
	return &previewOutput{Body: Preview{Subject: r.Subject, Text: r.Text, HTML: r.HTML, Source: source}}, nil
}

// templateError answers a store error: the caller's mistake says so, the
// store's own trouble is a 503.
func (s *Service) templateError(ctx context.Context, tenant, name, locale string, err error) error {
	switch {
	case errors.Is(err, templates.ErrNotFound):
		return huma.Error404NotFound("tenant " + tenant + " has no template " + name + " in " + locale + ": Herald's own is used")
	case errors.Is(err, templates.ErrInvalid):
		return huma.Error422UnprocessableEntity(err.Error())
	}
	s.cfg.Logger.WarnContext(ctx, "templates unavailable", "tenant", tenant, "error", err)
	return unavailable("the templates cannot be read right now")
}

func templateOf(t templates.Template) Template {
	return Template{Tenant: t.Tenant, Name: t.Name, Locale: t.Locale, Subject: t.Subject, Text: t.Text, HTML: t.HTML, UpdatedAt: t.UpdatedAt}
}
