// Package api is Herald's public HTTP API, served under /v1/ on the public
// listener (api.listen), never on the operations listener.
//
// Every route is a huma operation (github.com/danielgtaylor/huma/v2): its
// input and output are Go types, from which huma derives the OpenAPI 3.1
// document served at /v1/openapi.json and validates requests; errors are
// RFC 9457 problem details (application/problem+json). One file holds each
// resource: events.go (POST /v1/events), notifications.go
// (GET /v1/notifications/{id}), jobs.go (POST /v1/notifications: one
// notification written by the caller, without an event), retry.go
// (POST …/{id}/retry), and, for admin keys, what the CLI does: dlq.go
// (/v1/dlq), tenants.go (/v1/tenants), keys.go (/v1/keys), providers.go
// (/v1/tenants/{id}/providers). A new resource is a new file with a
// register function, listed in routes (api.go).
//
// Callers authenticate with an API key (Authorization: Bearer hk_…) that
// an Authenticator turns into a Principal: its tenant, its scopes, and
// whether it is an operator's (admin) key. A tenant key never reaches
// another tenant's data: the answer is 404, as for what does not exist.
// The admin routes answer a tenant key 403, whatever its scopes — except
// GET /v1/tenants/{id}, which a key with read may ask of its own tenant
// (any other is a 404). Provider secrets go in, sealed, and come out only
// as a masked preview.
//
// Writes take an Idempotency-Key with Stripe's semantics, kept in the KV
// bucket "idempotency" (idempotency.go).
package api
