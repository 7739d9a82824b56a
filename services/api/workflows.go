package api

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
	records "github.com/heraldhq/herald/shared/resource"
)

// Workflow is one of a tenant's own workflows: a route with its steps,
// as one entry of the config's router.routes, which for the tenant's
// events of its type (and kind) replaces the configured routes.
type Workflow struct {
	Tenant    string       `json:"tenant"`
	Name      string       `json:"name" example:"po-reminder"`
	Route     router.Route `json:"route"`
	UpdatedAt time.Time    `json:"updated_at"`
}

// WorkflowChecks are what a tenant's workflow is checked against beyond
// its own validation, as start-up checks the configured routes: what this
// deployment delivers and ships.
type WorkflowChecks struct {
	// Channels are the channels this deployment delivers on
	// (router.channels): a workflow naming another is refused. Defaults to
	// every channel.
	Channels []event.Channel
	// Shipped says whether Herald ships a template of that name for the
	// channel (a tenant's own templates are of those names). Nil checks no
	// template.
	Shipped func(ch event.Channel, name string) bool
}

type workflowInput struct {
	WebhookTenant
	Name string `path:"name" doc:"The workflow's name: 1-64 letters, digits, '_' or '-'."`
}

func (in workflowInput) key() string { return in.Name }

type putWorkflowInput struct {
	WebhookTenant
	Name    string `path:"name" doc:"The workflow's name: 1-64 letters, digits, '_' or '-'."`
	RawBody []byte `contentType:"application/json"`
	route   router.Route
}

func (in putWorkflowInput) key() string { return in.Name }

// Resolve reads the body as the config file's routes are read: a key the
// route, or a step's kind, does not have is refused, named.
func (in *putWorkflowInput) Resolve(huma.Context) []error {
	r, err := router.ParseWorkflow(in.RawBody)
	if err != nil {
		return []error{&huma.ErrorDetail{Location: "body", Message: err.Error()}}
	}
	in.route = r
	return nil
}

func (in putWorkflowInput) record(tenant string) router.Workflow {
	return router.Workflow{Tenant: tenant, Name: in.Name, Route: in.route, UpdatedAt: time.Now().UTC()}
}

type listWorkflowsOutputBody struct {
	Workflows  []Workflow `json:"workflows"`
	NextCursor string     `json:"next_cursor,omitempty" doc:"Pass as cursor= for the next page; absent on the last page."`
}

type workflowStore = resourceStore[string, router.Workflow, router.Workflow]

func registerWorkflows(s *Service) {
	r := &resource[string, router.Workflow, router.Workflow, Workflow]{
		what: "workflows", path: "/v1/workflows", item: "/{name}", tags: []string{"Workflows"},
		read: ScopeRead, write: ScopeSend,
		store: func(st *stores) (workflowStore, error) {
			return tenantWorkflows{store: st.workflows, checks: s.cfg.Workflows}, nil
		},
		view:     workflowOf,
		notFound: router.ErrNoWorkflow, invalid: records.ErrInvalid, conflict: records.ErrConflict,
		absent: func(tenant, name string) string {
			return "tenant " + tenant + " has no workflow " + quoted(name) + ": the configured routes apply"
		},
		broken: "the workflows could not be read or written right now",
	}
	pagedRoute[tenantPageInput](s, r, route{Operation: huma.Operation{OperationID: "list-workflows",
		Summary: "List the tenant's own workflows", Description: "A page at a time, in the order of their names."}}, "", tenantPrefix,
		func(st workflowStore, ctx context.Context, tenant, _ string, p records.Page) ([]router.Workflow, string, error) {
			return st.(tenantWorkflows).store.List(ctx, tenant, p)
		}, workflowOf, func(l []Workflow, next string) listWorkflowsOutputBody { return listWorkflowsOutputBody{l, next} })
	getRoute[workflowInput](s, r, route{Operation: huma.Operation{OperationID: "get-workflow", Summary: "Get one of the tenant's own workflows",
		Errors: []int{http.StatusBadRequest}}})
	// The body is read as the config file is (putWorkflowInput.Resolve),
	// not by its schema, which only documents it.
	upsertRoute[putWorkflowInput](s, r, route{maxBody: router.MaxWorkflowBytes + 1, Operation: huma.Operation{OperationID: "put-workflow", SkipValidateBody: true,
		Summary: "Create or replace one of the tenant's own workflows",
		Description: "The body is one route, as an entry of the config's router.routes (event, kind, document, template, roles, " +
			"account_roles, channels, fallback, priority, category, required, cancel_on, steps), in JSON. It is checked as the config is — " +
			"a key it or a step does not have, or a problem, is refused (422, naming the field: workflow.steps[1].wait.for) — and against " +
			"this deployment: the channels it delivers on, the templates Herald ships for them, the steps this version builds. For the tenant's events of " +
			"its event type (and kind, when it names one) the tenant's workflows replace the configured routes, from the next event on.",
		Errors: []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge}}})
	deleteRoute[workflowInput](s, r, route{Operation: huma.Operation{OperationID: "delete-workflow",
		Summary: "Remove one of the tenant's own workflows", Description: "The configured routes apply again to its events; runs it started go on.",
		Errors: []int{http.StatusBadRequest}}})
	documentBody(s.api, r.path+r.item, http.MethodPut, reflect.TypeFor[router.Route](), "application/json")
	// Stage is the router's own, set as a run's send is planned: a
	// workflow never carries it.
	if route := s.api.OpenAPI().Components.Schemas.Map()["Route"]; route != nil {
		delete(route.Properties, "stage")
	}
}

