package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
)

// cluster is three embedded nats-servers forming one JetStream cluster on
// loopback; a node can be stopped and started again on its own store.
type cluster struct {
	cfgs  []embedded.NATSConfig
	nodes []*embedded.NATS
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	ports := clusterPorts(t, 6)
	// A name of its own: a route left pointing at a port this cluster no
	// longer uses can never join another test's cluster.
	name := "herald-" + strings.Trim(heraldtest.Prefix(), ":")
	c := &cluster{}
	for i := range 3 {
		var routes []string
		for j := range 3 {
			if j != i {
				routes = append(routes, fmt.Sprintf("127.0.0.1:%d", ports[3+j]))
			}
		}
		c.cfgs = append(c.cfgs, embedded.NATSConfig{
			ServerName: fmt.Sprintf("n%d", i+1), Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]), StoreDir: heraldtest.StoreDir(t),
			Cluster: &embedded.ClusterConfig{Name: name, Listen: fmt.Sprintf("127.0.0.1:%d", ports[3+i]), Routes: routes},
		})
	}
	c.nodes = make([]*embedded.NATS, 3)
	for i := range 3 {
		c.start(t, i)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			if n != nil {
				n.Shutdown()
			}
		}
	})
	return c
}

func (c *cluster) start(t *testing.T, i int) {
	t.Helper()
	n, err := embedded.StartNATS(c.cfgs[i])
	require.NoError(t, err)
	c.nodes[i] = n
}

func (c *cluster) stop(i int) {
	c.nodes[i].Shutdown()
	c.nodes[i] = nil
}

func (c *cluster) urls() string {
	var urls []string
	for _, cfg := range c.cfgs {
		urls = append(urls, "nats://"+cfg.Listen)
	}
	return strings.Join(urls, ",")
}

func (c *cluster) index(name string) int {
	for i, cfg := range c.cfgs {
		if cfg.ServerName == name {
			return i
		}
	}
	return -1
}

// clusterPorts returns n loopback ports for cluster nodes.
//
// A stopped node must come back on its own addresses — the other nodes'
// routes and the clients' server lists name them — so the servers cannot
// pick their ports, and nats-server cannot be handed a listener. A port
// found free with port 0 and closed again, though, may be taken by any
// parallel test that binds port 0 before the node does, or while it is down.
// So these ports come from below the ranges kernels hand out for port 0 and
// outgoing connections (Linux from 32768, macOS and Windows from 49152):
// only another user of fixed ports could meet them. Each test process takes
// its own block, chosen by its pid, and skips a port found in use.
func clusterPorts(t *testing.T, n int) []int {
	t.Helper()
	const first, last, block = 20000, 32000, 60
	base := first + os.Getpid()%((last-first)/block)*block
	var ports []int
	for len(ports) < n {
		i := int(clusterPortsTaken.Add(1)) - 1
		require.Less(t, i, block, "this test process used up its %d cluster ports", block)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
		if err != nil {
			continue // some other program's
		}
		require.NoError(t, ln.Close())
		ports = append(ports, base+i)
	}
	return ports
}

// clusterPortsTaken counts the ports of this process's block handed out.
var clusterPortsTaken atomic.Int32

