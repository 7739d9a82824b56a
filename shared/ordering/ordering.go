// Package ordering keeps an order's revisions in order for each recipient
// and channel: the router registers every revision it publishes (Register)
// before any of them can reach a worker, a worker asks whether an earlier
// revision is still pending (Park, only when the router said one was, or
// may be: a revision past a gap) and, once its own revision is settled,
// releases the next (Settle).
//
// Each sequence (tenant, order, channel, recipient) is a sorted set in Redis
// scored by revision — for the same revision, in the router's order — with
// its parked deliveries beside it in a hash, the members already settled in
// a set and the highest revision registered, all under one hash tag so a
// Redis Cluster keeps them on one node and each step is one Lua script,
// atomic. A parked delivery is the message itself: settling its
// predecessor hands it back to be published again.
package ordering

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/shared/redisconn"
)

// Slot is one revision of a sequence: Member (a dedupe key) at Revision.
type Slot struct {
	Sequence string
	Member   string
	Revision int
}

// Holder is the revision a parked delivery waits behind.
type Holder struct {
	Member   string
	Revision int
}

// Released is a parked delivery its predecessor's settlement hands back.
type Released struct {
	Member string
	Data   []byte
}

// Redis keeps sequences on one Redis (or a client-side-routed cluster).
type Redis struct {
	client redis.UniversalClient
	batch  *redisconn.Batcher
	prefix string
	ttl    time.Duration
}

// DefaultTTL is how long a sequence is kept after its last registration:
// an order not revised for a week is not held for an older revision any
// more (its members' deliveries have long been dead-lettered or sent).
const DefaultTTL = 7 * 24 * time.Hour

// New returns sequences whose keys start with prefix.
func New(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, batch: redisconn.NewBatcher(client), prefix: prefix, ttl: DefaultTTL}
}

// keys are a sequence's sorted set, parked hash, settled set and highest
// revision registered.
func (r *Redis) keys(sequence string) []string {
	base := r.prefix + "order:{" + sequence + "}"
	return []string{base, base + ":parked", base + ":settled", base + ":high"}
}

// register adds a member unless it is there or was settled: an event
// routed again must not bring back a revision already sent, which nothing
// would settle again. A revision's n-th member scores rev + n/1024, so
// members of one revision keep the router's order. It returns 1 when a
// member is ahead of this one, and when the revision is more than one past
// the highest registered before it (KEYS[4]): the revision between may be
// in another router worker's hands, not registered yet — two revisions
// routed in the same instant — and the worker is to ask again at its send.
var register = redis.NewScript(`
local rev = tonumber(ARGV[2])
local high = tonumber(redis.call('GET', KEYS[4]) or '0')
if rev > high then
  redis.call('SET', KEYS[4], rev, 'PX', ARGV[3])
else
  redis.call('PEXPIRE', KEYS[4], ARGV[3])
end
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s then
  if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1 then return 0 end
  local n = math.min(redis.call('ZCOUNT', KEYS[1], rev, '(' .. (rev + 1)), 1023)
  s = rev + n / 1024
  redis.call('ZADD', KEYS[1], s, ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if rev > high + 1 then return 1 end
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
if head[1] == ARGV[1] then return 0 end
return 1
`)

// Register records each slot's revision as pending, in one round trip, and
// reports for each whether an earlier one was pending then, or may be
// being routed (a gap in the revisions): a delivery with none ahead is sent
// without asking again.
func (r *Redis) Register(ctx context.Context, slots []Slot) ([]bool, error) {
	if len(slots) == 0 {
		return nil, nil
	}
	cmds, err := r.registerAll(ctx, slots, register.EvalSha)
	if redis.HasErrorPrefix(err, "NOSCRIPT") { // first use, or a Redis restarted since
		cmds, err = r.registerAll(ctx, slots, register.Eval)
	}
	if err != nil {
		return nil, fmt.Errorf("ordering: registering %d revisions: %w", len(slots), err)
	}
	ahead := make([]bool, len(slots))
	for i, c := range cmds {
		n, err := c.Int()
		if err != nil {
			return nil, fmt.Errorf("ordering: registering %s: %w", slots[i].Member, err)
		}
		ahead[i] = n == 1
	}
	return ahead, nil
}

// registerAll runs the register script for every slot, in one pipeline.
func (r *Redis) registerAll(ctx context.Context, slots []Slot,
	eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd,
) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(slots))
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range slots {
			cmds[i] = eval(ctx, p, r.keys(s.Sequence), s.Member, s.Revision, r.ttl.Milliseconds())
		}
		return nil
	})
	return cmds, err
}

// park keeps the delivery while a member is ahead of it, and returns the
// one just before it; nothing when it is first (or unknown: a sequence
// lost with Redis's data holds nothing it no longer knows).
var park = redis.NewScript(`
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s then return false end
local before = redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. s, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
if #before == 0 then return false end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return before
`)

// Park keeps data, the delivery of member, until the revisions before it
// are settled, and says which one it waits behind; ok is false when none is
// pending any more, and the delivery is to be sent now.
func (r *Redis) Park(ctx context.Context, sequence, member string, data []byte) (Holder, bool, error) {
	v, err := park.Run(ctx, r.client, r.keys(sequence), member, data, r.ttl.Milliseconds()).StringSlice()
	switch {
	case errors.Is(err, redis.Nil):
		return Holder{}, false, nil
	case err != nil:
		return Holder{}, false, fmt.Errorf("ordering: parking %s: %w", member, err)
	case len(v) != 2:
		return Holder{}, false, fmt.Errorf("ordering: parking %s: unexpected answer %q", member, v)
	}
	var score float64
	if _, err := fmt.Sscan(v[1], &score); err != nil {
		return Holder{}, false, fmt.Errorf("ordering: parking %s: score %q: %w", member, v[1], err)
	}
	return Holder{Member: v[0], Revision: int(math.Floor(score))}, true, nil
}

// settle removes a member from its sequence, drops its parked copy,
// remembers it as settled (an event routed again must not bring it back),
// and returns the next revision's parked delivery, if it is parked.
var settle = redis.NewScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
if #head == 0 then return false end
local data = redis.call('HGET', KEYS[2], head[1])
if not data then return false end
return {head[1], data}
`)

// Settle records member's revision as settled and returns the next
// revision's delivery if it is parked, to be published again. It is the
// hot path — every ordered delivery settles — so it is one script sent
// with the other workers' settlements (redisconn.Batcher): one round trip
// for many. The parked copy stays until its own member settles, so a
// release lost between this and its publication is handed back by the
// next Settle of the sequence (a redelivered copy's).
func (r *Redis) Settle(ctx context.Context, sequence, member string) (*Released, error) {
	keys := r.keys(sequence)
	args := []any{"evalsha", settle.Hash(), len(keys)}
	for _, k := range keys {
		args = append(args, k)
	}
	cmd := redis.NewCmd(ctx, append(args, member, r.ttl.Milliseconds())...)
	err := r.batch.Do(ctx, cmd)
	if redis.HasErrorPrefix(err, "NOSCRIPT") { // first use, or a Redis restarted since
		cmd = settle.Eval(ctx, r.client, keys, member, r.ttl.Milliseconds())
	}
	v, err := cmd.StringSlice()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("ordering: settling %s: %w", member, err)
	case len(v) != 2:
		return nil, fmt.Errorf("ordering: settling %s: unexpected answer of %d values", member, len(v))
	}
	return &Released{Member: v[0], Data: []byte(v[1])}, nil
}
