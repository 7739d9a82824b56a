package api

import (
	"context"
	"errors"
	"slices"

	"github.com/heraldhq/herald/shared/apikey"
)

// StoredKeys is the Authenticator over the API keys of the bucket api_keys
// (herald keys): each key is answered from the apikey.Authenticator's
// memory, kept current by its watch. A key that opens nothing is
// ErrInvalidKey (401); any other failure, a 503.
type StoredKeys struct{ Keys *apikey.Authenticator }

// Authenticate implements Authenticator.
func (k StoredKeys) Authenticate(ctx context.Context, presented string) (Principal, error) {
	return principalOf(k.Keys.Authenticate(ctx, presented))
}

// Active is the principal of the key with this id while it is live: the
// console asks it before each request of a session opened with the key, so
// the session ends when the watch brings the key's revocation. A revoked
// or unknown key is ErrInvalidKey; keys that cannot be checked, any other
// error.
func (k StoredKeys) Active(ctx context.Context, id string) (Principal, error) {
	return principalOf(k.Keys.Active(ctx, id))
}

func principalOf(key apikey.Key, err error) (Principal, error) {
	if errors.Is(err, apikey.ErrUnauthorized) {
		return Principal{}, ErrInvalidKey
	}
	if err != nil {
		return Principal{}, err
	}
	p := Principal{KeyID: key.ID, Tenant: key.Tenant, Admin: key.Allows(apikey.Admin), Observer: slices.Contains(key.Scopes, apikey.Observe)}
	for _, s := range key.Scopes {
		p.Scopes = append(p.Scopes, string(s))
	}
	return p, nil
}