// Kill the NOTIFY stream's leader while events keep coming, bring it back:
// every notification is delivered, none twice.
func TestClusterLosesItsLeaderWithoutLosingOrDuplicating(t *testing.T) {
	if testing.Short() {
		t.Skip("three-node cluster")
	}
	t.Parallel()
	c := startCluster(t)
	nc, err := nats.Connect(c.urls(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	waitForJetStream(t, js)

	mail := t.TempDir()
	var cfg app.Config
	cfg.NATS.URL = c.urls()
	cfg.Redis.URL = heraldtest.RedisURL(t)
	cfg.Redis.Prefix = heraldtest.Prefix()
	cfg.HTTP.Listen, cfg.API.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Streams.Replicas = 3
	cfg.Services = []string{"router", "delivery"}
	cfg.Email.From = "Orders <orders@acme.example>"
	cfg.Email.RetryDelay = 50 * time.Millisecond
	cfg.Email.Providers = []app.ProviderConfig{{Type: "maildir", Dir: mail}}
	withoutDocuments(&cfg)
	// Which tenants exist is not this test's matter: the streams are
	// created by Start, too late to register acme before the router runs.
	cfg.Tenants.RequireRegistered = new(bool)
	a, err := app.New(cfg, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError})))
	require.NoError(t, err)
	require.NoError(t, a.Start(heraldtest.Context(t)))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = a.Stop(ctx)
	})

	const n = 300
	var published atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			publishUntilStored(t, js, i)
			published.Add(1)
			time.Sleep(10 * time.Millisecond)
		}
	}()

	require.Eventually(t, func() bool { return published.Load() > n/3 }, 30*time.Second, 10*time.Millisecond)
	s, err := js.Stream(heraldtest.Context(t), "NOTIFY")
	require.NoError(t, err)
	leader := c.index(s.CachedInfo().Cluster.Leader)
	require.GreaterOrEqual(t, leader, 0)
	c.stop(leader)
	stoppedAt := published.Load()
	t.Logf("stopped %s, the NOTIFY leader, after %d events", c.cfgs[leader].ServerName, stoppedAt)
	// The cluster carries on without it: another node leads NOTIFY, and
	// events keep being stored, before it comes back.
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		info, err := s.Info(ctx)
		return err == nil && info.Cluster != nil && info.Cluster.Leader != "" &&
			info.Cluster.Leader != c.cfgs[leader].ServerName && published.Load() >= stoppedAt+n/6
	}, time.Minute, 50*time.Millisecond, "no new NOTIFY leader, or no events stored without the old one")
	c.start(t, leader)
	t.Logf("restarted it after %d events", published.Load())
	<-done

	want := map[string]bool{}
	for i := range n {
		want[notification.ID(fmt.Sprintf("acme:PO-DLQ-%03d:1:purchase_order:email:compras@frutasdelsur.example", i))] = true
	}
	count := func() map[string]int {
		got := map[string]int{}
		files, _ := filepath.Glob(filepath.Join(mail, "*.eml"))
		for _, f := range files {
			for id := range want {
				if strings.Contains(filepath.Base(f), id) {
					got[id]++
				}
			}
		}
		return got
	}
	if !assertEventually(t, func() bool { return len(count()) == n }, 3*time.Minute) {
		var state []string
		for _, c := range [][2]string{{"ORDERS", "router"}, {"NOTIFY", "email-normal_acme"}} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			info, err := js.Consumer(ctx, c[0], c[1])
			cancel()
			if err != nil {
				state = append(state, fmt.Sprintf("%s>%s: %v", c[0], c[1], err))
				continue
			}
			ci := info.CachedInfo()
			state = append(state, fmt.Sprintf("%s>%s: pending %d, ack pending %d, redelivered %d, leader %s",
				c[0], c[1], ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.Cluster.Leader))
		}
		t.Fatalf("delivered %d of %d; %s", len(count()), n, strings.Join(state, "; "))
	}
	// Anything still to come would be a duplicate, and it could only come
	// from a message not yet settled: wait until none is.
	require.Eventually(t, func() bool {
		return settled(t, js, "ORDERS", "router") && settled(t, js, "NOTIFY", "email-normal_acme")
	},
		time.Minute, 50*time.Millisecond, "messages are still pending or unacknowledged")
	for id, k := range count() {
		require.Equal(t, 1, k, "notification %s sent %d times", id, k)
	}
}

// settled reports whether a consumer has nothing left to deliver and
// nothing delivered but not yet acknowledged.
func settled(t *testing.T, js jetstream.JetStream, stream, consumer string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		return false
	}
	info := c.CachedInfo()
	return info.NumPending == 0 && info.NumAckPending == 0
}

// publishUntilStored publishes event i, retrying through elections: the
// same Nats-Msg-Id makes the retries harmless.
func publishUntilStored(t *testing.T, js jetstream.JetStream, i int) {
	msg := nats.NewMsg("orders.created")
	msg.Data = oneRecipientOrder(t, i)
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("evt-dlq-%d", i))
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.PublishMsg(ctx, msg)
		cancel()
		if err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitForJetStream waits until the cluster answers JetStream requests: a
// meta leader is elected.
func waitForJetStream(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster elected no meta leader: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