func workflowOf(w router.Workflow) Workflow {
	return Workflow{Tenant: w.Tenant, Name: w.Name, Route: w.Route, UpdatedAt: w.UpdatedAt}
}

// tenantWorkflows is the workflow store as the API exposes it: a
// workflow is stored only once it validates and this deployment can take
// it.
type tenantWorkflows struct {
	store  *records.Store[router.Workflow]
	checks WorkflowChecks
}

// named refuses a name no workflow may have: 400, for it is the path's.
func named(name string) error {
	if !router.ValidWorkflowName(name) {
		return huma.Error400BadRequest("workflow name " + quoted(name) + ": 1-64 letters, digits, '_' or '-'")
	}
	return nil
}

func (t tenantWorkflows) List(ctx context.Context, tenant string) ([]router.Workflow, error) {
	return t.store.All(ctx, tenant)
}

func (t tenantWorkflows) Get(ctx context.Context, tenant, name string) (router.Workflow, error) {
	if err := named(name); err != nil {
		return router.Workflow{}, err
	}
	w, _, err := t.store.Get(ctx, router.WorkflowKey(tenant, name))
	return w, err
}

func (t tenantWorkflows) Put(ctx context.Context, tenant string, w router.Workflow) (router.Workflow, error) {
	w, _, err := t.Upsert(ctx, tenant, w)
	return w, err
}

func (t tenantWorkflows) Upsert(ctx context.Context, tenant string, w router.Workflow) (router.Workflow, bool, error) {
	if err := named(w.Name); err != nil {
		return router.Workflow{}, false, err
	}
	if err := t.checks.Check(w); err != nil {
		return router.Workflow{}, false, huma.Error422UnprocessableEntity(err.Error())
	}
	created, err := t.store.Upsert(ctx, w)
	return w, created, err
}

func (t tenantWorkflows) Delete(ctx context.Context, tenant, name string) error {
	if err := named(name); err != nil {
		return err
	}
	return t.store.Delete(ctx, router.WorkflowKey(tenant, name))
}

// Check refuses, each problem named by its field, a workflow that does
// not validate or that this deployment cannot take — as start-up refuses
// a configured route: a channel it does not deliver on, a template none
// has. The API answers what it refuses 422; the CLI refuses it alike.
func (c WorkflowChecks) Check(w router.Workflow) error {
	if err := w.Validate(); err != nil {
		return err
	}
	problems := c.undelivered(w.Route)
	if problems = append(problems, c.missingTemplates(w.Route)...); len(problems) > 0 {
		return fmt.Errorf("%w: %s", router.ErrInvalidWorkflow, strings.Join(problems, "; "))
	}
	return nil
}

// undelivered names the channels r or its sends name that this
// deployment does not deliver on.
func (c WorkflowChecks) undelivered(r router.Route) []string {
	if c.Channels == nil {
		return nil
	}
	var out []string
	check := func(field string, channels []event.Channel) {
		for _, ch := range channels {
			if !slices.Contains(c.Channels, ch) {
				out = append(out, fmt.Sprintf("%s: %q is not delivered by this deployment (it delivers on %v)", field, ch, c.Channels))
			}
		}
	}
	check("workflow.channels", r.Channels)
	check("workflow.fallback", r.Fallback)
	for j, s := range r.Steps {
		if s.Send != nil {
			check(fmt.Sprintf("workflow.steps[%d].send.channels", j), s.Send.Channels)
			check(fmt.Sprintf("workflow.steps[%d].send.fallback", j), s.Send.Fallback)
		}
	}
	return out
}

// missingTemplates names each send of r whose template a channel it
// sends on does not have. (A tenant's own email templates are of names
// Herald ships: PUT /v1/templates refuses others.)
func (c WorkflowChecks) missingTemplates(r router.Route) []string {
	if c.Shipped == nil {
		return nil
	}
	var out []string
	for _, send := range sends(r) {
		for _, ch := range slices.Concat(send.Channels, send.Fallback) {
			if c.Channels != nil && !slices.Contains(c.Channels, ch) {
				continue // undelivered names it
			}
			if !c.Shipped(ch, send.Template) {
				out = append(out, fmt.Sprintf("%s: no %s template %q in this deployment", send.field, ch, send.Template))
			}
		}
	}
	return out
}

// planned is a route one of a workflow's sends plans with, and the field
// that names its template.
type planned struct {
	router.Route
	field string
}

// sends are the routes r's sends plan with: r itself when it has no
// steps, else each send step's.
func sends(r router.Route) []planned {
	r = r.WithDefaults()
	if len(r.Steps) == 0 {
		return []planned{{r, "workflow.template"}}
	}
	var out []planned
	for j, s := range r.Steps {
		if s.Send != nil {
			out = append(out, planned{r.SendStepRoute(j), fmt.Sprintf("workflow.steps[%d].send.template", j)})
		}
	}
	return out
}
