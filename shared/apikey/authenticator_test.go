package apikey_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// clock is a fake clock a test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// startAuthenticator starts an Authenticator that stops when the test ends.
func startAuthenticator(t testing.TB, b testBundle, cfg apikey.AuthConfig) *apikey.Authenticator {
	t.Helper()
	a, err := apikey.NewAuthenticator(b.keys, cfg)
	require.NoError(t, err)
	// Its watch outlives the context it starts with.
	ctx, cancel := context.WithCancel(b.ctx)
	require.NoError(t, a.Start(ctx))
	cancel()
	t.Cleanup(a.Stop)
	return a
}

// secondReplica is another process's view of the same bucket: a
// connection of its own.
func secondReplica(t *testing.T, url string) testBundle {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return bundle(t, js)
}

const (
	soon = 5 * time.Second
	tick = 10 * time.Millisecond
)

func TestAuthConfigValidate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for want, cfg := range map[string]apikey.AuthConfig{
		"last_used_every: -1s is negative": {LastUsedEvery: -time.Second},
		"last_used_queue: -1 is negative":  {LastUsedQueue: -1},
		"write_timeout: -1ms is negative":  {WriteTimeout: -time.Millisecond},
	} {
		_, err := apikey.NewAuthenticator(b.keys, cfg)
		require.ErrorContains(t, err, want)
	}
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	plain, created, err := b.keys.Create(b.ctx, apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send}})
	require.NoError(t, err)
	auth := startAuthenticator(t, b, apikey.AuthConfig{})

	key, err := auth.Authenticate(b.ctx, plain)
	require.NoError(t, err)
	require.Equal(t, created.ID, key.ID)
	require.Equal(t, "acme", key.Tenant)
	require.True(t, key.Allows(apikey.Send))
	require.False(t, key.Allows(apikey.Read))

	id, secret, _ := strings.Cut(strings.TrimPrefix(plain, "hk_"), "_")
	other, _, err := b.keys.Create(b.ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	_, otherSecret, _ := strings.Cut(strings.TrimPrefix(other, "hk_"), "_")
	for name, presented := range map[string]string{
		"another key's secret": "hk_" + id + "_" + otherSecret,
		"a flipped character":  plain[:len(plain)-2] + flip(plain[len(plain)-2]) + plain[len(plain)-1:],
		"unknown id":           "hk_aaaaaaaaaaaa_" + secret,
		"malformed":            plain + "x",
		"empty":                "",
	} {
		_, err := auth.Authenticate(b.ctx, presented)
		require.ErrorIs(t, err, apikey.ErrUnauthorized, name)
		require.Equal(t, apikey.ErrUnauthorized.Error(), err.Error(), "%s: one answer for every refusal", name)
		require.NotContains(t, err.Error(), secret, name)
	}
}

// flip is another character of the alphabet.
func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

