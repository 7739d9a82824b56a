package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// startStoredKeys makes a send key for acme in the bucket and an
// Authenticator that knows it.
func startStoredKeys(b *testing.B, n *heraldtest.NATS) (api.StoredKeys, string) {
	b.Helper()
	ctx := heraldtest.Context(b)
	keys, err := apikey.Open(ctx, n.JS)
	require.NoError(b, err)
	plain, _, err := keys.Create(ctx, apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send}})
	require.NoError(b, err)
	auth, err := apikey.NewAuthenticator(keys, apikey.AuthConfig{})
	require.NoError(b, err)
	require.NoError(b, auth.Start(ctx)) // returns once every key is loaded
	b.Cleanup(auth.Stop)
	return api.StoredKeys{Keys: auth}, plain
}

// BenchmarkPostEvents publishes the sample order, each time as a new event
// under a new Idempotency-Key, over real HTTP with a stored API key: the
// whole request — authentication, strict decoding, the idempotency claim
// and record, the publish and its ack — on a real JetStream.
func BenchmarkPostEvents(b *testing.B) {
	n := heraldtest.StartNATSWithStreams(b)
	auth, key := startStoredKeys(b, n)
	svc, err := api.New(n.JS, api.Config{Authenticator: auth})
	require.NoError(b, err)
	require.NoError(b, svc.Start(heraldtest.Context(b)))
	b.Cleanup(func() { require.NoError(b, svc.Stop(context.Background())) })
	srv := httptest.NewServer(svc.Handler())
	b.Cleanup(srv.Close)
	const clients = 8 // goroutines per core: callers waiting on JetStream's acks
	b.SetParallelism(clients)
	transport := &http.Transport{MaxIdleConnsPerHost: clients * 4}
	b.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}
	order, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(b, err)
	require.Equal(b, 1, bytes.Count(order, []byte(`"evt-2026-11-30-0001"`)))

	var (
		next      atomic.Int64
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, b.N)
	)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			i := next.Add(1)
			body := bytes.Replace(order, []byte(`"evt-2026-11-30-0001"`), fmt.Appendf(nil, `"evt-bench-%d"`, i), 1)
			start := time.Now()
			status, err := post(client, srv.URL, key, fmt.Sprintf("bench-%d", i), body)
			mine = append(mine, time.Since(start))
			if err != nil || status != http.StatusAccepted {
				b.Errorf("request %d: status %d, error %v", i, status, err)
				return
			}
		}
		mu.Lock()
		latencies = append(latencies, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	slices.Sort(latencies)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(percentile(latencies, 0.50).Seconds()*1000, "p50-ms")
	b.ReportMetric(percentile(latencies, 0.99).Seconds()*1000, "p99-ms")
}

// post sends one event and reads the answer to its end, so the connection
// is reused.
func post(client *http.Client, url, key, idempotencyKey string, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/events", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/cloudevents+json")
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Idempotency-Key", idempotencyKey)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var drained bytes.Buffer
	_, err = drained.ReadFrom(resp.Body)
	return resp.StatusCode, err
}

// percentile is the duration below which the share p of sorted lies.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}
