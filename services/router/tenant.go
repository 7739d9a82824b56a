package router

import (
	"fmt"
	"strings"

	"github.com/heraldhq/herald/shared/tenant"
)

// Tenants is the tenant registry as the router asks it (tenant.Cache): may
// this tenant's events be routed? The error, when set, is the reason the
// event is dead-lettered with — a suspended tenant, or, when registration
// is required, an unknown one.
type Tenants interface {
	Admit(tenant string, requireRegistered bool) error
	// Plan is the tenant's plan, of plans, by name.
	Plan(id string, plans tenant.Plans) (string, tenant.Plan)
}

// admit refuses, before anything is published, an event that arrived on a
// subject bound to another tenant (orders.<name>.<tenant>), or whose tenant
// the registry does not admit. A refused event plans nothing.
func (s *Service) admit(subject string, d *Decision) error {
	if err := boundTenant(subject, d.Event.Tenant); err != nil {
		*d = Decision{Event: d.Event, Outcome: Invalid}
		return err
	}
	if s.cfg.Registry == nil {
		return nil
	}
	if err := s.cfg.Registry.Admit(d.Event.Tenant, s.cfg.RequireRegistered); err != nil {
		*d = Decision{Event: d.Event, Outcome: Refused}
		return err
	}
	_, plan := s.cfg.Registry.Plan(d.Event.Tenant, s.cfg.Plans)
	capPriorities(d, plan)
	return nil
}

// capPriorities holds the event's deliveries to the plan's max_priority: a
// route may say critical, but a free tenant's traffic is low.
func capPriorities(d *Decision, plan tenant.Plan) {
	for i := range d.Deliveries {
		d.Deliveries[i].Priority = plan.Cap(d.Deliveries[i].Priority)
	}
	for _, r := range d.Renders {
		for i := range r.Deliveries {
			r.Deliveries[i].Priority = plan.Cap(r.Deliveries[i].Priority)
		}
	}
}

// boundTenant checks an event against the subject it was published on. A
// three-token subject (orders.created.acme) is bound to its last token: NATS
// permissions can confine a tenant's credentials to its own subjects, but
// not what it writes in the body. Two tokens (orders.created) are for
// trusted internal publishers, and bind nothing.
func boundTenant(subject, tenant string) error {
	tokens := strings.Split(subject, ".")
	if len(tokens) != 3 || tokens[2] == tenant {
		return nil
	}
	return fmt.Errorf("tenant mismatch: event for tenant %q published on %s, tenant %q's subject", tenant, subject, tokens[2])
}
