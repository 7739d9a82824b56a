package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// Scopes an API key may hold.
const (
	// ScopeSend: publish events and notifications.
	ScopeSend = "send"
	// ScopeRead: read notifications and lists.
	ScopeRead = "read"
	// ScopeAdmin: every tenant, tenants and keys, the DLQ.
	ScopeAdmin = "admin"
)

// Principal is who an API key speaks for.
type Principal struct {
	// KeyID is the key's public id, safe to log.
	KeyID string
	// Tenant is the tenant the key belongs to; empty for an admin key.
	Tenant string
	// Scopes are what the key may do.
	Scopes []string
	// Admin keys reach every tenant and hold every scope.
	Admin bool
	// Observer keys are operators' read-only keys for the console; the
	// API refuses them.
	Observer bool
}

// Can reports whether the principal holds scope.
func (p Principal) Can(scope string) bool { return p.Admin || slices.Contains(p.Scopes, scope) }

// Reaches reports whether the principal may see tenant's data.
func (p Principal) Reaches(tenant string) bool {
	return p.Admin || (p.Tenant != "" && p.Tenant == tenant)
}

// Authenticator turns an API key, exactly as the caller sent it, into the
// principal it speaks for. An unknown, malformed or revoked key is an error
// wrapping ErrInvalidKey (401); any other error means the keys could not be
// read (503).
type Authenticator interface {
	Authenticate(ctx context.Context, key string) (Principal, error)
}

// ErrInvalidKey is what an Authenticator wraps for a key that opens nothing.
var ErrInvalidKey = errors.New("invalid API key")

// bearer is the OpenAPI security scheme every protected route names, with
// the scope it needs.
const bearer = "bearer"

// needs is the security requirement of a route that needs scope.
func needs(scope string) []map[string][]string {
	return []map[string][]string{{bearer: {scope}}}
}

type principalKey struct{}

// principal is the caller of a protected route, as authenticate found it.
func principal(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// authenticate is the middleware that admits a request to a route that
// names a scope in its security requirement: no key or a bad key is 401, a
// key without the scope 403. The key itself is never logged or repeated.
func (s *Service) authenticate(ctx huma.Context, next func(huma.Context)) {
	scope := requiredScope(ctx.Operation())
	if scope == "" {
		next(ctx)
		return
	}
	key, ok := bearerToken(ctx.Header("Authorization"))
	if !ok {
		s.refuse(ctx, "missing", http.StatusUnauthorized, "an API key is required: send Authorization: Bearer <key>")
		return
	}
	p, err := s.cfg.Authenticator.Authenticate(ctx.Context(), key)
	switch {
	case errors.Is(err, ErrInvalidKey):
		s.refuse(ctx, "invalid", http.StatusUnauthorized, "the API key is not valid (unknown, malformed or revoked)")
		return
	case err != nil:
		s.cfg.Logger.WarnContext(ctx.Context(), "API keys unavailable", "error", err)
		s.writeUnavailable(ctx, "API keys cannot be read right now")
		return
	}
	noteTenant(ctx.Context(), p.Tenant)
	if p.Observer {
		s.refuse(ctx, "scope", http.StatusForbidden, "an observer key opens the console only, not the API")
		return
	}
	if !p.Can(scope) {
		s.refuse(ctx, "scope", http.StatusForbidden, "the API key lacks the scope "+scope+" this route needs")
		return
	}
	next(huma.WithValue(ctx, principalKey{}, p))
}

// refuse answers an authentication failure and counts it by reason.
func (s *Service) refuse(ctx huma.Context, reason string, status int, detail string) {
	s.metrics.authFailure(ctx.Context(), reason)
	if status == http.StatusUnauthorized {
		ctx.SetHeader("WWW-Authenticate", `Bearer realm="herald"`)
	}
	_ = huma.WriteErr(s.api, ctx, status, detail)
}

func requiredScope(op *huma.Operation) string {
	for _, req := range op.Security {
		if scopes := req[bearer]; len(scopes) > 0 {
			return scopes[0]
		}
	}
	return ""
}

// bearerToken is the credentials of an Authorization: Bearer header; the
// scheme is case-insensitive (RFC 9110).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}
