package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/tenant"
)

// Tenant is one customer of Herald, as the registry keeps it.
type Tenant struct {
	ID        string   `json:"id" example:"acme"`
	Name      string   `json:"name,omitempty" example:"Acme Corp"`
	Plan      string   `json:"plan" example:"startup"`
	Status    string   `json:"status" enum:"active,suspended" doc:"suspended: its events and notifications are dead-lettered with the reason."`
	From      string   `json:"from,omitempty" example:"Acme <orders@acme.example>" doc:"Default sending identity; empty: the platform's."`
	Providers []string `json:"providers,omitempty" doc:"The email provider chain, tried in this order; empty: the platform's."`

	SMSProviders      []string `json:"sms_providers,omitempty" doc:"The SMS provider chain; empty: the platform's."`
	WhatsAppProviders []string `json:"whatsapp_providers,omitempty" doc:"The WhatsApp provider chain; empty: the platform's."`

	LogoURL string `json:"logo_url,omitempty" doc:"Its logo (https), on the header bar of its emails' HTML part."`
	Colour  string `json:"colour,omitempty" example:"#1f4e79" doc:"The header bar's colour, #rgb or #rrggbb."`

	Retention *TenantRetention `json:"retention,omitempty" doc:"How long its history, payloads and inbox items are kept; left out: the platform's."`

	InboxOrigins []string `json:"inbox_origins,omitempty" doc:"Web origins (https://app.acme.example; http only for localhost) whose pages may call the inbox routes with a subscriber token; at most 20. Empty: none."`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// NewTenant is a tenant to register.
type NewTenant struct {
	ID        string   `json:"id" pattern:"^[A-Za-z0-9_-]{1,64}$" doc:"The tenant token of subjects, keys and metrics. It never changes."`
	Name      string   `json:"name,omitempty"`
	Plan      string   `json:"plan" doc:"One of the configured plans (built in: free, indie, startup, enterprise)."`
	Status    string   `json:"status,omitempty" enum:"active,suspended" doc:"Defaults to active."`
	From      string   `json:"from,omitempty"`
	Providers []string `json:"providers,omitempty"`

	SMSProviders      []string `json:"sms_providers,omitempty"`
	WhatsAppProviders []string `json:"whatsapp_providers,omitempty"`

	LogoURL string `json:"logo_url,omitempty"`
	Colour  string `json:"colour,omitempty"`

	Retention TenantRetention `json:"retention,omitzero"`

	InboxOrigins []string `json:"inbox_origins,omitempty" maxItems:"20" doc:"Web origins (https://app.acme.example; http only for localhost) whose pages may call the inbox routes with a subscriber token; at most 20. Empty: none."`
}

// TenantRetention is how long Herald keeps a tenant's data, each period a
// day (1d) to 3650d; one left out or empty is the platform's.
type TenantRetention struct {
	History  string `json:"history,omitempty" example:"90d" maxLength:"32" doc:"How long a notification stays listed after its last change (at most what the ledger keeps). Empty: the platform's ledger.retention."`
	Payloads string `json:"payloads,omitempty" example:"30d" maxLength:"32" doc:"How long a rendered document is kept after it was stored, unless a notification carrying it may still be sent. Empty: the platform's documents.retention."`
	Inbox    string `json:"inbox,omitempty" example:"30d" maxLength:"32" doc:"How long an item stays in a subscriber's in-app feed after it was written. Empty: the platform's inbox.retention."`
}

// TenantRetentionChanges are the retention periods to change; one left
// out stays, one given empty goes back to the platform's.
type TenantRetentionChanges struct {
	History  *string `json:"history,omitempty" example:"90d" maxLength:"32"`
	Payloads *string `json:"payloads,omitempty" example:"30d" maxLength:"32"`
	Inbox    *string `json:"inbox,omitempty" example:"30d" maxLength:"32"`
}

// TenantChanges are the fields of a tenant to change; those left out stay.
// An empty from or chain goes back to the platform's.
type TenantChanges struct {
	Name      *string   `json:"name,omitempty"`
	Plan      *string   `json:"plan,omitempty"`
	Status    *string   `json:"status,omitempty" enum:"active,suspended"`
	From      *string   `json:"from,omitempty"`
	Providers *[]string `json:"providers,omitempty"`

	SMSProviders      *[]string `json:"sms_providers,omitempty"`
	WhatsAppProviders *[]string `json:"whatsapp_providers,omitempty"`

	LogoURL *string `json:"logo_url,omitempty"`
	Colour  *string `json:"colour,omitempty"`

	Retention *TenantRetentionChanges `json:"retention,omitempty" doc:"The periods to change, as herald tenants set --retention does."`

	InboxOrigins *[]string `json:"inbox_origins,omitempty" maxItems:"20" doc:"The inbox's web origins, replacing the list; empty: none."`
}

// Tenants is every tenant, by id.
type Tenants struct {
	Tenants []Tenant `json:"tenants"`
}

type tenantInput struct {
	ID string `path:"id" doc:"The tenant id."`
}

type tenantOutput struct{ Body Tenant }

type createTenantInput struct{ Body NewTenant }

type createTenantOutput struct {
	Status int
	Body   Tenant
}

type patchTenantInput struct {
	ID   string `path:"id"`
	Body TenantChanges
}

type tenantsOutput struct{ Body Tenants }

func registerTenants(s *Service) {
	errs := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable}
	huma.Register(s.api, huma.Operation{
		OperationID: "list-tenants", Method: http.MethodGet, Path: "/v1/tenants",
		Summary: "List tenants", Tags: []string{"Tenants"}, Security: needs(ScopeAdmin), Errors: errs,
	}, s.listTenants)
	huma.Register(s.api, huma.Operation{
		OperationID: "create-tenant", Method: http.MethodPost, Path: "/v1/tenants",
		Summary: "Register a tenant", Tags: []string{"Tenants"}, DefaultStatus: http.StatusCreated,
		Security: needs(ScopeAdmin), MaxBodyBytes: s.bodyLimit(),
		Errors: append(errs, http.StatusConflict, http.StatusUnprocessableEntity),
	}, s.createTenant)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-tenant", Method: http.MethodGet, Path: "/v1/tenants/{id}",
		Summary:     "Get a tenant",
		Description: "An admin key reads any tenant; a tenant key with read reads its own, and any other is a 404.",
		Tags:        []string{"Tenants"}, Security: needs(ScopeRead), Errors: append(errs, http.StatusNotFound),
	}, s.getTenant)
	huma.Register(s.api, huma.Operation{
		OperationID: "update-tenant", Method: http.MethodPatch, Path: "/v1/tenants/{id}",
		Summary:     "Change a tenant",
		Description: "Changes the fields given, as `herald tenants set` does. A suspended tenant's traffic is dead-lettered until it is active again.",
		Tags:        []string{"Tenants"}, Security: needs(ScopeAdmin), MaxBodyBytes: s.bodyLimit(),
		Errors: append(errs, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity),
	}, s.updateTenant)
}

