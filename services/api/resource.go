package api

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	records "github.com/heraldhq/herald/shared/resource"
)

// A tenant resource (suppressions, templates, sending domains, webhook
// endpoints, and the ones to come) is exposed under /v1 one way: the
// tenant is the key's own or the one an admin key names, each request's
// round trips to the store are bounded, and the store's errors are
// answered alike — absent (another tenant's too) 404, refused 422 in the
// store's words (which name the field), a lost compare-and-set 409, the
// store's own trouble 503 with Retry-After. What is a resource's own —
// its path parameters, its body, its docs, an extra action — it says in
// its registration, one line per operation, as huma.Register does.

// resourceStore is a tenant resource's store as the API uses it: records
// E, one named by K (what the path names), created or replaced from N.
// Each resource adapts its store's own methods to it.
type resourceStore[K, N, E any] interface {
	List(ctx context.Context, tenant string) ([]E, error)
	Get(ctx context.Context, tenant string, key K) (E, error)
	Put(ctx context.Context, tenant string, n N) (E, error)
	Delete(ctx context.Context, tenant string, key K) error
}

// resource is how one tenant resource is exposed: where, to which scopes,
// its store, what it answers, and its store's errors.
type resource[K, N, E, V any] struct {
	// what names the records in a 403: "this key manages tenant acme's
	// suppressions only".
	what string
	// path is the collection, "/v1/suppressions"; item one record under
	// it, "/{address}".
	path, item string
	tags       []string
	// read and write are the scopes that read the resource and change it.
	read, write string
	// store is the request's store, from the bound ones, or why there is
	// none (a problem).
	store func(*stores) (resourceStore[K, N, E], error)
	// view is a record as the API shows it.
	view func(E) V
	// notFound, invalid and conflict are the store's errors for a record
	// the tenant does not have, one it refuses, and a lost compare-and-set.
	notFound, invalid, conflict error
	// absent is a 404's words.
	absent func(tenant string, key K) string
	// broken is a 503's words, when the store fails.
	broken string
	// own answers the errors that are the resource's own (a provider's
	// refusal), or is nil, or returns nil for the others.
	own func(ctx context.Context, tenant string, key K, err error) error
}

// route is one of a resource's operations: its id and docs, and the
// errors it answers beyond those every operation of a resource does.
type route struct {
	huma.Operation
	// timeout bounds the request's round trips; natsTimeout when zero.
	timeout time.Duration
	// maxBody is the route's MaxBodyBytes, when smaller than every body's.
	maxBody int64
}

// keyed is a request that names one record.
type keyed[K any] interface {
	named() string
	key() K
}

// carrying is a request that carries a record to store for tenant.
type carrying[N any] interface {
	named() string
	record(tenant string) N
}

// named is the tenant an admin key's request names.
func (w WebhookTenant) named() string { return w.Tenant }

// bodyOf is an answer that is one record.
type bodyOf[V any] struct{ Body V }

// resourceErrors are what every operation of a resource may answer.
var resourceErrors = []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}

// operation completes op as the resource's method on path, needing scope.
func (r *resource[K, N, E, V]) operation(op route, method, path, scope string, errs ...int) huma.Operation {
	o := op.Operation
	o.Method, o.Path, o.Tags, o.Security = method, path, r.tags, needs(scope)
	o.Errors = append(append(append([]int{}, resourceErrors...), errs...), op.Errors...)
	return o
}

// listRoute registers GET path: the tenant's records, in the envelope
// every list the API answers has, a member named for what it lists. (The
// envelope's type name is its schema's in the OpenAPI document.)
func listRoute[L, K, N, E, V any](s *Service, r *resource[K, N, E, V], op route, envelope func([]V) L) {
	huma.Register(s.api, r.operation(op, http.MethodGet, r.path, r.read), func(ctx context.Context, in *WebhookTenant) (*bodyOf[L], error) {
		var none K
		list, err := call(ctx, s, r, in.Tenant, none, op.timeout, func(ctx context.Context, st resourceStore[K, N, E], tenant string) ([]E, error) {
			return st.List(ctx, tenant)
		})
		if err != nil {
			return nil, err
		}
		views := make([]V, len(list))
		for i, e := range list {
			views[i] = r.view(e)
		}
		return &bodyOf[L]{Body: envelope(views)}, nil
	})
}

