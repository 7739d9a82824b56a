// Package lock is the delivery workers' concurrency guard: a lease on a key in
// Redis, taken with SET key token NX PX ttl and given back only by its owner
// (compare-and-delete in one Lua script), so a worker whose lease expired can
// never release a lease another worker has since taken.
//
// A lease's TTL must exceed the longest time its holder may work on the
// guarded message (AckWait, with a margin), so that the holder's crash frees
// the key by itself, and a live holder is never overtaken.
package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/shared/redisconn"
)

var (
	// ErrHeld means another owner holds the lease now.
	ErrHeld = errors.New("lock: held by another owner")
	// ErrNotHeld means the lease expired or passed to another owner before
	// it was released or extended.
	ErrNotHeld = errors.New("lock: lease no longer held")
)

// Redis takes leases on one Redis (or a client-side-routed cluster).
// Concurrent acquires and releases share round trips (redisconn.Batcher).
type Redis struct {
	client redis.UniversalClient
	prefix string
	batch  *redisconn.Batcher
}

// NewRedis returns a locker whose keys are prefix+key.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix, batch: redisconn.NewBatcher(client)}
}

// Lease is a held lock.
type Lease struct {
	r     *Redis
	key   string
	token string
}

// Acquire takes the lease on key for ttl. It returns ErrHeld when another
// owner holds it, and any other error when Redis cannot answer — in which
// case the caller must not act as if it held the lease.
func (r *Redis) Acquire(ctx context.Context, key string, ttl time.Duration) (*Lease, error) {
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("lock: a lease needs a TTL of at least 1ms, not %s: it must free itself if its holder dies", ttl)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	l := &Lease{r: r, key: r.prefix + key, token: hex.EncodeToString(b[:])}
	cmd := redis.NewBoolCmd(ctx, "set", l.key, l.token, "px", ttl.Milliseconds(), "nx")
	_ = r.batch.Do(ctx, cmd)
	ok, err := cmd.Result()
	switch {
	case err != nil:
		return nil, fmt.Errorf("lock: redis: %w", err)
	case !ok:
		return nil, ErrHeld
	}
	return l, nil
}

var release = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`)

var extend = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)

// Release gives the lease back if it is still this owner's.
func (l *Lease) Release(ctx context.Context) error {
	cmd := redis.NewCmd(ctx, "evalsha", release.Hash(), 1, l.key, l.token)
	err := l.r.batch.Do(ctx, cmd)
	if redis.HasErrorPrefix(err, "NOSCRIPT") { // a Redis restarted since the script was loaded
		cmd = release.Eval(ctx, l.r.client, []string{l.key}, l.token)
	}
	n, err := cmd.Int()
	if err != nil {
		return fmt.Errorf("lock: redis: %w", err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// Extend resets the lease's TTL if it is still this owner's.
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	n, err := extend.Run(ctx, l.r.client, []string{l.key}, l.token, ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("lock: redis: %w", err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
