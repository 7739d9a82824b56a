package api

import (
	"context"
	"net/http"
	"regexp"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	records "github.com/heraldhq/herald/shared/resource"
)

// A resource a tenant may have many of (accounts, topics, a topic's
// members) is listed a page at a time, in key order: the answer's
// next_cursor, passed as cursor=, is where the next page starts. A cursor
// is the last record's key less the part the listing is under (the
// tenant's, the topic's): opaque to the caller, and unable to reach
// another tenant's records, for the listing reads only keys under its own.

// PageQuery is a listing's paging.
type PageQuery struct {
	Cursor string `query:"cursor" maxLength:"512" doc:"next_cursor of the page before; absent for the first page."`
	Limit  int    `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"At most this many."`
}

// page is the store's page the query asks for, under prefix (with its
// trailing dot), or a 422 naming the cursor.
func (q PageQuery) page(prefix string) (records.Page, error) {
	if q.Cursor == "" {
		return records.Page{Limit: q.Limit}, nil
	}
	if !cursorPattern.MatchString(q.Cursor) {
		return records.Page{}, huma.Error422UnprocessableEntity("cursor: not one a listing gave")
	}
	return records.Page{After: prefix + q.Cursor, Limit: q.Limit}, nil
}

// cursorPattern is what a key's tokens after a prefix may be.
var cursorPattern = regexp.MustCompile(`^[-/_=A-Za-z0-9]+(\.[-/_=A-Za-z0-9]+)*$`)

// cursorOf is the cursor of a page whose last key is next, under prefix;
// "" after the last page.
func cursorOf(prefix, next string) string { return strings.TrimPrefix(next, prefix) }

// paged is a listing's request: the tenant (for an admin key), the record
// the listing is of (a topic, for its members; none for the tenant's own)
// and its paging.
type paged[K any] interface {
	keyed[K]
	paging() PageQuery
}

// pageOf is one page of M and the key the next page starts after.
type pageOf[M any] struct {
	items []M
	next  string
}

// pagedRoute registers GET path+sub: a page of what list reads for the
// tenant (of the record key names: a topic's members), whose keys are
// under prefix, in the envelope L that envelope makes of the items as
// view shows them and the next cursor.
func pagedRoute[I paged[K], M, W, L, K, N, E, V any](s *Service, r *resource[K, N, E, V], op route, sub string,
	prefix func(tenant string, key K) string,
	list func(st resourceStore[K, N, E], ctx context.Context, tenant string, key K, p records.Page) ([]M, string, error),
	view func(M) W, envelope func(items []W, next string) L) {
	o := r.operation(op, http.MethodGet, r.path+sub, r.read)
	if sub != "" {
		o.Errors = append(o.Errors, http.StatusNotFound)
	}
	huma.Register(s.api, o, func(ctx context.Context, in *I) (*bodyOf[L], error) {
		k := (*in).key()
		got, err := call(ctx, s, r, (*in).named(), k, op.timeout, func(ctx context.Context, st resourceStore[K, N, E], tenant string) (pageOf[M], error) {
			under := prefix(tenant, k) + "."
			p, err := (*in).paging().page(under)
			if err != nil {
				return pageOf[M]{}, err
			}
			items, next, err := list(st, ctx, tenant, k, p)
			return pageOf[M]{items: items, next: cursorOf(under, next)}, err
		})
		if err != nil {
			return nil, err
		}
		views := make([]W, len(got.items))
		for i, m := range got.items {
			views[i] = view(m)
		}
		return &bodyOf[L]{Body: envelope(views, got.next)}, nil
	})
}
