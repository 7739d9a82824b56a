package bench_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/embedded"
)

// BenchmarkTheProtocolsFloor measures what JetStream alone costs for the
// writes and reads every delivery needs, with no Herald code in the way:
// per order, the event is published and consumed; per recipient, the
// delivery is published (async, as the router does), pulled in batches,
// claimed in the ledger (KV Create), settled (KV Update) and acked.
// Herald's own cost per delivery is that plus routing, composing, the
// lease, the tenant's checks and the send. Compare the deliveries/s and
// cpu-ms/delivery it reports with `herald bench` on the same machine:
//
//	go test ./services/bench -run '^$' -bench Floor -benchtime 20000x
//
// The "settle-only" case leaves out the claim: one ledger write per
// delivery instead of two, what relying on the Redis lease alone would
// cost (it is not what Herald does: see README "Delivered exactly once").
//
// The "open-loop" case is claim+settle with the orders published on a
// schedule, 200 a second (1,000 deliveries/s, as `herald bench --orders
// 2000 --rate 200`), and reports the latency from an order's scheduled
// publish to its delivery's settlement: the floor of the open loop's p99,
// on the machine of the day, to divide Herald's by.
//
//	go test ./services/bench -run '^$' -bench 'Floor/open-loop' -benchtime 10000x
func BenchmarkTheProtocolsFloor(b *testing.B) {
	b.Run("claim+settle", func(b *testing.B) { protocolsFloor(b, true, 0) })
	b.Run("settle-only", func(b *testing.B) { protocolsFloor(b, false, 0) })
	b.Run("open-loop", func(b *testing.B) { protocolsFloor(b, true, 200) })
}

// protocolsFloor runs b.N deliveries; rate is orders per second, 0 for a
// burst.
func protocolsFloor(b *testing.B, claim bool, rate float64) {
	const recipients = 5
	ctx := context.Background()
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: b.TempDir()})
	require.NoError(b, err)
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.URL())
	require.NoError(b, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(b, err)

	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.*"}, Duplicates: 10 * time.Minute})
	require.NoError(b, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "NOTIFY", Subjects: []string{"notify.>"}, Retention: jetstream.WorkQueuePolicy, Duplicates: 10 * time.Minute})
	require.NoError(b, err)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "deliveries", History: 1})
	require.NoError(b, err)
	router, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "router", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(b, err)
	deliveries, err := js.CreateOrUpdateConsumer(ctx, "NOTIFY", jetstream.ConsumerConfig{Durable: "email", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1024})
	require.NoError(b, err)

	orders := max(1, b.N/recipients)
	total := orders * recipients
	payload := make([]byte, 600) // a delivery's JSON is about this long
	for i := range payload {
		payload[i] = 'x'
	}
	var settled atomic.Int64
	done := make(chan struct{})
	published := make([]atomic.Int64, orders) // each order's scheduled publish, ns
	latencies := make([]time.Duration, total)

	// The router's part: each order consumed, its deliveries published.
	rc, err := router.Consume(func(m jetstream.Msg) {
		id := string(m.Data())
		var futures []jetstream.PubAckFuture
		for r := range recipients {
			f, err := js.PublishAsync("notify.email.normal.t", payload, jetstream.WithMsgID(id+"-"+strconv.Itoa(r)))
			if err != nil {
				b.Error(err)
				return
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Error(err)
			}
		}
		_ = m.Ack()
	})
	require.NoError(b, err)
	defer rc.Stop()

	// The delivery worker's part: 64 at once, each claim and settle a
	// round trip, as Herald's workers do.
	work := make(chan jetstream.Msg, 64)
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for m := range work {
				key := "t." + m.Headers().Get(jetstream.MsgIDHeader)
				settle := []byte(`{"state":"delivered","provider":"p","provider_id":"x"}`)
				var err error
				if claim {
					var rev uint64
					if rev, err = kv.Create(ctx, key, []byte(`{"state":"sending"}`)); err == nil {
						_, err = kv.Update(ctx, key, settle, rev)
					}
				} else {
					_, err = kv.Create(ctx, key, settle)
				}
				if err != nil {
					b.Error(err)
				}
				_ = m.Ack()
				n := settled.Add(1)
				if rate > 0 { // a burst's floor does none of this work
					var order, r int
					if _, err := fmt.Sscanf(m.Headers().Get(jetstream.MsgIDHeader), "o%d-%d", &order, &r); err != nil {
						b.Error(err)
					}
					latencies[n-1] = time.Duration(time.Now().UnixNano() - published[order].Load())
				}
				if n == int64(total) {
					close(done)
				}
			}
		})
	}
	dc, err := deliveries.Consume(func(m jetstream.Msg) { work <- m }, jetstream.PullMaxMessages(64))
	require.NoError(b, err)
	defer dc.Stop()

	cpu0 := processCPU()
	b.ResetTimer()
	start := time.Now()
	for i := range orders {
		at := time.Now()
		if rate > 0 {
			at = start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
			time.Sleep(time.Until(at))
		}
		published[i].Store(at.UnixNano())
		if _, err := js.PublishAsync("orders.created", []byte(fmt.Sprintf("o%d", i)), jetstream.WithMsgID(fmt.Sprintf("o%d", i))); err != nil {
			b.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := processCPU() - cpu0
	close(work)
	wg.Wait()
	b.ReportMetric(float64(total)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(total), "cpu-ms/delivery")
	if rate > 0 {
		slices.Sort(latencies)
		b.ReportMetric(ms(latencies[total/2]), "p50-ms")
		b.ReportMetric(ms(latencies[total*99/100]), "p99-ms")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
