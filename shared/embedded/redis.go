package embedded

import (
	"cmp"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Redis is an in-process Redis-protocol server (miniredis) for development
// when no REDIS_URL is given. Keys expire on the wall clock, as in Redis,
// to within ttlTick. It keeps data in memory only: that is enough for
// locks, which are short-lived by design; the delivery ledger lives in
// JetStream.
type Redis struct {
	m    *miniredis.Miniredis
	stop chan struct{}
	done chan struct{}
}

// ttlTick is how often the keys' TTLs are moved on. miniredis's own wall
// clock (ClockTTL) moves them at every command, walking every key in sorted
// order each time: with the tens of thousands of keys a busy herald dev
// keeps (an order's revisions are remembered for a week), every command
// cost milliseconds and a 1,500-delivery run crawled at 200 a second. A
// tick walks them once per ttlTick instead; a key expires at most this much
// late, never early.
const ttlTick = 50 * time.Millisecond

// StartRedis listens on listen (host:port; port 0 picks a free one).
// Defaults to 127.0.0.1:0.
func StartRedis(listen string) (*Redis, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(cmp.Or(listen, "127.0.0.1:0")); err != nil {
		return nil, fmt.Errorf("embedded redis: %w", err)
	}
	r := &Redis{m: m, stop: make(chan struct{}), done: make(chan struct{})}
	go r.tick()
	return r, nil
}

// tick moves the keys' TTLs on by the wall clock's time, until Close.
func (r *Redis) tick() {
	defer close(r.done)
	t := time.NewTicker(ttlTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			r.m.FastForward(now.Sub(last))
			last = now
		}
	}
}

// URL is the redis:// URL clients connect to.
func (r *Redis) URL() string { return "redis://" + r.m.Addr() }

// Close stops the server.
func (r *Redis) Close() {
	close(r.stop)
	<-r.done
	r.m.Close()
}
