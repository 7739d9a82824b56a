package quota

import (
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/tenant"
)

// Tenants finds a tenant's registration (tenant.Cache).
type Tenants interface {
	Lookup(id string) (tenant.Tenant, bool)
}

// Plans answers each tenant's limit from its plan, as the registry names
// it and the plans (the config file's plans:, over the built-in ones)
// define it. A tenant the registry does not know, or on a plan nobody
// defines, has no limit: it is still counted.
type Plans struct {
	Tenants Tenants
	Plans   tenant.Plans
}

// Limit is tenant id's quota on channel c.
func (p Plans) Limit(id string, c event.Channel) Limit {
	t, ok := p.Tenants.Lookup(id)
	if !ok {
		return Limit{}
	}
	plan, ok := p.Plans[t.Plan]
	if !ok {
		return Limit{}
	}
	perMonth, limited := plan.Quota(c)
	return Limit{PerMonth: perMonth, Limited: limited}
}