func (s *Service) listTenants(ctx context.Context, _ *struct{}) (*tenantsOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	list, err := st.tenants.List(cctx)
	if err != nil {
		return nil, s.tenantsError(ctx, err)
	}
	out := &tenantsOutput{Body: Tenants{Tenants: make([]Tenant, len(list))}}
	for i, t := range list {
		out.Body.Tenants[i] = tenantOf(t)
	}
	return out, nil
}

func (s *Service) createTenant(ctx context.Context, in *createTenantInput) (*createTenantOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	b := in.Body
	t := tenant.Tenant{ID: b.ID, Name: b.Name, Plan: b.Plan, Status: tenant.Status(b.Status),
		From: b.From, Providers: b.Providers, SMSProviders: b.SMSProviders, WhatsAppProviders: b.WhatsAppProviders,
		LogoURL: b.LogoURL, Colour: b.Colour, InboxOrigins: b.InboxOrigins}
	err = TenantRetentionChanges{History: &b.Retention.History, Payloads: &b.Retention.Payloads, Inbox: &b.Retention.Inbox}.apply(&t.Retention)
	if err == nil {
		t, err = st.tenants.Create(cctx, t)
	}
	if err != nil {
		return nil, s.tenantsError(ctx, err)
	}
	return &createTenantOutput{Status: http.StatusCreated, Body: tenantOf(t)}, nil
}

