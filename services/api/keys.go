package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/tenant"
)

// APIKey is what is kept of an API key: never its secret.
type APIKey struct {
	ID       string    `json:"id" doc:"The key's public id, the part after hk_."`
	Tenant   string    `json:"tenant,omitempty" doc:"Empty for an admin key."`
	Name     string    `json:"name,omitempty"`
	Scopes   []string  `json:"scopes" doc:"send, read, or admin."`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used,omitzero" doc:"Updated at most once a minute."`
	Revoked  time.Time `json:"revoked,omitzero"`
}

// NewKey is a key to make: a tenant's, or an operator's (admin).
type NewKey struct {
	Tenant string   `json:"tenant,omitempty" doc:"The registered tenant the key belongs to; required unless admin."`
	Name   string   `json:"name,omitempty" maxLength:"200" doc:"What the key is for."`
	Scopes []string `json:"scopes,omitempty" doc:"send, read or both; defaults to both. An admin key has admin only."`
	Admin  bool     `json:"admin,omitempty" doc:"An operator key: every tenant, tenants and keys, the DLQ."`
}

// CreatedKey is a new key with its plaintext, shown this once: only its
// digest is kept.
type CreatedKey struct {
	Key string `json:"key" doc:"The key itself, hk_…: shown this once, store it now."`
	APIKey
}

// APIKeys are keys, oldest first, revoked ones included.
type APIKeys struct {
	Keys []APIKey `json:"keys"`
}

type listKeysInput struct {
	Tenant string `query:"tenant" doc:"Only this tenant's keys."`
}

type listKeysOutput struct{ Body APIKeys }

type createKeyInput struct{ Body NewKey }

type createKeyOutput struct {
	Status int
	Body   CreatedKey
}

type keyInput struct {
	ID string `path:"id"`
}

func registerKeys(s *Service) {
	errs := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable}
	huma.Register(s.api, huma.Operation{
		OperationID: "list-keys", Method: http.MethodGet, Path: "/v1/keys",
		Summary: "List API keys", Description: "Every key, or a tenant's, oldest first: never a secret.",
		Tags: []string{"Keys"}, Security: needs(ScopeAdmin), Errors: append(errs, http.StatusUnprocessableEntity),
	}, s.listKeys)
	huma.Register(s.api, huma.Operation{
		OperationID: "create-key", Method: http.MethodPost, Path: "/v1/keys",
		Summary: "Make an API key", Description: "Answers the key itself in key, this once.",
		Tags: []string{"Keys"}, DefaultStatus: http.StatusCreated, Security: needs(ScopeAdmin),
		MaxBodyBytes: s.bodyLimit(), Errors: append(errs, http.StatusUnprocessableEntity),
	}, s.createKey)
	huma.Register(s.api, huma.Operation{
		OperationID: "revoke-key", Method: http.MethodDelete, Path: "/v1/keys/{id}",
		Summary: "Revoke an API key", Description: "Every replica refuses it within seconds. Revoking a revoked key does nothing.",
		Tags: []string{"Keys"}, DefaultStatus: http.StatusNoContent, Security: needs(ScopeAdmin),
		Errors: append(errs, http.StatusNotFound),
	}, s.revokeKey)
}

func (s *Service) listKeys(ctx context.Context, in *listKeysInput) (*listKeysOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	if in.Tenant != "" && !event.ValidTenant(in.Tenant) {
		return nil, huma.Error422UnprocessableEntity("tenant: " + in.Tenant + " is not a tenant id")
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	list, err := st.keys.List(cctx, in.Tenant)
	if err != nil {
		return nil, s.keysUnavailable(ctx, err)
	}
	out := &listKeysOutput{Body: APIKeys{Keys: make([]APIKey, len(list))}}
	for i, k := range list {
		out.Body.Keys[i] = keyOf(k)
	}
	return out, nil
}

func (s *Service) createKey(ctx context.Context, in *createKeyInput) (*createKeyOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	spec := apikey.Spec{Tenant: in.Body.Tenant, Name: in.Body.Name, Admin: in.Body.Admin}
	for _, sc := range in.Body.Scopes {
		spec.Scopes = append(spec.Scopes, apikey.Scope(sc))
	}
	if err := registered(cctx, st, spec); err != nil {
		return nil, s.tenantsError(ctx, err)
	}
	plain, key, err := st.keys.Create(cctx, spec)
	if errors.Is(err, apikey.ErrBadSpec) {
		return nil, huma.Error422UnprocessableEntity(err.Error())
	}
	if err != nil {
		return nil, s.keysUnavailable(ctx, err)
	}
	return &createKeyOutput{Status: http.StatusCreated, Body: CreatedKey{Key: plain, APIKey: keyOf(key)}}, nil
}

// registered checks that a tenant key's tenant is registered, as `herald
// keys create` does; a tenant that is not is the body's mistake (422).
// A spec the store refuses anyway gets the store's words.
func registered(ctx context.Context, st *stores, spec apikey.Spec) error {
	if spec.Admin || !event.ValidTenant(spec.Tenant) {
		return nil
	}
	_, err := st.tenants.Get(ctx, spec.Tenant)
	if errors.Is(err, tenant.ErrNotFound) {
		return &tenant.ValidationError{Problems: []string{"tenant: " + err.Error() + " (register it first: POST /v1/tenants)"}}
	}
	return err
}

func (s *Service) revokeKey(ctx context.Context, in *keyInput) (*struct{}, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	err = st.keys.Revoke(cctx, in.ID)
	if errors.Is(err, apikey.ErrNotFound) {
		return nil, huma.Error404NotFound("no API key " + in.ID)
	}
	if err != nil {
		return nil, s.keysUnavailable(ctx, err)
	}
	return nil, nil
}

func (s *Service) keysUnavailable(ctx context.Context, err error) error {
	s.cfg.Logger.WarnContext(ctx, "API keys unavailable", "error", err)
	return unavailable("the API keys cannot be read right now")
}

func keyOf(k apikey.Key) APIKey {
	out := APIKey{ID: k.ID, Tenant: k.Tenant, Name: k.Name, Scopes: make([]string, len(k.Scopes)), Created: k.Created,
		LastUsed: k.LastUsed, Revoked: k.Revoked}
	for i, sc := range k.Scopes {
		out.Scopes[i] = string(sc)
	}
	return out
}
