package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
)

// readTimeout bounds what one tenants page reads from NATS, so a page
// answers while NATS is unreachable rather than wait for it.
const readTimeout = 5 * time.Second

// tenantStores are what the tenants pages read and write: the registry,
// the API keys, the vault (listed only: nothing is decrypted, so no
// master key is needed), the webhook endpoints, and the quota counters.
type tenantStores struct {
	registry  *tenant.Registry
	keys      *apikey.Keys
	providers *vault.Store
	endpoints *webhooks.Store
	counter   *quota.Counter
}

func openTenantStores(ctx context.Context, js jetstream.JetStream, plans tenant.Plans) (*tenantStores, error) {
	st := &tenantStores{counter: quota.New(js)}
	var err error
	if st.registry, err = tenant.Open(ctx, js, plans); err != nil {
		return nil, err
	}
	if st.keys, err = apikey.Open(ctx, js); err != nil {
		return nil, err
	}
	if st.providers, err = vault.Open(ctx, js, nil); err != nil {
		return nil, err
	}
	if st.endpoints, err = webhooks.Open(ctx, js, nil); err != nil {
		return nil, err
	}
	return st, nil
}

// channelUsage is a month's count on one channel, as the pages show it.
type channelUsage struct{ quota.Usage }

// Left is what the quota leaves this month; only meaningful when Limited.
func (u channelUsage) Left() int64 { return max(u.PerMonth-u.Used, 0) }

// WarnAt is where the month reaches quota.Warning: the meter's "high".
func (u channelUsage) WarnAt() int64 { return u.PerMonth * int64(quota.Warning) / 100 }

// tenantMonth reads t's month as GET /v1/usage and herald tenants usage do.
func (c *Console) tenantMonth(ctx context.Context, t tenant.Tenant, month string) ([]channelUsage, error) {
	counts, err := c.tenants.counter.TenantMonth(ctx, t.ID, c.cfg.Plans[t.Plan], month)
	if err != nil {
		return nil, err
	}
	out := make([]channelUsage, len(counts))
	for i, u := range counts {
		out[i] = channelUsage{u}
	}
	return out, nil
}

// tenantsView is the tenants page: every tenant with its month.
type tenantsView struct {
	Month    string
	Channels []event.Channel
	Rows     []tenantRow
}

// Columns is how many columns the table has: tenant, plan, status and
// one per channel.
func (v tenantsView) Columns() int { return 3 + len(v.Channels) }

type tenantRow struct {
	Tenant tenant.Tenant
	// Defined is false for a plan no config defines any more: no limits.
	Defined bool
	Usage   []channelUsage
}

func (c *Console) tenantsPage(w http.ResponseWriter, r *http.Request, ses *session) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	list, err := c.tenants.registry.List(ctx)
	if err != nil {
		c.cfg.Logger.Warn("console: listing tenants", "error", err)
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The tenant registry cannot be read right now.")
		return
	}
	v := tenantsView{Month: quota.Month(c.cfg.Now()), Channels: event.Channels}
	for _, t := range list {
		row := tenantRow{Tenant: t}
		_, row.Defined = c.cfg.Plans[t.Plan]
		if row.Usage, err = c.tenantMonth(ctx, t, v.Month); err != nil {
			c.cfg.Logger.Warn("console: reading usage", "tenant", t.ID, "error", err)
			c.fail(w, r, ses, http.StatusServiceUnavailable, "The usage counters cannot be read right now.")
			return
		}
		v.Rows = append(v.Rows, row)
	}
	c.render(w, http.StatusOK, "tenants.html", view{Title: "Tenants", Nav: "tenants", Session: ses, Data: v})
}

// tenantView is one tenant's page. Each section is read on its own: one
// store that cannot be read leaves the others shown, and says so.
type tenantView struct {
	Tenant  tenant.Tenant
	Plan    tenant.Plan
	Defined bool
	// PerMinute and Burst are the plan's rate limit, when Limited.
	PerMinute, Burst int
	Limited          bool

	Month    string
	Usage    []channelUsage
	UsageErr string

	Keys    []apikey.Key
	KeysErr string

	Providers    []vault.Info
	ProvidersErr string

	Endpoints    []webhooks.Endpoint
	EndpointsErr string

	// Form is the new key's form, kept when it is refused.
	Form keyForm
}

