package api_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/inbox"
	"github.com/heraldhq/herald/shared/tenant"
)

// inboxBench serves the API with the inbox on, acme registered with its
// page's origin, over real HTTP on a real JetStream.
type inboxBench struct {
	url    string
	store  *inbox.Store
	tokens *inbox.Tokens
	client *http.Client
}

func startInboxBench(b *testing.B, cfg api.Config) inboxBench {
	b.Helper()
	n := heraldtest.StartNATSWithStreams(b)
	ctx := heraldtest.Context(b)
	reg, err := tenant.Open(ctx, n.JS, tenant.BuiltinPlans())
	require.NoError(b, err)
	_, err = reg.Create(ctx, tenant.Tenant{ID: "acme", Plan: "startup", Status: tenant.Active, InboxOrigins: []string{acmePage}})
	require.NoError(b, err)
	tokens, err := inbox.NewTokens(bytes.Repeat([]byte("s"), 32))
	require.NoError(b, err)
	cfg.InboxTokens, cfg.Authenticator = tokens, testKeys
	svc, err := api.New(n.JS, cfg)
	require.NoError(b, err)
	require.NoError(b, svc.Start(ctx))
	b.Cleanup(func() { require.NoError(b, svc.Stop(context.Background())) })
	srv := httptest.NewServer(svc.Handler())
	b.Cleanup(srv.Close)
	store, err := inbox.Open(ctx, n.JS)
	require.NoError(b, err)
	return inboxBench{url: srv.URL, store: store, tokens: tokens, client: heraldtest.HTTPClient(b)}
}

func (ib inboxBench) token(b *testing.B, sub string) string {
	b.Helper()
	tok, _, err := ib.tokens.Mint("acme", sub, time.Hour, time.Now())
	require.NoError(b, err)
	return tok
}

// get is one browser request: the token and the page's origin.
func (ib inboxBench) get(b *testing.B, path, token string) {
	req, err := http.NewRequest(http.MethodGet, ib.url+path, nil)
	require.NoError(b, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Origin", acmePage)
	resp, err := ib.client.Do(req)
	require.NoError(b, err)
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	require.NoError(b, err)
	require.NoError(b, resp.Body.Close())
	require.Equal(b, http.StatusOK, resp.StatusCode, buf.String())
}

// feedOf1000 is a subscriber with 1,000 items, a third of them read.
func (ib inboxBench) feedOf1000(b *testing.B) string {
	b.Helper()
	ctx := heraldtest.Context(b)
	for i := range 1000 {
		_, _, err := ib.store.Add(ctx, "acme", "ana", inboxItem(i), inbox.Limits{})
		require.NoError(b, err)
		if i%3 == 0 {
			_, err = ib.store.Mark(ctx, "acme", "ana", inboxItem(i).ID, inbox.MarkRead)
			require.NoError(b, err)
		}
	}
	return ib.token(b, "ana")
}

// timed runs fn b.N times and reports the 99th percentile of its times.
func timed(b *testing.B, fn func()) {
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		fn()
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkInboxFirstPage is the browser's first page of a 1,000-item
// inbox through HTTP: token, origin check, the page of 20.
func BenchmarkInboxFirstPage(b *testing.B) {
	ib := startInboxBench(b, api.Config{})
	tok := ib.feedOf1000(b)
	b.ReportAllocs()
	timed(b, func() { ib.get(b, "/v1/inbox/items", tok) })
}

// BenchmarkInboxCounts is the badge's request for a 1,000-item inbox.
func BenchmarkInboxCounts(b *testing.B) {
	ib := startInboxBench(b, api.Config{})
	tok := ib.feedOf1000(b)
	b.ReportAllocs()
	timed(b, func() { ib.get(b, "/v1/inbox/counts", tok) })
}

// BenchmarkInboxStreamFanOut holds 1,000 streams open, each a subscriber
// of its own, and times a new item from the store's write to the line
// its browser reads, one subscriber after another. It reports the heap
// and goroutines each open stream costs (both ends: the client's reader
// is in this process too) and the p99 of that latency.
func BenchmarkInboxStreamFanOut(b *testing.B) {
	const streams = 1000
	ib := startInboxBench(b, api.Config{InboxHeartbeat: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	transport := &http.Transport{MaxIdleConnsPerHost: streams}
	b.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	arrived := make([]chan struct{}, streams)
	done := make(chan struct{}, streams)
	for i := range streams {
		arrived[i] = make(chan struct{}, 1)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ib.url+"/v1/inbox/stream", nil)
		require.NoError(b, err)
		req.Header.Set("Authorization", "Bearer "+ib.token(b, fmt.Sprintf("sub-%d", i)))
		resp, err := client.Do(req)
		require.NoError(b, err)
		require.Equal(b, http.StatusOK, resp.StatusCode)
		go readItems(resp, arrived[i], done)
	}
	b.Cleanup(func() {
		cancel()
		for range streams {
			<-done
		}
	})
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapInuse-before.HeapInuse) / streams
	stack := float64(after.StackInuse-before.StackInuse) / streams
	perStream := float64(runtime.NumGoroutine()-goroutines) / streams
	store, i := ib.store, 0
	timed(b, func() {
		sub := i % streams
		it := inboxItem(i)
		i++
		_, _, err := store.Add(ctx, "acme", fmt.Sprintf("sub-%d", sub), it, inbox.Limits{})
		require.NoError(b, err)
		<-arrived[sub]
	})
	// After the loop: resetting the timer forgets reported metrics.
	b.ReportMetric(heap, "heap-B/stream")
	b.ReportMetric(stack, "stack-B/stream")
	b.ReportMetric(perStream, "goroutines/stream")
}

// readItems signals arrived for each item event the stream carries.
func readItems(resp *http.Response, arrived chan<- struct{}, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: item") {
			arrived <- struct{}{}
		}
	}
}
