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

func publishRaw(b *testing.B, n *heraldtest.NATS, subject string, payload []byte) time.Time {
	msg := nats.NewMsg(subject)
	msg.Data = payload
	_, err := n.JS.PublishMsg(context.Background(), msg)
	require.NoError(b, err)
	return time.Now()
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
		began := publishRaw(b, n, "inventory.low_stock", fanEvent(b, fmt.Sprintf("evt-fans-%d", i)))
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
func neighbourLatencies(b *testing.B, n *heraldtest.NATS, records <-chan *nats.Msg, from, count int) []time.Duration {
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
		began := publishRaw(b, n, "orders.created", ev)
		select {
		case <-records:
			out = append(out, time.Since(began))
		case <-time.After(time.Minute):
			b.Fatal("no accepted record for globex's order")
		}
	}
	return out
}

func p99(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)*99/100]
}

// BenchmarkFanoutNeighbour: another tenant's order, routed one at a time,
// alone and while acme's topic of 50,000 fans out — its p99 from publish
// to its Accepted record, and the ratio.
//
//	go test -run '^$' -bench BenchmarkFanoutNeighbour -benchtime 1x ./services/router/
func BenchmarkFanoutNeighbour(b *testing.B) {
	n := heraldtest.StartNATSWithStreams(b)
	bigTopic(b, n)
	start(b, n, router.Config{Channels: []event.Channel{event.ChannelSMS, event.ChannelEmail}}, nil)
	records := make(chan *nats.Msg, 16)
	sub, err := n.Conn.ChanSubscribe("notify.accepted.globex", records)
	require.NoError(b, err)
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	const samples = 200
	var alone, beside time.Duration
	for i := 0; b.Loop(); i++ {
		alone = p99(neighbourLatencies(b, n, records, 2*i*samples, samples))
		before := notifyCount(b, n)
		publishRaw(b, n, "inventory.low_stock", fanEvent(b, fmt.Sprintf("evt-fans-%d", i)))
		beside = p99(neighbourLatencies(b, n, records, (2*i+1)*samples, samples))
		if notifyCount(b, n) >= before+fans {
			b.Fatal("the fan-out ended before the neighbour's orders did: fewer fans or more samples")
		}
		for notifyCount(b, n) < before+fans {
			time.Sleep(10 * time.Millisecond)
		}
	}
	b.ReportMetric(float64(alone.Microseconds())/1000, "p99-alone-ms")
	b.ReportMetric(float64(beside.Microseconds())/1000, "p99-beside-ms")
	b.ReportMetric(float64(beside)/float64(alone), "ratio")
}
