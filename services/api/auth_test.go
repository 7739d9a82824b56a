package api_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// keysDown is an Authenticator whose keys cannot be read.
type keysDown struct{}

func (keysDown) Authenticate(context.Context, string) (api.Principal, error) {
	return api.Principal{}, errors.New("bucket api_keys: nats: timeout")
}

// Keys that cannot be read are the server's trouble, not the caller's: 503
// with Retry-After, not 401, and nothing published.
func TestUnreadableKeysAreA503(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	b := serveWith(t, n, api.Config{Authenticator: keysDown{}})
	got := b.do(t, http.MethodPost, "/v1/events", acmeSend, sampleOrder(t))
	require.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
	require.Equal(t, "5", got.header.Get("Retry-After"))
	require.NotContains(t, got.body, "nats: timeout", "internal errors stay in the log")
	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "ORDERS"))
}

// An observer key is the console's read-only role: the API, whose routes
// are for tenants and administrators, refuses it on every route — reading
// a list with it must not fall through to "every tenant".
func TestAnObserverKeyOpensNoRoute(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	const observer = "hk_observer1_look"
	b := serveWith(t, n, api.Config{Authenticator: keys{observer: {KeyID: "observer1", Observer: true, Scopes: []string{"observe"}}}})
	for _, path := range []string{"/v1/notifications", "/v1/dlq", "/v1/tenants"} {
		got := b.do(t, http.MethodGet, path, observer, nil)
		require.Equal(t, http.StatusForbidden, got.status, path)
		require.Contains(t, got.body, "an observer key opens the console only", path)
	}
}