// keyForm is the new key form as the operator filled it.
type keyForm struct {
	Name   string
	Scopes []string
}

// Has reports whether scope is ticked.
func (f keyForm) Has(scope string) bool { return slices.Contains(f.Scopes, scope) }

// newKeyForm is the form as it first shows: both scopes, as herald keys
// create defaults to.
var newKeyForm = keyForm{Scopes: []string{string(apikey.Send), string(apikey.Read)}}

// readTenant reads everything the tenant's page shows; the error is the
// registry's alone (tenant.ErrNotFound, or it could not be read).
func (c *Console) readTenant(ctx context.Context, id string) (tenantView, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	t, err := c.tenants.registry.Get(ctx, id)
	if err != nil {
		return tenantView{}, err
	}
	v := tenantView{Tenant: t, Month: quota.Month(c.cfg.Now()), Form: newKeyForm}
	v.Plan, v.Defined = c.cfg.Plans[t.Plan]
	v.PerMinute, v.Burst, v.Limited = v.Plan.Rate()
	section := func(what string, err error) string {
		if err == nil {
			return ""
		}
		c.cfg.Logger.Warn("console: reading a tenant's "+what, "tenant", id, "error", err)
		return fmt.Sprintf("The %s cannot be read right now.", what)
	}
	v.Usage, err = c.tenantMonth(ctx, t, v.Month)
	v.UsageErr = section("usage counters", err)
	v.Keys, err = c.tenants.keys.List(ctx, id)
	v.KeysErr = section("API keys", err)
	v.Providers, err = c.tenants.providers.List(ctx, id)
	v.ProvidersErr = section("provider accounts", err)
	v.Endpoints, err = c.tenants.endpoints.List(ctx, id)
	v.EndpointsErr = section("webhook endpoints", err)
	return v, nil
}

// tenantPage shows a tenant: plan, usage, keys, providers, endpoints.
func (c *Console) tenantPage(w http.ResponseWriter, r *http.Request, ses *session) {
	v, ok := c.tenantOr(w, r, ses)
	if ok {
		c.showTenant(w, http.StatusOK, ses, r.URL.Query().Get("done"), v)
	}
}

// tenantOr reads the tenant named in the path, or answers why it cannot.
func (c *Console) tenantOr(w http.ResponseWriter, r *http.Request, ses *session) (tenantView, bool) {
	id := r.PathValue("id")
	v, err := c.readTenant(r.Context(), id)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		c.fail(w, r, ses, http.StatusNotFound, fmt.Sprintf("No tenant %q is registered.", id))
		return v, false
	case err != nil:
		c.cfg.Logger.Warn("console: reading a tenant", "tenant", id, "error", err)
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The tenant registry cannot be read right now.")
		return v, false
	}
	return v, true
}

func (c *Console) showTenant(w http.ResponseWriter, status int, ses *session, notice string, v tenantView) {
	c.render(w, status, "tenant.html", view{Title: "Tenant " + v.Tenant.ID, Nav: "tenants", Session: ses, Notice: notice, Data: v})
}

// createdKeyView is the page a new key is shown on, this once.
type createdKeyView struct {
	Tenant tenant.Tenant
	Key    apikey.Key
	Plain  string
}

