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
