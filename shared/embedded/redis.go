package embedded

import (
	"cmp"
	"fmt"

	"github.com/alicebob/miniredis/v2"
)

// Redis is an in-process Redis-protocol server (miniredis) for development
// when no REDIS_URL is given. Keys expire on the wall clock, as in Redis.
// It keeps data in memory only: that is enough for locks, which are
// short-lived by design; the delivery ledger lives in JetStream.
type Redis struct {
	m *miniredis.Miniredis
}

// StartRedis listens on listen (host:port; port 0 picks a free one).
// Defaults to 127.0.0.1:0.
func StartRedis(listen string) (*Redis, error) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.StartAddr(cmp.Or(listen, "127.0.0.1:0")); err != nil {
		return nil, fmt.Errorf("embedded redis: %w", err)
	}
	return &Redis{m: m}, nil
}

// URL is the redis:// URL clients connect to.
func (r *Redis) URL() string { return "redis://" + r.m.Addr() }

// Close stops the server.
func (r *Redis) Close() { r.m.Close() }
