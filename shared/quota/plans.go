package quota

import (
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/tenant"
)

// Tenants says which plan a tenant is on (tenant.Cache).
type Tenants interface {
	Plan(id string, plans tenant.Plans) (string, tenant.Plan)
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
	_, plan := p.Tenants.Plan(id, p.Plans)
	perMonth, limited := plan.Quota(c)
	return Limit{PerMonth: perMonth, Limited: limited}
}