// getRoute registers GET path+item: the record the request names.
func getRoute[I keyed[K], K, N, E, V any](s *Service, r *resource[K, N, E, V], op route) {
	actionRoute[I](s, r, op, http.MethodGet, r.item, r.read, resourceStore[K, N, E].Get)
}

// actionRoute registers method on path+sub, which does something to the
// record the request names and answers it as it then is.
func actionRoute[I keyed[K], K, N, E, V any](s *Service, r *resource[K, N, E, V], op route, method, sub, scope string,
	do func(st resourceStore[K, N, E], ctx context.Context, tenant string, key K) (E, error)) {
	huma.Register(s.api, r.operation(op, method, r.path+sub, scope, http.StatusNotFound), func(ctx context.Context, in *I) (*bodyOf[V], error) {
		k := (*in).key()
		e, err := call(ctx, s, r, (*in).named(), k, op.timeout, func(ctx context.Context, st resourceStore[K, N, E], tenant string) (E, error) {
			return do(st, ctx, tenant, k)
		})
		if err != nil {
			return nil, err
		}
		return &bodyOf[V]{Body: r.view(e)}, nil
	})
}

// createRoute registers POST path: a record from the request's body,
// answered 201 as show shows it.
func createRoute[I carrying[N], C, K, N, E, V any](s *Service, r *resource[K, N, E, V], op route, show func(E) C) {
	o := r.operation(op, http.MethodPost, r.path, r.write)
	o.DefaultStatus, o.MaxBodyBytes = http.StatusCreated, s.bodyLimit()
	huma.Register(s.api, o, saved[I](s, r, op, show))
}

// putRoute registers PUT path+item: the record the request names,
// replaced by its body.
func putRoute[I carrying[N], K, N, E, V any](s *Service, r *resource[K, N, E, V], op route) {
	o := r.operation(op, http.MethodPut, r.path+r.item, r.write)
	o.MaxBodyBytes = s.bodyLimit()
	huma.Register(s.api, o, saved[I](s, r, op, r.view))
}

// upserter is a store whose PUT says whether it created the record: none
// was there (resource.Store.Upsert).
type upserter[N, E any] interface {
	Upsert(ctx context.Context, tenant string, n N) (e E, created bool, err error)
}

// upserted is a PUT's answer: 201 when it created the record, 200 when it
// replaced one.
type upserted[V any] struct {
	Status int
	Body   V
}

