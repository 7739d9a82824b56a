package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// A resource's PATCH is a JSON merge patch (RFC 7396) on the record as its
// PUT body writes it: a member present replaces, null removes, an object
// is merged member by member (free data included). The store applies it
// to the record as read and writes at that revision (resource.Store.Patch),
// so two PATCHes at once never lose one another's change.

// patchable is a resource store that edits a record in place: it reads
// the one key names, hands edit its PUT form B, and stores what edit left
// at the revision read.
type patchable[K, B, E any] interface {
	Patch(ctx context.Context, tenant string, key K, edit func(*B) error) (E, error)
}

// patching is a request that names a record and carries a merge patch.
type patching[K any] interface {
	keyed[K]
	patch() []byte
}

// mergePatchType is the media type of RFC 7396.
const mergePatchType = "application/merge-patch+json"

// patchRoute registers PATCH path+item: the record the request names,
// changed by its merge patch, answered as it then is. body is the PUT
// body's type, B, which the OpenAPI document shows the patch as.
func patchRoute[I patching[K], B, K, N, E, V any](s *Service, r *resource[K, N, E, V], op route) {
	o := r.operation(op, http.MethodPatch, r.path+r.item, r.write, http.StatusNotFound, http.StatusConflict)
	o.MaxBodyBytes = s.bodyLimit()
	huma.Register(s.api, o, func(ctx context.Context, in *I) (*bodyOf[V], error) {
		k := (*in).key()
		e, err := call(ctx, s, r, (*in).named(), k, op.timeout, func(ctx context.Context, st resourceStore[K, N, E], tenant string) (E, error) {
			p, ok := st.(patchable[K, B, E])
			if !ok {
				var none E
				return none, fmt.Errorf("api: the %s store cannot be patched", r.what)
			}
			return p.Patch(ctx, tenant, k, merged[B]((*in).patch()))
		})
		if err != nil {
			return nil, err
		}
		return &bodyOf[V]{Body: r.view(e)}, nil
	})
	schema := s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[B](), true, "")
	s.api.OpenAPI().Paths[o.Path].Patch.RequestBody.Content = map[string]*huma.MediaType{
		mergePatchType: {Schema: schema}, "application/json": {Schema: schema}}
}

// merged is the edit that lays patch over a record's PUT form b: the
// result must still decode as a B, no member unknown to it.
func merged[B any](patch []byte) func(*B) error {
	return func(b *B) error {
		doc, err := json.Marshal(b)
		if err != nil {
			return err
		}
		out, err := mergePatch(doc, patch)
		if err != nil {
			return err
		}
		var next B
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&next); err != nil {
			return huma.Error422UnprocessableEntity("the patch does not make a valid record: " + err.Error())
		}
		*b = next
		return nil
	}
}

var errNotObject = huma.Error422UnprocessableEntity("a merge patch is a JSON object: {\"email\": \"new@example.com\", \"phone\": null}")

// mergePatch is target with patch applied as RFC 7396 says; numbers and
// strings it does not touch are kept byte for byte.
func mergePatch(target, patch []byte) ([]byte, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(patch, &p); err != nil || p == nil {
		return nil, errNotObject
	}
	return mergeObject(target, p)
}

func mergeObject(target []byte, patch map[string]json.RawMessage) ([]byte, error) {
	var t map[string]json.RawMessage
	if json.Unmarshal(target, &t) != nil || t == nil {
		t = map[string]json.RawMessage{} // not an object: replaced by one
	}
	for k, v := range patch {
		var inner map[string]json.RawMessage
		switch {
		case bytes.Equal(bytes.TrimSpace(v), []byte("null")):
			delete(t, k)
		case json.Unmarshal(v, &inner) == nil && inner != nil:
			m, err := mergeObject(t[k], inner)
			if err != nil {
				return nil, err
			}
			t[k] = m
		default:
			t[k] = v
		}
	}
	out, err := json.Marshal(t)
	if err != nil {
		return nil, errors.Join(errNotObject, err)
	}
	return out, nil
}
