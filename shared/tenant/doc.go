// Package tenant is Herald's tenant registry: who sends through Herald, on
// which plan, whether they may send now, from which address and through
// which providers. Tenants are kept in the JetStream key-value bucket
// "tenants" (declared in streams/KV_tenants), one key per tenant id — the
// same `tenant` token that names the tenant in subjects, keys and metrics.
//
// Operators and the admin API change tenants through a Registry:
//
//	reg, err := tenant.Open(ctx, js, plans) // the configured plans
//	acme, err := reg.Create(ctx, tenant.Tenant{ID: "acme", Plan: "startup"})
//	acme, err = reg.Update(ctx, "acme", func(t *tenant.Tenant) error {
//		t.Status = tenant.Suspended
//		return nil
//	})
//
// Every write is validated against the plans the configuration knows
// (BuiltinPlans, with the config file's `plans:` over them) and checked
// against the revision it was read at, so two operators editing one tenant
// never silently undo each other.
//
// The services read tenants on every event and every request, so they
// never ask the bucket: a Cache holds the whole registry in memory and
// follows it with a KV watch, and Cache.Admit says whether a tenant's
// traffic may pass. Its errors (`unknown tenant "x"`, `tenant "x" is
// suspended`) are the dead-letter reasons operators see.
//
// Plans are only named and stored here; what a plan allows is enforced
// elsewhere.
package tenant
