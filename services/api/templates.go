package api

import (
	"context"
	"errors"
	"net/http"
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

// templateKey names one of a tenant's templates.
type templateKey struct{ name, locale string }

func (in templateInput) key() templateKey { return templateKey{name: in.Name, locale: in.Locale} }

type putTemplateInput struct {
	WebhookTenant
	Name   string `path:"name"`
	Locale string `path:"locale"`
	Body   TemplateBody
}

func (in putTemplateInput) record(tenant string) templates.Template {
	return templates.Template{Tenant: tenant, Name: in.Name, Locale: templates.NormalizeLocale(in.Locale),
		Subject: in.Body.Subject, Text: in.Body.Text, HTML: in.Body.HTML}
}

type listTemplatesOutputBody struct {
	Templates []Template `json:"templates"`
}

type previewInput struct {
	WebhookTenant
	Body PreviewRequest
}

type previewOutput struct{ Body Preview }

func registerTemplates(s *Service) {
	r := &resource[templateKey, templates.Template, templates.Template, Template]{
		what: "templates", path: "/v1/templates", item: "/{name}/{locale}", tags: []string{"Templates"},
		read: ScopeRead, write: ScopeSend,
		store: func(st *stores) (resourceStore[templateKey, templates.Template, templates.Template], error) {
			if s.cfg.Templates == nil {
				return nil, huma.Error503ServiceUnavailable("templates cannot be rendered by this process (no email channel configured)")
			}
			return tenantTemplates{st.templates, s.cfg.Templates}, nil
		},
		view:     templateOf,
		notFound: templates.ErrNotFound, invalid: templates.ErrInvalid,
		absent: func(tenant string, k templateKey) string {
			return "tenant " + tenant + " has no template " + k.name + " in " + k.locale + ": Herald's own is used"
		},
		broken: "the templates cannot be read right now",
	}
	listRoute(s, r, route{Operation: huma.Operation{OperationID: "list-templates", Summary: "List the tenant's own email templates"}},
		func(l []Template) listTemplatesOutputBody { return listTemplatesOutputBody{l} })
	getRoute[templateInput](s, r, route{Operation: huma.Operation{OperationID: "get-template", Summary: "Get one of the tenant's own email templates"}})
	// Rendering a template counts against the tenant's rate (ratelimit.go).
	putRoute[putTemplateInput](s, r, route{Operation: huma.Operation{OperationID: "put-template",
		Summary: "Set the tenant's own email template",
		Description: "Replaces Herald's template name for the tenant's recipients of locale (and its regions). " +
			"It is rendered for a sample delivery first: one that does not parse or run, or runs past a bound on rendering " +
			"(its work, its output, how deep it nests or calls templates), is refused (422), naming the part and the bound.",
		Errors: []int{http.StatusTooManyRequests}}})
	deleteRoute[templateInput](s, r, route{Operation: huma.Operation{OperationID: "delete-template", Summary: "Go back to Herald's template"}})
	huma.Register(s.api, r.operation(route{Operation: huma.Operation{OperationID: "preview-template", Summary: "Preview an email template",
		Description: "Renders, for a sample delivery, the parts given — or the tenant's own template, or Herald's — without storing anything. " +
			"A render that runs past a bound (its work, its output, how deep it nests or calls templates) is refused (422), naming the bound.",
		MaxBodyBytes: s.bodyLimit(), Errors: []int{http.StatusTooManyRequests}}}, http.MethodPost, r.path+"/preview", r.read),
		func(ctx context.Context, in *previewInput) (*previewOutput, error) {
			return s.previewTemplate(ctx, r, in)
		})
}

// tenantTemplates is the template store as the API exposes it: a template
// is stored only once it renders for a sample delivery.
type tenantTemplates struct {
	*templates.Store
	renderer TemplateRenderer
}

func (t tenantTemplates) Get(ctx context.Context, tenant string, k templateKey) (templates.Template, error) {
	return t.Store.Get(ctx, tenant, k.name, k.locale)
}

func (t tenantTemplates) Put(ctx context.Context, _ string, tmpl templates.Template) (templates.Template, error) {
	if _, err := rendered(t.renderer, tmpl); err != nil {
		return templates.Template{}, err
	}
	return t.Store.Put(ctx, tmpl)
}

func (t tenantTemplates) Delete(ctx context.Context, tenant string, k templateKey) error {
	return t.Store.Delete(ctx, tenant, k.name, k.locale)
}

// rendered is tmpl rendered for a sample delivery, or a 422 that names
// the part and why it is not valid or does not render.
func rendered(renderer TemplateRenderer, tmpl templates.Template) (templates.Rendered, error) {
	if err := tmpl.Check(); err != nil {
		return templates.Rendered{}, huma.Error422UnprocessableEntity(err.Error())
	}
	r, err := renderer.Check(tmpl)
	if err != nil {
		return templates.Rendered{}, huma.Error422UnprocessableEntity("the template does not render: " + err.Error())
	}
	return r, nil
}

// previewTemplate renders the parts the request gives, or else the
// tenant's own template, or else Herald's.
func (s *Service) previewTemplate(ctx context.Context, r *resource[templateKey, templates.Template, templates.Template, Template],
	in *previewInput) (*previewOutput, error) {
	b := in.Body
	p, err := call(ctx, s, r, in.Tenant, templateKey{name: b.Name, locale: b.Locale}, 0,
		func(ctx context.Context, st resourceStore[templateKey, templates.Template, templates.Template], tenant string) (Preview, error) {
			t := templates.Template{Tenant: tenant, Name: b.Name, Locale: templates.NormalizeLocale(b.Locale),
				Subject: b.Subject, Text: b.Text, HTML: b.HTML}
			source := "request"
			if b.Subject == "" && b.Text == "" && b.HTML == "" {
				stored, err := st.Get(ctx, tenant, templateKey{name: b.Name, locale: t.Locale})
				if errors.Is(err, templates.ErrNotFound) {
					out, err := s.cfg.Templates.Shipped(tenant, b.Name, t.Locale)
					if err != nil {
						return Preview{}, huma.Error422UnprocessableEntity(err.Error())
					}
					return previewOf(out, "herald"), nil
				}
				if err != nil {
					return Preview{}, err
				}
				t, source = stored, "tenant"
			}
			out, err := rendered(s.cfg.Templates, t)
			return previewOf(out, source), err
		})
	if err != nil {
		return nil, err
	}
	return &previewOutput{Body: p}, nil
}

func previewOf(r templates.Rendered, source string) Preview {
	return Preview{Subject: r.Subject, Text: r.Text, HTML: r.HTML, Source: source}
}

func templateOf(t templates.Template) Template {
	return Template{Tenant: t.Tenant, Name: t.Name, Locale: t.Locale, Subject: t.Subject, Text: t.Text, HTML: t.HTML, UpdatedAt: t.UpdatedAt}
}
