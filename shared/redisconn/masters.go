package redisconn

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Masters follows which servers are Redis's masters — the one a Sentinel
// set names, or a Cluster's — and says so once when they change: one log
// line and a metric per failover, not one per command that met it.
//
//	herald_redis_master_changes_total        failovers seen
//	herald_redis_masters{addr}               1 for each master now
type Masters struct {
	client    redis.UniversalClient
	kind      Kind
	sentinels []string
	master    string
	logger    *slog.Logger
	every     time.Duration

	mu      sync.Mutex
	now     []string
	stop    chan struct{}
	done    chan struct{}
	reg     metric.Registration
	changes metric.Int64Counter
}

// FollowMasters starts following client's masters (a single server has
// nothing to follow: nil). Close stops it.
func FollowMasters(raw string, client redis.UniversalClient, kind Kind, logger *slog.Logger, mp metric.MeterProvider, every time.Duration) (*Masters, error) {
	if kind == Single {
		return nil, nil
	}
	m := &Masters{client: client, kind: kind, logger: logger, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	if kind == Sentinel {
		u, err := parse(raw)
		if err != nil {
			return nil, err
		}
		m.sentinels = strings.Split(u.Host, ",")
		m.master, _, _ = strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	}
	meter := mp.Meter("github.com/heraldhq/herald/shared/redisconn")
	var err error
	if m.changes, err = meter.Int64Counter("herald.redis.master_changes",
		metric.WithDescription("Redis failovers seen: the master (Sentinel) or the set of masters (Cluster) changed.")); err != nil {
		return nil, err
	}
	masters, err := meter.Int64ObservableGauge("herald.redis.masters",
		metric.WithDescription("1 for each Redis server that is a master now (Sentinel or Cluster)."))
	if err != nil {
		return nil, err
	}
	if m.reg, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, addr := range m.Now() {
			o.ObserveInt64(masters, 1, metric.WithAttributes(attribute.String("addr", addr)))
		}
		return nil
	}, masters); err != nil {
		return nil, err
	}
	m.now = m.read()
	go m.follow()
	return m, nil
}

// Now is the masters as last read.
func (m *Masters) Now() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.now)
}

// Close stops following.
func (m *Masters) Close() {
	close(m.stop)
	<-m.done
	_ = m.reg.Unregister()
}

func (m *Masters) follow() {
	defer close(m.done)
	t := time.NewTicker(m.every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		now := m.read()
		if now == nil {
			continue // not read this time: no change to tell
		}
		m.mu.Lock()
		before := m.now
		if m.kind == Cluster && len(now) < len(before) {
			// A master failed and no replica has its slots yet: the
			// failover is under way, and told once it is done.
			m.mu.Unlock()
			continue
		}
		m.now = now
		m.mu.Unlock()
		if before != nil && !slices.Equal(before, now) {
			m.changes.Add(context.Background(), 1)
			m.logger.Warn("redis failover: the masters changed", "kind", string(m.kind), "before", before, "now", now)
		}
	}
}

// read asks who the masters are; nil when nobody answered.
func (m *Masters) read() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if m.kind == Sentinel {
		for _, addr := range m.sentinels {
			sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
			hp, err := sc.GetMasterAddrByName(ctx, m.master).Result()
			_ = sc.Close()
			if err == nil && len(hp) == 2 {
				return []string{net.JoinHostPort(hp[0], hp[1])}
			}
		}
		return nil
	}
	shards, err := m.client.ClusterShards(ctx).Result()
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range shards {
		for _, n := range s.Nodes {
			if n.Role == "master" && n.Health == "online" {
				out = append(out, net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10)))
			}
		}
	}
	slices.Sort(out)
	return out
}
