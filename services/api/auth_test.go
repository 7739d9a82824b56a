package api_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/apikey"
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

// The API's stored keys, followed over a connection of their own that the
// test closes for good: the Authenticator no longer hears of revocations.
// A valid key is then told to come back (503, Retry-After, a problem
// document), not that it is bad — a client drops a key it got a 401 for —
// and an unknown key gets the same answer, so nothing is told about keys.
func TestValidKeysAreA503WhenTheKeysCannotBeFollowed(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	nc, err := nats.Connect(n.Server.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	store, err := apikey.Open(ctx, js)
	require.NoError(t, err)
	plain, _, err := store.Create(ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	auth, err := apikey.NewAuthenticator(store, apikey.AuthConfig{})
	require.NoError(t, err)
	require.NoError(t, auth.Start(ctx))
	t.Cleanup(auth.Stop)
	b := serveWith(t, n, api.Config{Authenticator: api.StoredKeys{Keys: auth}})
	heraldtest.RegisterTenants(t, n.JS, "acme")
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/tenants/acme", plain, nil).status)

	nc.Close()
	require.Eventually(t, func() bool {
		return b.do(t, http.MethodGet, "/v1/tenants/acme", plain, nil).status != http.StatusOK
	}, 10*time.Second, 10*time.Millisecond)
	_, secret, _ := strings.Cut(strings.TrimPrefix(plain, "hk_"), "_")
	for name, key := range map[string]string{"a valid key": plain, "an unknown key": "hk_aaaaaaaaaaaa_" + secret} {
		got := b.do(t, http.MethodGet, "/v1/tenants/acme", key, nil)
		require.Equal(t, http.StatusServiceUnavailable, got.status, "%s: %s", name, got.body)
		require.Equal(t, "5", got.header.Get("Retry-After"), name)
		require.Equal(t, "application/problem+json", got.header.Get("Content-Type"), name)
		require.Equal(t, "503", jsonField(t, got.body, "status"), name)
		require.Contains(t, jsonField(t, got.body, "detail"), "API keys cannot be read right now", name)
		require.Empty(t, got.header.Get("WWW-Authenticate"), "%s: not a challenge to send another key", name)
		require.NotContains(t, got.body, secret, name)
	}
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