// createKey makes a key for the tenant and shows it on the answer itself,
// never in a URL: the page is not cached (Cache-Control: no-store), and
// only the key's id goes to the audit log.
func (c *Console) createKey(w http.ResponseWriter, r *http.Request, ses *session) {
	v, ok := c.tenantOr(w, r, ses)
	if !ok {
		return
	}
	v.Form = keyForm{Name: strings.TrimSpace(r.PostForm.Get("name")), Scopes: r.PostForm["scope"]}
	if len(v.Form.Scopes) == 0 {
		c.showTenant(w, http.StatusUnprocessableEntity, ses, "No key made: tick send, read or both.", v)
		return
	}
	spec := apikey.Spec{Tenant: v.Tenant.ID, Name: v.Form.Name}
	for _, s := range v.Form.Scopes {
		spec.Scopes = append(spec.Scopes, apikey.Scope(s))
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	plain, key, err := c.tenants.keys.Create(ctx, spec)
	switch {
	case errors.Is(err, apikey.ErrBadSpec):
		c.audit.record(r.Context(), ses.KeyID, "key.create", "tenant "+v.Tenant.ID, err)
		c.showTenant(w, http.StatusUnprocessableEntity, ses, "No key made: "+strings.TrimPrefix(err.Error(), apikey.ErrBadSpec.Error()+": ")+".", v)
		return
	case err != nil:
		c.cfg.Logger.Warn("console: creating an API key", "tenant", v.Tenant.ID, "error", err)
		c.audit.record(r.Context(), ses.KeyID, "key.create", "tenant "+v.Tenant.ID, errors.New("the API keys could not be written"))
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The API keys cannot be written right now: no key was made.")
		return
	}
	notice := ""
	if err := c.audit.record(r.Context(), ses.KeyID, "key.create", key.ID, nil); err != nil {
		notice = "The audit log did not take this: revoke the key if it must not exist unrecorded."
	}
	c.render(w, http.StatusOK, "tenant_key.html", view{Title: "New key for " + v.Tenant.ID, Nav: "tenants", Session: ses,
		Notice: notice, Data: createdKeyView{Tenant: v.Tenant, Key: key, Plain: plain}})
}

// tenantKey reads the key named in the path, if it is the tenant's.
func (c *Console) tenantKey(w http.ResponseWriter, r *http.Request, ses *session) (apikey.Key, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	id, keyID := r.PathValue("id"), r.PathValue("key")
	k, err := c.tenants.keys.Get(ctx, keyID)
	switch {
	case errors.Is(err, apikey.ErrNotFound), err == nil && k.Tenant != id:
		c.fail(w, r, ses, http.StatusNotFound, fmt.Sprintf("Tenant %q has no key %q.", id, keyID))
		return k, false
	case err != nil:
		c.cfg.Logger.Warn("console: reading an API key", "key", keyID, "error", err)
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The API keys cannot be read right now.")
		return k, false
	}
	return k, true
}

// revokeKeyPage asks to confirm a revocation.
func (c *Console) revokeKeyPage(w http.ResponseWriter, r *http.Request, ses *session) {
	k, ok := c.tenantKey(w, r, ses)
	if !ok {
		return
	}
	c.render(w, http.StatusOK, "tenant_key_revoke.html", view{Title: "Revoke key " + k.ID, Nav: "tenants", Session: ses, Data: k})
}

// revokeKey revokes a tenant's key, once confirmed: every replica refuses
// it within seconds.
func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request, ses *session) {
	k, ok := c.tenantKey(w, r, ses)
	if !ok {
		return
	}
	back := Path + "tenants/" + url.PathEscape(k.Tenant)
	if r.PostForm.Get("confirm") != "revoke" {
		http.Redirect(w, r, back+"?done="+url.QueryEscape("Nothing revoked: confirm first."), http.StatusSeeOther)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	err := c.tenants.keys.Revoke(ctx, k.ID)
	auditErr := c.audit.record(r.Context(), ses.KeyID, "key.revoke", k.ID, err)
	msg := fmt.Sprintf("Key %s revoked: every replica refuses it within seconds.", k.ID)
	switch {
	case err != nil:
		c.cfg.Logger.Warn("console: revoking an API key", "key", k.ID, "error", err)
		msg = fmt.Sprintf("Key %s was not revoked: the API keys cannot be written right now.", k.ID)
	case auditErr != nil:
		msg += " The audit log did not take it."
	}
	http.Redirect(w, r, back+"?done="+url.QueryEscape(msg), http.StatusSeeOther)
}
