package outbox_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// BenchmarkRelay measures the relay on PostgreSQL (POSTGRES_URL) and
// SQLite, against an embedded JetStream with file storage:
//
//   - backlog: b.N rows already committed, published as fast as the relay
//     can (events/s);
//
//   - open-loop: rows committed one per transaction at 500/s by four
//     writers (PostgreSQL's relay woken by NOTIFY; SQLite's polling every
//     100ms, its default), and the time from sending each COMMIT (its own round trip included) to the message
//     reaching a subscriber of its subject, which JetStream forwards as it
//     stores it (p50/p99 ms: what the outbox adds to a publish).
//
//     POSTGRES_URL=… go test ./outbox -run '^$' -bench Relay -benchtime 5000x
func BenchmarkRelay(b *testing.B) {
	for _, kind := range []string{"postgres", "sqlite"} {
		b.Run(kind+"/backlog", func(b *testing.B) { benchBacklog(b, kind) })
		b.Run(kind+"/open-loop", func(b *testing.B) { benchOpenLoop(b, kind) })
	}
}

func benchDatabase(b *testing.B, kind string) database {
	if kind == "postgres" {
		url := heraldtest.PostgresURL(b)
		if url == "" {
			b.Skip("POSTGRES_URL is not set")
		}
		return openPostgres(b, url)
	}
	return openSQLite(b)
}

func benchBacklog(b *testing.B, kind string) {
	d := benchDatabase(b, kind)
	js := stream(b)
	for i := 0; i < b.N; i += 500 {
		tx, commit, _ := d.begin(b)
		for j := i; j < min(i+500, b.N); j++ {
			require.NoError(b, outbox.Add(context.Background(), tx, event(fmt.Sprintf("evt-%d", j))))
		}
		commit()
	}
	b.ResetTimer()
	start := time.Now()
	startRelay(b, d.db, js, outbox.RelayConfig{Poll: 10 * time.Millisecond})
	waitForStatus(b, d.db, func(s outbox.Status) bool { return s.Published == int64(b.N) })
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

func benchOpenLoop(b *testing.B, kind string) {
	d := benchDatabase(b, kind)
	js := stream(b)
	var mu sync.Mutex
	committed := make(map[string]time.Time, b.N)
	received := make(map[string]time.Time, b.N)
	all := make(chan struct{})
	sub, err := js.Conn().Subscribe("orders.created", func(m *nats.Msg) {
		at := time.Now()
		mu.Lock()
		defer mu.Unlock()
		received[m.Header.Get(nats.MsgIdHdr)] = at
		if len(received) == b.N {
			close(all)
		}
	})
	require.NoError(b, err)
	defer func() { _ = sub.Unsubscribe() }()
	// PostgreSQL's relay is woken by NOTIFY: it would look only once a
	// second otherwise. SQLite's polls, every 100ms by default.
	cfg := outbox.RelayConfig{}
	if kind == "postgres" {
		cfg.Poll = time.Second
	}
	startRelay(b, d.db, js, cfg)
	time.Sleep(100 * time.Millisecond) // the relay listens

	b.ResetTimer()
	const writers, rate = 4, 500
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	next := make(chan int)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for i := range next {
				id := fmt.Sprintf("evt-%d", i)
				tx, commit, _ := d.begin(b)
				require.NoError(b, outbox.Add(context.Background(), tx, event(id)))
				mu.Lock()
				committed[id] = time.Now()
				mu.Unlock()
				commit()
			}
		})
	}
	for i := range b.N {
		<-tick.C
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		b.Fatalf("%d of %d events reached the subscriber", len(received), b.N)
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	latencies := make([]time.Duration, 0, b.N)
	for id, at := range received {
		latencies = append(latencies, at.Sub(committed[id]))
	}
	slices.Sort(latencies)
	ms := func(q float64) float64 {
		return float64(latencies[int(q*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