// A key created or revoked through one replica's store is known or
// refused by every other replica's Authenticator within moments.
func TestNewAndRevokedKeysReachEveryReplica(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	b := bundle(t, n.JS)
	plain, key, err := b.keys.Create(b.ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	here := startAuthenticator(t, b, apikey.AuthConfig{})
	there := startAuthenticator(t, secondReplica(t, n.Server.URL()), apikey.AuthConfig{})
	for _, a := range []*apikey.Authenticator{here, there} {
		_, err := a.Authenticate(b.ctx, plain)
		require.NoError(t, err, "known when started")
	}

	later, _, err := b.keys.Create(b.ctx, apikey.Spec{Tenant: "globex"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		k, err := there.Authenticate(b.ctx, later)
		return err == nil && k.Tenant == "globex"
	}, soon, tick, "a key created after the start")

	active, err := there.Active(b.ctx, key.ID)
	require.NoError(t, err)
	require.Equal(t, key.ID, active.ID)
	require.NoError(t, b.keys.Revoke(b.ctx, key.ID))
	for name, a := range map[string]*apikey.Authenticator{"this replica": here, "another replica": there} {
		require.Eventually(t, func() bool {
			_, err := a.Authenticate(b.ctx, plain)
			return err == apikey.ErrUnauthorized
		}, soon, tick, "%s still takes a revoked key", name)
		_, err := a.Active(b.ctx, key.ID)
		require.Equal(t, apikey.ErrUnauthorized, err, "%s: a revoked key is no longer active", name)
	}
	_, err = there.Authenticate(b.ctx, later)
	require.NoError(t, err, "other keys still work")

	there.Stop()
	_, err = there.Authenticate(b.ctx, later)
	require.ErrorIs(t, err, apikey.ErrUnavailable, "stopped, it hears of no revocation, so it takes nothing")
}

// storedLastUse reads the key's record as the bucket has it.
func storedLastUse(t *testing.T, b testBundle, id string) (time.Time, uint64) {
	t.Helper()
	e, err := b.kv.Get(b.ctx, id)
	require.NoError(t, err)
	var r struct {
		LastUsed time.Time `json:"last_used"`
	}
	require.NoError(t, json.Unmarshal(e.Value(), &r))
	return r.LastUsed, e.Revision()
}

func TestLastUseIsWrittenAtMostOncePerMinute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	plain, key, err := b.keys.Create(b.ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	_, created := storedLastUse(t, b, key.ID)
	c := &clock{now: t0}
	auth := startAuthenticator(t, b, apikey.AuthConfig{Now: c.Now})

	first, err := auth.Authenticate(b.ctx, plain)
	require.NoError(t, err)
	require.True(t, first.LastUsed.IsZero(), "never used before")
	// The write comes back through the watch: then the key shows it.
	require.Eventually(t, func() bool {
		k, err := auth.Authenticate(b.ctx, plain)
		return err == nil && k.LastUsed.Equal(t0)
	}, soon, tick)

	c.Add(59 * time.Second)
	_, err = auth.Authenticate(b.ctx, plain)
	require.NoError(t, err)
	c.Add(2 * time.Second)
	_, err = auth.Authenticate(b.ctx, plain)
	require.NoError(t, err)
	auth.Stop() // writes what is queued

	lastUsed, rev := storedLastUse(t, b, key.ID)
	require.Equal(t, t0.Add(61*time.Second), lastUsed)
	require.Equal(t, created+2, rev, "written at 0 s and 61 s, not at every request nor at 59 s")
	got, err := b.keys.Get(b.ctx, key.ID)
	require.NoError(t, err)
	require.Equal(t, t0.Add(61*time.Second), got.LastUsed)
}

// Two replicas that see a key used at the same moment write it once.
func TestReplicasWriteALastUseOnce(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	b := bundle(t, n.JS)
	plain, key, err := b.keys.Create(b.ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	_, created := storedLastUse(t, b, key.ID)
	c := &clock{now: t0}
	here := startAuthenticator(t, b, apikey.AuthConfig{Now: c.Now})
	there := startAuthenticator(t, secondReplica(t, n.Server.URL()), apikey.AuthConfig{Now: c.Now})

	for _, a := range []*apikey.Authenticator{here, there} {
		_, err := a.Authenticate(b.ctx, plain)
		require.NoError(t, err)
	}
	here.Stop()
	there.Stop()
	lastUsed, rev := storedLastUse(t, b, key.ID)
	require.Equal(t, t0, lastUsed)
	require.Equal(t, created+1, rev)
}

// The hot path, a key already known: no round trip, one SHA-256.
//
//	go test -run '^$' -bench Authenticate ./shared/apikey
func BenchmarkAuthenticate(b *testing.B) {
	tb := setup(b)
	var plain string
	for i := range 100 {
		key, _, err := tb.keys.Create(tb.ctx, apikey.Spec{Tenant: fmt.Sprintf("tenant-%d", i)})
		require.NoError(b, err)
		plain = key
	}
	auth := startAuthenticator(b, tb, apikey.AuthConfig{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := auth.Authenticate(tb.ctx, plain); err != nil {
			b.Fatal(err)
		}
	}
}

// An Authenticator whose connection is closed would not hear of a
// revocation: it takes no key, and says it cannot check them rather than
// that they are bad — whether the key exists or not, so nothing is told.
// A malformed key is still refused as such: it can never be good.
func TestAClosedConnectionMakesEveryKeyUnavailable(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	b := bundle(t, n.JS)
	plain, key, err := b.keys.Create(b.ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	replica := secondReplica(t, n.Server.URL())
	auth := startAuthenticator(t, replica, apikey.AuthConfig{})
	_, err = auth.Authenticate(b.ctx, plain)
	require.NoError(t, err)

	replica.js.Conn().Close()
	require.Eventually(t, func() bool {
		_, err := auth.Authenticate(b.ctx, plain)
		return err == apikey.ErrUnavailable
	}, soon, tick)
	_, secret, _ := strings.Cut(strings.TrimPrefix(plain, "hk_"), "_")
	_, err = auth.Authenticate(b.ctx, "hk_aaaaaaaaaaaa_"+secret)
	require.Equal(t, apikey.ErrUnavailable, err, "an unknown key answers as a known one")
	_, err = auth.Active(b.ctx, key.ID)
	require.Equal(t, apikey.ErrUnavailable, err)
	_, err = auth.Authenticate(b.ctx, plain+"x")
	require.Equal(t, apikey.ErrUnauthorized, err, "malformed")
}

// With the bucket out of reach, requests are still answered at once: the
// uses they would record wait in a bounded queue, or are not recorded.
func TestAUseNeverWaitsForTheBucket(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	b := bundle(t, n.JS)
	plain, _, err := b.keys.Create(b.ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	c := &clock{now: t0}
	auth := startAuthenticator(t, b, apikey.AuthConfig{Now: c.Now, LastUsedQueue: 1, WriteTimeout: 500 * time.Millisecond})

	n.Server.Shutdown()
	answered := make(chan error, 1)
	go func() {
		for range 200 {
			c.Add(time.Minute) // every request has a use to record
			if _, err := auth.Authenticate(b.ctx, plain); err != nil {
				answered <- err
				return
			}
		}
		answered <- nil
	}()
	select {
	case err := <-answered:
		require.NoError(t, err)
	case <-time.After(soon):
		t.Fatal("requests waited for last-use writes")
	}
	auth.Stop()
}

// Start gives up when its context ends, leaving nothing running.
func TestStartGivesUpWithItsContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	auth, err := apikey.NewAuthenticator(b.keys, apikey.AuthConfig{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	require.ErrorIs(t, auth.Start(ctx), context.Canceled)
	auth.Stop()
}

// A record the store would not have written — a tenant key given the
// admin scope by hand, say — is refused, as is one that does not decode.
func TestRecordsNotAsMadeAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tampered, key, err := b.keys.Create(b.ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	garbled, other, err := b.keys.Create(b.ctx, apikey.Spec{Tenant: "acme"})
	require.NoError(t, err)
	auth := startAuthenticator(t, b, apikey.AuthConfig{})
	for _, plain := range []string{tampered, garbled} {
		_, err := auth.Authenticate(b.ctx, plain)
		require.NoError(t, err)
	}

	e, err := b.kv.Get(b.ctx, key.ID)
	require.NoError(t, err)
	var r map[string]any
	require.NoError(t, json.Unmarshal(e.Value(), &r))
	r["scopes"] = []string{"send", "read", "admin"}
	raw, err := json.Marshal(r)
	require.NoError(t, err)
	_, err = b.kv.Put(b.ctx, key.ID, raw)
	require.NoError(t, err)
	_, err = b.kv.Put(b.ctx, other.ID, []byte(`{"id":`))
	require.NoError(t, err)

	for _, plain := range []string{tampered, garbled} {
		require.Eventually(t, func() bool {
			_, err := auth.Authenticate(b.ctx, plain)
			return err == apikey.ErrUnauthorized
		}, soon, tick)
	}
}
