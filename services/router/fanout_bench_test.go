package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/recipient"
)

const fans = 50_000

// bigTopic stores fans subscribers of acme, each with a phone, on topic
// "fans", eight writers at a time.
func bigTopic(b *testing.B, n *heraldtest.NATS) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir, err := recipient.Open(ctx, n.JS)
	require.NoError(b, err)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < fans; i += 8 {
				id := fmt.Sprintf("u-%05d", i)
				_, err := dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: id, Phone: fmt.Sprintf("+346%08d", i)})
				if err == nil {
					_, err = dir.Memberships.Put(ctx, recipient.Membership{Tenant: "acme", Topic: "fans", Subscriber: id})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(b, <-errs)
}

// notifyCount is how many deliveries NOTIFY holds.
func notifyCount(b *testing.B, n *heraldtest.NATS) uint64 {
	s, err := n.JS.Stream(context.Background(), "NOTIFY")
	require.NoError(b, err)
	info, err := s.Info(context.Background())
	require.NoError(b, err)
	return info.State.Msgs
}

func fanEvent(b *testing.B, id string) []byte {
	body := stockAlert(b, map[string]any{"role": "warehouse", "topic": "fans"})
	var m map[string]any
	require.NoError(b, json.Unmarshal(body, &m))
	m["id"] = id
	out, err := json.Marshal(m)
	require.NoError(b, err)
	return out
}

// publishRaw publishes payload on subject and returns when it began: a
// publisher waits for the stream to store its event too.
func publishRaw(b *testing.B, js jetstream.JetStream, subject string, payload []byte) time.Time {
	msg := nats.NewMsg(subject)
	msg.Data = payload
	began := time.Now()
	_, err := js.PublishMsg(context.Background(), msg)
	require.NoError(b, err)
	return began
}

// BenchmarkFanout: one stock alert to a topic of 50,000, planned a page
// at a time on FANOUT, until NOTIFY holds every delivery.
//
//	go test -run '^$' -bench BenchmarkFanout$ -benchtime 1x ./services/router/
func BenchmarkFanout(b *testing.B) {
	n := heraldtest.StartNATSWithStreams(b)
	bigTopic(b, n)
	start(b, n, router.Config{Channels: []event.Channel{event.ChannelSMS}}, nil)
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		before := notifyCount(b, n)
		began := publishRaw(b, n.JS, "inventory.low_stock", fanEvent(b, fmt.Sprintf("evt-fans-%d", i)))
		for notifyCount(b, n) < before+fans {
			time.Sleep(10 * time.Millisecond)
		}
		total += time.Since(began)
	}
	b.ReportMetric(float64(fans*b.N)/total.Seconds(), "deliveries/s")
}

// neighbourLatencies routes count orders of tenant globex, one at a time,
// each timed from its publish until its Accepted record is published (its
// delivery waits in DOCS for the purchase order, out of NOTIFY's count).
// globex publishes on a connection of its own, as another tenant's
// publisher would, not on the router's.
func neighbourLatencies(b *testing.B, globex jetstream.JetStream, records <-chan *nats.Msg, from, count int) []time.Duration {
	out := make([]time.Duration, 0, count)
	for i := from; i < from+count; i++ {
		ev := orderEvent(&testing.T{}, fmt.Sprintf("evt-globex-%d", i), func(data map[string]any) {
			data["recipients"] = []any{map[string]any{"role": "supplier", "email": fmt.Sprintf("o%d@zarya.example", i), "channels": []string{"email"}}}
		})
		var m map[string]any
		require.NoError(b, json.Unmarshal(ev, &m))
		m["tenant"] = "globex"
		ev, err := json.Marshal(m)
		require.NoError(b, err)
		began := publishRaw(b, globex, "orders.created", ev)
		select {
		case <-records:
			out = append(out, time.Since(began))
		case <-time.After(time.Minute):
			b.Fatal("no accepted record for globex's order")
		}
	}
	return out
}

// quantile is the q-th percentile of ds.
func quantile(ds []time.Duration, q int) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)*q/100]
}

// BenchmarkFanoutNeighbour: another tenant's order, routed one at a time,
// alone and while acme's topic of 50,000 fans out — its p50 and p99 from
// publish to its Accepted record, and the ratio of the p99s. Each
// iteration is one fan-out; run several, the p99 of 200 samples is
// mostly the machine's noise.
//
//	go test -run '^$' -bench BenchmarkFanoutNeighbour -benchtime 4x ./services/router/
func BenchmarkFanoutNeighbour(b *testing.B) {
	n := heraldtest.StartNATSWithStreams(b)
	bigTopic(b, n)
	start(b, n, router.Config{Channels: []event.Channel{event.ChannelSMS, event.ChannelEmail}}, nil)
	nc, err := nats.Connect(n.Server.URL())
	require.NoError(b, err)
	b.Cleanup(nc.Close)
	globex, err := jetstream.New(nc)
	require.NoError(b, err)
	records := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe("notify.accepted.globex", records)
	require.NoError(b, err)
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	const samples = 200
	// Alone is measured before and after each fan-out, after it for as
	// many orders as beside it, and pooled with every iteration's, beside
	// pooled too: the machine is shared, and a ratio against a moment
	// shorter, or quieter, than the fan-out's says little.
	var alone, beside []time.Duration
	var fanning time.Duration
	next := 0
	measure := func(count int) []time.Duration {
		next += count
		return neighbourLatencies(b, globex, records, next-count, count)
	}
	for i := 0; b.Loop(); i++ {
		alone = append(alone, measure(samples/2)...)
		before := notifyCount(b, n)
		began := publishRaw(b, n.JS, "inventory.low_stock", fanEvent(b, fmt.Sprintf("evt-fans-%d", i)))
		// Beside the whole fan-out, its first pages and its last.
		from := len(beside)
		for notifyCount(b, n) < before+fans {
			beside = append(beside, measure(samples/10)...)
		}
		fanning += time.Since(began)
		alone = append(alone, measure(len(beside)-from)...)
	}
	require.GreaterOrEqual(b, len(beside), samples, "the fan-out ended before the neighbour's orders did: more fans")
	b.ReportMetric(ms(quantile(alone, 50)), "p50-alone-ms")
	b.ReportMetric(ms(quantile(beside, 50)), "p50-beside-ms")
	b.ReportMetric(ms(quantile(alone, 99)), "p99-alone-ms")
	b.ReportMetric(ms(quantile(beside, 99)), "p99-beside-ms")
	b.ReportMetric(float64(quantile(beside, 99))/float64(quantile(alone, 99)), "ratio")
	// What the orders cost the fan-out: it yields to each.
	b.ReportMetric(float64(fans*b.N)/fanning.Seconds(), "fanout-deliveries/s")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
