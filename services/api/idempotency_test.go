package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
)

// clock is a fake clock for claims.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestAClaimHoldsItsKeyUntilDoneReleasedOrAbandoned(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	kv, err := n.JS.KeyValue(ctx, IdempotencyBucket)
	require.NoError(t, err)
	clk := &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	s := &idempotency{kv: kv, ttl: 24 * time.Hour, now: clk.now}

	c, prev, err := s.claim(ctx, "acme", "k1", "request A")
	require.NoError(t, err)
	require.Nil(t, prev)
	_, _, err = s.claim(ctx, "acme", "k1", "request A")
	require.ErrorIs(t, err, errInProgress, "in flight")
	_, _, err = s.claim(ctx, "globex", "k1", "request A")
	require.NoError(t, err, "another tenant's key of the same name")

	require.NoError(t, c.release(ctx))
	c, _, err = s.claim(ctx, "acme", "k1", "request A")
	require.NoError(t, err, "released: free again")

	require.NoError(t, c.done(ctx, http.StatusAccepted, map[string]int{"sequence": 7}))
	_, prev, err = s.claim(ctx, "acme", "k1", "request A")
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, prev.Status)
	require.JSONEq(t, `{"sequence":7}`, string(prev.Answer))
	_, _, err = s.claim(ctx, "acme", "k1", "request B")
	require.ErrorIs(t, err, errKeyReused)

	clk.t = clk.t.Add(24 * time.Hour)
	_, prev, err = s.claim(ctx, "acme", "k1", "request B")
	require.NoError(t, err, "after the TTL the key is free, even if the bucket still holds it")
	require.Nil(t, prev)

	_, _, err = s.claim(ctx, "acme", "k2", "request A")
	require.NoError(t, err)
	clk.t = clk.t.Add(claimExpiry - time.Second)
	_, _, err = s.claim(ctx, "acme", "k2", "request A")
	require.ErrorIs(t, err, errInProgress)
	clk.t = clk.t.Add(time.Second)
	_, prev, err = s.claim(ctx, "acme", "k2", "request A")
	require.NoError(t, err, "a claim its process abandoned is taken over")
	require.Nil(t, prev)
}

// Over HTTP, a request whose key is held by one in flight is a 409 that
// publishes nothing.
func TestAKeyInFlightIsA409(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	s, err := New(n.JS, Config{Authenticator: fixedKey{}})
	require.NoError(t, err)
	require.NoError(t, s.Start(ctx))
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	body, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	_, _, err = s.stores.Load().idempotency.claim(ctx, "acme", "evt-2026-11-30-0001", requestHash(eventsRoute, body))
	require.NoError(t, err)

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/events", strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer k")
	resp, err := heraldtest.HTTPClient(t).Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "ORDERS"))
}

// fixedKey admits any key as acme's sender.
type fixedKey struct{}

func (fixedKey) Authenticate(context.Context, string) (Principal, error) {
	return Principal{KeyID: "k", Tenant: "acme", Scopes: []string{ScopeSend}}, nil
}
