package router

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/resource"
)

// TenantWorkflows are tenants' own workflows as the router asks for them,
// per event: a map read, not a round trip.
type TenantWorkflows interface {
	// Routes are tenant's workflows' routes, defaults filled, by name.
	Routes(tenant string) []Route
	// RunEventTypes are the event types tenant's workflows' runs end on.
	RunEventTypes(tenant string) []string
}

// routesFor are the routes an event of tenant, of this type and order
// kind, is routed by: the tenant's own workflows that match it, when
// there are some — they replace the configured routes of that event
// (and kind), for that tenant only — else the configured routes.
func (c Config) routesFor(tenant, eventType string, kind event.Kind) []Route {
	if c.Workflows == nil {
		return c.Routes
	}
	var own []Route
	for _, r := range c.Workflows.Routes(tenant) {
		if r.matches(eventType, kind) {
			own = append(own, r)
		}
	}
	if len(own) == 0 {
		return c.Routes
	}
	return own
}

// workflowIndex is every tenant's workflows in memory, kept current by a
// watch of KV_workflows: a PUT reaches the next event without a restart.
type workflowIndex struct {
	mu       sync.RWMutex
	byTenant map[string]*tenantWorkflows
	feed     *resource.Feed
}

// tenantWorkflows are one tenant's workflows, and what is asked of them
// per event, computed once per change.
type tenantWorkflows struct {
	named  map[string]Route
	routes []Route
	events []string
}

// watchWorkflows loads KV_workflows and follows it.
func watchWorkflows(ctx context.Context, js jetstream.JetStream) (*workflowIndex, error) {
	x := &workflowIndex{byTenant: map[string]*tenantWorkflows{}}
	feed, err := resource.Follow(ctx, js, Workflows, x.apply)
	if err != nil {
		return nil, err
	}
	x.feed = feed
	return x, nil
}

// apply keeps the workflow at key, or forgets it. One that does not
// validate (written by hand, or by a version that checked less) is
// forgotten too: better the configured routes than a run that fails.
func (x *workflowIndex) apply(key string, w Workflow, ok bool) {
	tenant, name, _ := strings.Cut(key, ".")
	x.mu.Lock()
	defer x.mu.Unlock()
	t := x.byTenant[tenant]
	if t == nil {
		t = &tenantWorkflows{named: map[string]Route{}}
	}
	named := maps.Clone(t.named)
	if ok && w.Tenant == tenant && w.Name == name && w.Validate() == nil {
		named[name] = w.Route.withDefaults()
	} else {
		delete(named, name)
	}
	if len(named) == 0 {
		delete(x.byTenant, tenant)
		return
	}
	routes := make([]Route, 0, len(named))
	for _, n := range slices.Sorted(maps.Keys(named)) {
		routes = append(routes, named[n])
	}
	x.byTenant[tenant] = &tenantWorkflows{named: named, routes: routes, events: RunEventTypes(routes)}
}

func (x *workflowIndex) Routes(tenant string) []Route {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if t := x.byTenant[tenant]; t != nil {
		return t.routes
	}
	return nil
}

func (x *workflowIndex) RunEventTypes(tenant string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if t := x.byTenant[tenant]; t != nil {
		return t.events
	}
	return nil
}

// Stop ends the watch.
func (x *workflowIndex) Stop() { x.feed.Stop() }
