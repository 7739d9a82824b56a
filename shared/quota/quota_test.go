package quota_test

import (
	"bytes"
	"encoding/json"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/tenant"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

type testBundle struct {
	n       *heraldtest.NATS
	counter *quota.Counter
}

func setup(t *testing.T) testBundle {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	return testBundle{n: n, counter: quota.New(n.JS)}
}

var december = quota.Key{Tenant: "acme", Channel: event.ChannelEmail, Month: "2026-12"}

// The wire format this package relies on, as the server speaks it: an
// empty body with Nats-Incr is acknowledged with the new total as a string
// in val, and the last message for the subject is {"val":"N"}.
func TestCountersSpeakTheServersWireFormat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)

	msg := nats.NewMsg("quota.acme.email.2026-12")
	msg.Header.Set("Nats-Incr", "+1")
	reply, err := b.n.Conn.RequestMsgWithContext(ctx, msg)
	require.NoError(t, err)
	var ack map[string]any
	require.NoError(t, json.Unmarshal(reply.Data, &ack), "%s", reply.Data)
	require.Equal(t, "QUOTAS", ack["stream"])
	require.Equal(t, "1", ack["val"], "the new total, as a string: %s", reply.Data)

	msg.Header.Set("Nats-Incr", "+41")
	_, err = b.n.Conn.RequestMsgWithContext(ctx, msg)
	require.NoError(t, err)
	last, err := b.n.Conn.RequestWithContext(ctx, "$JS.API.DIRECT.GET.QUOTAS.quota.acme.email.2026-12", nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"val":"42"}`, string(last.Data))

	total, err := b.counter.Get(ctx, "quota.acme.email.2026-12")
	require.NoError(t, err)
	require.EqualValues(t, 42, total)
	none, err := b.counter.Get(ctx, "quota.acme.sms.2026-12")
	require.NoError(t, err)
	require.Zero(t, none, "a counter never counted reads 0")
}

// Counting under the same id twice — a copy redelivered after a crash —
// counts once and answers the same total.
func TestCountingTwiceUnderOneIDCountsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)

	first, err := b.counter.Add(ctx, december.Subject(), 1, "ntf_1:7")
	require.NoError(t, err)
	require.EqualValues(t, 1, first)
	again, err := b.counter.Add(ctx, december.Subject(), 1, "ntf_1:7")
	require.NoError(t, err)
	require.EqualValues(t, 1, again)
	_, err = b.counter.Add(ctx, december.Subject(), 1, "ntf_2:8")
	require.NoError(t, err)
	again, err = b.counter.Add(ctx, december.Subject(), 1, "ntf_1:7")
	require.NoError(t, err)
	require.EqualValues(t, 2, again)
	total, err := b.counter.Get(ctx, december.Subject())
	require.NoError(t, err)
	require.EqualValues(t, 2, total)
}

// losingDialer connects as usual, except that on its first connection,
// once a counter increment has gone out, it drops everything the server
// sends: the increment lands and its answer is lost, as when a connection
// breaks after the server stored the message.
type losingDialer struct{ dialed atomic.Int32 }

func (d *losingDialer) Dial(network, address string) (net.Conn, error) {
	c, err := net.Dial(network, address)
	if err != nil || d.dialed.Add(1) > 1 {
		return c, err
	}
	return &losingConn{Conn: c}, nil
}

type losingConn struct {
	net.Conn
	deaf atomic.Bool
}

// Write turns the connection deaf before the increment leaves: its answer
// cannot arrive before.
func (c *losingConn) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("Nats-Incr")) {
		c.deaf.Store(true)
	}
	return c.Conn.Write(p)
}

func (c *losingConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if err != nil || !c.deaf.Load() {
			return n, err
		}
	}
}

// An increment lands but its answer is lost to a broken connection: the
// counter asks again under the same Nats-Msg-Id, so the notification is
// counted once and learns its place from the first answer's total.
func TestALostAnswerCountsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	nc, err := nats.Connect(b.n.Server.URL(), nats.SetCustomDialer(&losingDialer{}), nats.ReconnectWait(10*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)

	type result struct {
		use quota.Use
		err error
	}
	done := make(chan result, 1)
	go func() {
		u, err := quota.New(js).Count(ctx, december, quota.Limit{PerMonth: 10, Limited: true})
		done <- result{u, err}
	}()
	require.Eventually(t, func() bool {
		total, err := b.counter.Get(ctx, december.Subject())
		require.NoError(t, err)
		return total == 1
	}, 10*time.Second, 10*time.Millisecond, "the increment landed")
	// The request in flight fails, as on a broken connection, and the
	// client reconnects.
	require.NoError(t, nc.ForceReconnect())

	r := <-done
	require.NoError(t, r.err)
	require.EqualValues(t, 1, r.use.Used)
	require.False(t, r.use.Refused)
	total, err := b.counter.Get(ctx, december.Subject())
	require.NoError(t, err)
	require.EqualValues(t, 1, total, "counted once")
}

// A quota of 10 taken by 15 notifications at once: 10 counted, 5 refused,
// each threshold crossed by exactly one, and the count honest.
func TestCountRefusesPastTheQuota(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	limit := quota.Limit{PerMonth: 10, Limited: true}

	var (
		mu      sync.Mutex
		uses    []quota.Use
		wg      sync.WaitGroup
		crossed = map[quota.Threshold]int64{}
	)
	for range 15 {
		wg.Go(func() {
			u, err := b.counter.Count(ctx, december, limit)
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			uses = append(uses, u)
			for _, th := range u.Crossed {
				crossed[th] = u.Used
			}
		})
	}
	wg.Wait()
	refused := 0
	for _, u := range uses {
		if u.Refused {
			refused++
			require.EqualError(t, u.Err(), "quota exceeded: email 10/10 (2026-12)")
		} else {
			require.NoError(t, u.Err())
		}
	}
	require.Equal(t, 5, refused)
	require.Equal(t, map[quota.Threshold]int64{quota.Warning: 8, quota.Exhausted: 10}, crossed)

	usage, err := b.counter.Usage(ctx, december, limit)
	require.NoError(t, err)
	require.EqualValues(t, 10, usage.Used)
	require.EqualValues(t, 5, usage.Refused)
	require.EqualError(t, usage.Exceeded(), "quota exceeded: email 10/10 (2026-12)")

	// A month is its own count.
	january := december
	january.Month = quota.Month(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	u, err := b.counter.Count(ctx, january, limit)
	require.NoError(t, err)
	require.False(t, u.Refused)
	require.EqualValues(t, 1, u.Used)
}

// Without a quota everything is counted, nothing refused or warned about.
func TestCountWithoutAQuotaOnlyCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	for range 3 {
		u, err := b.counter.Count(ctx, december, quota.Limit{})
		require.NoError(t, err)
		require.False(t, u.Refused)
		require.Empty(t, u.Crossed)
	}
	usage, err := b.counter.Usage(ctx, december, quota.Limit{})
	require.NoError(t, err)
	require.EqualValues(t, 3, usage.Used)
	require.NoError(t, usage.Exceeded())
}

func TestKeysStayOneToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.counter.Count(heraldtest.Context(t), quota.Key{Tenant: "acme.>", Channel: "email", Month: "2026-12"}, quota.Limit{})
	require.ErrorContains(t, err, `tenant "acme.>" cannot be a subject token`)
}

// A burst of one key is counted in a few writes, not one per notification,
// and each notification still learns its own place in the month: the
// places are 1 to n, each once.
func TestCountingABurstTakesFewWritesAndGivesEachItsPlace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	const n = 200
	var (
		mu     sync.Mutex
		places = map[int64]int{}
		wg     sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			u, err := b.counter.Count(ctx, december, quota.Limit{PerMonth: n, Limited: true})
			require.NoError(t, err)
			require.False(t, u.Refused)
			mu.Lock()
			places[u.Used]++
			mu.Unlock()
		})
	}
	wg.Wait()
	for place := int64(1); place <= n; place++ {
		require.Equal(t, 1, places[place], "place %d", place)
	}
	s, err := b.n.JS.Stream(ctx, quota.Stream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Less(t, info.State.LastSeq, uint64(n/2), "notifications counted while a write was on its way share the next")
	usage, err := b.counter.Usage(ctx, december, quota.Limit{PerMonth: n, Limited: true})
	require.NoError(t, err)
	require.EqualValues(t, n, usage.Used)
}

// A tenant's month is every channel, in order, each against its plan's
// quota: the free plan caps email, not SMS, and a channel never counted
// reads 0.
func TestTenantMonthReadsEveryChannelAgainstThePlan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	for range 3 {
		_, err := b.counter.Count(ctx, december, quota.Limit{PerMonth: 100, Limited: true})
		require.NoError(t, err)
	}
	month, err := b.counter.TenantMonth(ctx, "acme", tenant.BuiltinPlans()["free"], "2026-12")
	require.NoError(t, err)
	require.Len(t, month, len(event.Channels))
	for i, u := range month {
		require.Equal(t, event.Channels[i], u.Channel)
		require.Equal(t, "2026-12", u.Month)
	}
	require.Equal(t, quota.Limit{PerMonth: 100, Limited: true}, month[0].Limit)
	require.EqualValues(t, 3, month[0].Used)
	require.Equal(t, event.ChannelSMS, month[1].Channel)
	require.False(t, month[1].Limited)
	require.Zero(t, month[1].Used)
}