// upsertRoute registers PUT path+item as putRoute does, for a resource
// whose store is an upserter: answered 201 Created when the record is new,
// 200 when it replaced one, both documented — and 409 when other writers
// won every race to the record (the upsert writes at the revision read).
func upsertRoute[I carrying[N], K, N, E, V any](s *Service, r *resource[K, N, E, V], op route) {
	o := r.operation(op, http.MethodPut, r.path+r.item, r.write, http.StatusConflict)
	o.MaxBodyBytes = cmp.Or(op.maxBody, s.bodyLimit())
	huma.Register(s.api, o, func(ctx context.Context, in *I) (*upserted[V], error) {
		var k K
		if named, ok := any(*in).(keyed[K]); ok {
			k = named.key()
		}
		created := false
		e, err := call(ctx, s, r, (*in).named(), k, op.timeout, func(ctx context.Context, st resourceStore[K, N, E], tenant string) (e E, err error) {
			e, created, err = st.(upserter[N, E]).Upsert(ctx, tenant, (*in).record(tenant))
			return e, err
		})
		if err != nil {
			return nil, err
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		return &upserted[V]{Status: status, Body: r.view(e)}, nil
	})
	put := s.api.OpenAPI().Paths[o.Path].Put
	replaced := put.Responses[strconv.Itoa(http.StatusOK)]
	replaced.Description = "Replaced: there was one under this id."
	put.Responses[strconv.Itoa(http.StatusCreated)] = &huma.Response{Description: "Created: there was none under this id.",
		Content: replaced.Content}
}

// saved is the handler that stores the request's record.
func saved[I carrying[N], C, K, N, E, V any](s *Service, r *resource[K, N, E, V], op route, show func(E) C) func(context.Context, *I) (*bodyOf[C], error) {
	return func(ctx context.Context, in *I) (*bodyOf[C], error) {
		var k K // a request that names its record says which in a problem
		if named, ok := any(*in).(keyed[K]); ok {
			k = named.key()
		}
		e, err := call(ctx, s, r, (*in).named(), k, op.timeout, func(ctx context.Context, st resourceStore[K, N, E], tenant string) (E, error) {
			return st.Put(ctx, tenant, (*in).record(tenant))
		})
		if err != nil {
			return nil, err
		}
		return &bodyOf[C]{Body: show(e)}, nil
	}
}

// deleteRoute registers DELETE path+item: the record the request names
// is removed, answered 204.
func deleteRoute[I keyed[K], K, N, E, V any](s *Service, r *resource[K, N, E, V], op route) {
	o := r.operation(op, http.MethodDelete, r.path+r.item, r.write, http.StatusNotFound)
	o.DefaultStatus = http.StatusNoContent
	huma.Register(s.api, o, func(ctx context.Context, in *I) (*struct{}, error) {
		k := (*in).key()
		_, err := call(ctx, s, r, (*in).named(), k, op.timeout, func(ctx context.Context, st resourceStore[K, N, E], tenant string) (struct{}, error) {
			return struct{}{}, st.Delete(ctx, tenant, k)
		})
		return nil, err
	})
}

// call runs fn against the store of the tenant the request manages
// (named, for an admin key), its round trips bounded by timeout, and
// answers its error as a problem.
func call[T, K, N, E, V any](ctx context.Context, s *Service, r *resource[K, N, E, V], named string, key K, timeout time.Duration,
	fn func(context.Context, resourceStore[K, N, E], string) (T, error)) (T, error) {
	var none T
	bound, tenant, err := s.managed(ctx, named, r.what)
	if err != nil {
		return none, err
	}
	st, err := r.store(bound)
	if err != nil {
		return none, err
	}
	cctx, cancel := context.WithTimeout(records.WithActor(ctx, actor(principal(ctx))), cmp.Or(timeout, natsTimeout))
	defer cancel()
	out, err := fn(cctx, st, tenant)
	if err != nil {
		return none, r.problem(ctx, s, tenant, key, err)
	}
	return out, nil
}

// actor is who p is in a record's audit trail: its key's public id, never
// the secret, marked an admin key's when it is one, for an admin acts on
// tenants not its own.
func actor(p Principal) string {
	if p.Admin {
		return "admin-key:" + p.KeyID
	}
	return "key:" + p.KeyID
}

// managed is the stores and the tenant whose things (what) the request
// manages: a tenant key's own, or the one an admin key names.
func (s *Service) managed(ctx context.Context, named, what string) (*stores, string, error) {
	st, err := s.ready()
	if err != nil {
		return nil, "", err
	}
	tenant, err := s.tenantOf(ctx, named)
	if err != nil {
		return nil, "", err
	}
	if !principal(ctx).Reaches(tenant) {
		return nil, "", huma.Error403Forbidden("this key manages tenant " + principal(ctx).Tenant + "'s " + what + " only")
	}
	return st, tenant, nil
}

// problem answers a store's error. One already a problem (an adapter's
// own answer) is answered as it is; the store's own trouble is logged for
// the operator and told the caller as a 503 that nothing was done.
func (r *resource[K, N, E, V]) problem(ctx context.Context, s *Service, tenant string, key K, err error) error {
	var answered huma.StatusError
	switch {
	case errors.As(err, &answered):
		return err
	case errors.Is(err, r.notFound):
		return huma.Error404NotFound(r.absent(tenant, key))
	case r.invalid != nil && errors.Is(err, r.invalid):
		return huma.Error422UnprocessableEntity(err.Error())
	case r.conflict != nil && errors.Is(err, r.conflict):
		return huma.Error409Conflict(err.Error())
	}
	if r.own != nil {
		if p := r.own(ctx, tenant, key, err); p != nil {
			return p
		}
	}
	s.cfg.Logger.WarnContext(ctx, r.what+" not read or written", "tenant", tenant, "error", err)
	return unavailable(r.broken)
}