func (s *Service) getTenant(ctx context.Context, in *tenantInput) (*tenantOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	// Another tenant reads as one not registered, so ids cannot be probed.
	if !principal(ctx).Reaches(in.ID) {
		return nil, huma.Error404NotFound(`tenant "` + in.ID + `" is not registered`)
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	t, err := st.tenants.Get(cctx, in.ID)
	if err != nil {
		return nil, s.tenantsError(ctx, err)
	}
	return &tenantOutput{Body: tenantOf(t)}, nil
}

func (s *Service) updateTenant(ctx context.Context, in *patchTenantInput) (*tenantOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	t, err := st.tenants.Update(cctx, in.ID, in.Body.apply)
	if err != nil {
		return nil, s.tenantsError(ctx, err)
	}
	return &tenantOutput{Body: tenantOf(t)}, nil
}

// apply makes the changes to t; Update may call it more than once.
func (c TenantChanges) apply(t *tenant.Tenant) error {
	set := func(field *string, v *string) {
		if v != nil {
			*field = *v
		}
	}
	set(&t.Name, c.Name)
	set(&t.Plan, c.Plan)
	set(&t.From, c.From)
	set(&t.LogoURL, c.LogoURL)
	set(&t.Colour, c.Colour)
	if c.Status != nil {
		t.Status = tenant.Status(*c.Status)
	}
	for _, chain := range []struct{ from, to *[]string }{
		{c.Providers, &t.Providers}, {c.SMSProviders, &t.SMSProviders}, {c.WhatsAppProviders, &t.WhatsAppProviders},
		{c.InboxOrigins, &t.InboxOrigins},
	} {
		if chain.from != nil {
			*chain.to = *chain.from
		}
	}
	if c.Retention != nil {
		return c.Retention.apply(&t.Retention)
	}
	return nil
}

// apply sets the periods given; a *tenant.ValidationError names each one
// that is not a period.
func (c TenantRetentionChanges) apply(r *tenant.Retention) error {
	var problems []string
	for _, p := range []struct {
		field string
		value *string
	}{{"history", c.History}, {"payloads", c.Payloads}, {"inbox", c.Inbox}} {
		if p.value == nil {
			continue
		}
		var invalid *tenant.ValidationError
		if errors.As(r.Set(p.field, *p.value), &invalid) {
			problems = append(problems, invalid.Problems...)
		}
	}
	if len(problems) > 0 {
		return &tenant.ValidationError{Problems: problems}
	}
	return nil
}

// tenantsError is the answer to a registry error: what the caller got
// wrong says so, the registry's own trouble is a 503.
func (s *Service) tenantsError(ctx context.Context, err error) error {
	var invalid *tenant.ValidationError
	switch {
	case errors.As(err, &invalid):
		return huma.Error422UnprocessableEntity(err.Error())
	case errors.Is(err, tenant.ErrNotFound):
		return huma.Error404NotFound(err.Error())
	case errors.Is(err, tenant.ErrExists), errors.Is(err, tenant.ErrConflict):
		return huma.Error409Conflict(err.Error())
	}
	s.cfg.Logger.WarnContext(ctx, "tenant registry unavailable", "error", err)
	return unavailable("the tenant registry cannot be read right now")
}

func tenantOf(t tenant.Tenant) Tenant {
	return Tenant{ID: t.ID, Name: t.Name, Plan: t.Plan, Status: string(t.Status), From: t.From, Providers: t.Providers,
		SMSProviders: t.SMSProviders, WhatsAppProviders: t.WhatsAppProviders, LogoURL: t.LogoURL, Colour: t.Colour,
		Retention: retentionOf(t.Retention), InboxOrigins: t.InboxOrigins, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

// retentionOf is a tenant's retention as the API shows it: nil when it
// sets none.
func retentionOf(r tenant.Retention) *TenantRetention {
	if r == (tenant.Retention{}) {
		return nil
	}
	out := &TenantRetention{}
	if r.History != 0 {
		out.History = r.History.String()
	}
	if r.Payloads != 0 {
		out.Payloads = r.Payloads.String()
	}
	if r.Inbox != 0 {
		out.Inbox = r.Inbox.String()
	}
	return out
}
