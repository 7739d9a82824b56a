package heraldtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// SentinelSet is a Redis master, its replica and three sentinels watching
// them, redis-server processes of the test's own on loopback ports: to kill
// the master and see a replica promoted.
type SentinelSet struct {
	*redisProcs
	Master    string // the master group's name
	sentinels []string
}

// redisProcs are redis-server processes a test runs and kills, by address.
type redisProcs struct {
	t       testing.TB
	bin     string // redis-server
	dir     string
	servers map[string]*exec.Cmd
}

// newRedisProcs finds redis-server (and, when cli, redis-cli) and kills
// every process it starts when the test ends. Without them the test is
// skipped, unless REDIS_URL is set or in CI.
func newRedisProcs(t testing.TB, cli bool) *redisProcs {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if cli && err == nil {
		_, err = exec.LookPath("redis-cli")
	}
	if err != nil {
		if os.Getenv("REDIS_URL") != "" || os.Getenv("CI") != "" {
			t.Fatal("redis-server or redis-cli is missing: install redis-server")
		}
		t.Skip("redis-server not installed (apt-get install redis-server)")
	}
	p := &redisProcs{t: t, bin: bin, dir: t.TempDir(), servers: map[string]*exec.Cmd{}}
	t.Cleanup(func() {
		for _, cmd := range p.servers {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return p
}

// StartSentinelSet starts the set and returns once the sentinels know the
// master and its replica. Without redis-server the test is skipped, unless
// REDIS_URL is set or in CI.
func StartSentinelSet(t testing.TB) *SentinelSet {
	t.Helper()
	s := &SentinelSet{redisProcs: newRedisProcs(t, false), Master: "herald"}
	master, replica := freeAddr(t), freeAddr(t)
	s.serve("master", master)
	s.serve("replica", replica, "--replicaof", "127.0.0.1", port(master))
	for i := range 3 {
		addr := freeAddr(t)
		conf := filepath.Join(s.dir, fmt.Sprintf("sentinel-%d.conf", i))
		require.NoError(t, os.WriteFile(conf, []byte(strings.Join([]string{
			"bind 127.0.0.1",
			"port " + port(addr),
			"dir " + s.dir,
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %s 2", s.Master, port(master)),
			"sentinel down-after-milliseconds " + s.Master + " 1000",
			"sentinel failover-timeout " + s.Master + " 5000",
			"sentinel parallel-syncs " + s.Master + " 1",
		}, "\n")+"\n"), 0o600))
		s.run(fmt.Sprintf("sentinel-%d", i), addr, conf, "--sentinel")
		s.sentinels = append(s.sentinels, addr)
	}
	// Ready: every sentinel sees the replica, and the replica is in sync.
	require.Eventually(t, func() bool {
		for _, addr := range s.sentinels {
			sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
			replicas, err := sc.Replicas(context.Background(), s.Master).Result()
			_ = sc.Close()
			if err != nil || len(replicas) == 0 {
				return false
			}
		}
		r := redis.NewClient(&redis.Options{Addr: replica})
		defer r.Close()
		info, err := r.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, 30*time.Second, 100*time.Millisecond, "the sentinels know the master's replica")
	return s
}

// URL is the set's address for Herald's redis.url.
func (s *SentinelSet) URL() string {
	return "redis+sentinel://" + strings.Join(s.sentinels, ",") + "/" + s.Master
}

// MasterAddr asks a sentinel which server is the master now.
func (s *SentinelSet) MasterAddr() string {
	s.t.Helper()
	for _, addr := range s.sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
		hp, err := sc.GetMasterAddrByName(context.Background(), s.Master).Result()
		_ = sc.Close()
		if err == nil && len(hp) == 2 {
			return net.JoinHostPort(hp[0], hp[1])
		}
	}
	s.t.Fatal("no sentinel answers")
	return ""
}

// KillMaster kills the master at once (SIGKILL) and returns its address.
func (s *SentinelSet) KillMaster() string {
	s.t.Helper()
	addr := s.MasterAddr()
	s.kill(addr)
	return addr
}

// serve starts a data server on addr, keeping nothing on disk.
func (p *redisProcs) serve(name, addr string, args ...string) {
	p.t.Helper()
	p.run(name, addr, append([]string{"--port", port(addr), "--bind", "127.0.0.1", "--dir", p.dir,
		"--dbfilename", name + ".rdb", "--save", "", "--appendonly", "no"}, args...)...)
}

// run starts redis-server with args and waits until addr takes
// connections; its output goes to <dir>/<name>.log.
func (p *redisProcs) run(name, addr string, args ...string) {
	p.t.Helper()
	log, err := os.Create(filepath.Join(p.dir, name+".log"))
	require.NoError(p.t, err)
	p.t.Cleanup(func() { _ = log.Close() })
	cmd := exec.Command(p.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(p.t, cmd.Start())
	p.servers[addr] = cmd
	require.Eventually(p.t, func() bool {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "%s listens on %s (see %s.log)", name, addr, name)
}

// kill kills the process on addr at once (SIGKILL).
func (p *redisProcs) kill(addr string) {
	p.t.Helper()
	cmd := p.servers[addr]
	require.NotNil(p.t, cmd, "%s is one of ours", addr)
	require.NoError(p.t, cmd.Process.Kill())
	_ = cmd.Wait()
	delete(p.servers, addr)
}

// freeAddr is a loopback address no one listens on now.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// ClusterSet is a Redis Cluster of three masters with a replica each,
// redis-server processes of the test's own on loopback ports: to kill a
// master and see its replica take over its slots.
type ClusterSet struct {
	*redisProcs
	addrs []string
}

// StartClusterSet starts six nodes, creates the cluster with redis-cli and
// returns once every node says the cluster is ok.
func StartClusterSet(t testing.TB) *ClusterSet {
	t.Helper()
	c := &ClusterSet{redisProcs: newRedisProcs(t, true)}
	for i := range 6 {
		addr := freeAddr(t)
		c.serve(fmt.Sprintf("node-%d", i), addr, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(c.dir, fmt.Sprintf("nodes-%d.conf", i)), "--cluster-node-timeout", "1000")
		c.addrs = append(c.addrs, addr)
	}
	out, err := exec.Command("redis-cli", append(append([]string{"--cluster", "create"}, c.addrs...), "--cluster-replicas", "1", "--cluster-yes")...).CombinedOutput()
	require.NoError(t, err, "redis-cli --cluster create: %s", out)
	// Ready: the cluster is ok and each replica has its master's data (a
	// replica that never synced refuses to take over).
	require.Eventually(t, func() bool {
		if !c.ok() {
			return false
		}
		replicas := 0
		for _, addr := range c.addrs {
			r := redis.NewClient(&redis.Options{Addr: addr})
			info, err := r.Info(context.Background(), "replication").Result()
			_ = r.Close()
			switch {
			case err != nil:
				return false
			case strings.Contains(info, "role:slave") && !strings.Contains(info, "master_link_status:up"):
				return false
			case strings.Contains(info, "role:slave"):
				replicas++
			}
		}
		return replicas == 3
	}, 30*time.Second, 100*time.Millisecond, "the cluster is ok and its replicas in sync")
	return c
}

// URL is the cluster's address for Herald's redis.url.
func (c *ClusterSet) URL() string { return "redis+cluster://" + strings.Join(c.addrs, ",") }

// KillMaster kills one master at once (SIGKILL) and returns its address.
func (c *ClusterSet) KillMaster() string {
	c.t.Helper()
	for _, addr := range c.addrs {
		if _, alive := c.servers[addr]; !alive {
			continue
		}
		r := redis.NewClient(&redis.Options{Addr: addr})
		info, err := r.Info(context.Background(), "replication").Result()
		_ = r.Close()
		if err == nil && strings.Contains(info, "role:master") {
			c.kill(addr)
			return addr
		}
	}
	c.t.Fatal("no master to kill")
	return ""
}

// Healed is whether the cluster has three masters again (a replica
// promoted in the killed one's place) and every live node says it is ok.
func (c *ClusterSet) Healed() bool {
	masters := 0
	for addr := range c.servers {
		r := redis.NewClient(&redis.Options{Addr: addr})
		info, err := r.Info(context.Background(), "replication").Result()
		_ = r.Close()
		if err == nil && strings.Contains(info, "role:master") {
			masters++
		}
	}
	return masters == 3 && c.ok()
}

func (c *ClusterSet) ok() bool {
	for addr := range c.servers {
		r := redis.NewClient(&redis.Options{Addr: addr})
		info, err := r.ClusterInfo(context.Background()).Result()
		_ = r.Close()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
	}
	return true
}
