// Package ratelimit holds each tenant to its plan's rate: the generic cell
// rate algorithm (GCRA) in Redis, so every replica shares one count, by
// github.com/go-redis/redis_rate — a maintained implementation in one Lua
// script on Redis's own clock, which no replica's clock skews.
//
// GCRA keeps one timestamp per key (the theoretical arrival time of the next
// request), so a tenant costs one small key whatever its rate, and the
// answer says exactly how long to wait: what a 429's Retry-After and the
// IETF RateLimit headers need.
package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Limit is a rate: so many a minute, and so many at once after a quiet
// spell.
type Limit struct {
	PerMinute int
	Burst     int
}

// Decision is one request's answer.
type Decision struct {
	// Allowed: at least one was taken.
	Allowed bool
	// Granted is how many were taken: 0 or 1 for Allow, up to n for
	// AllowUpTo.
	Granted int
	Limit   Limit
	// Remaining is how many more would be allowed now.
	Remaining int
	// RetryAfter is how long until one more is allowed; zero when allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until the limit is back to its full burst.
	ResetAfter time.Duration
}

// Limiter counts in Redis.
type Limiter struct {
	rl     *redis_rate.Limiter
	prefix string
}

// New is a limiter on rdb whose keys start with prefix (the deployment's
// redis.prefix; redis_rate adds "rate:").
func New(rdb redis.UniversalClient, prefix string) *Limiter {
	return &Limiter{rl: redis_rate.NewLimiter(rdb), prefix: prefix}
}

// Allow takes one from key's allowance under limit, if there is one. An
// error means Redis did not answer: the caller decides whether that fails
// open or closed.
func (l *Limiter) Allow(ctx context.Context, key string, limit Limit) (Decision, error) {
	return l.AllowN(ctx, key, limit, 1)
}

// AllowN takes n (at least 1) from key's allowance under limit, all or
// none, in one round trip: a request that costs n is held to the rate as n
// requests. More than the burst is never allowed; refused, RetryAfter says
// when n will be there.
func (l *Limiter) AllowN(ctx context.Context, key string, limit Limit, n int) (Decision, error) {
	limit.Burst = max(limit.Burst, 1)
	res, err := l.rl.AllowN(ctx, l.prefix+key, limit.gcra(), max(n, 1))
	return decide(res, limit, err)
}

// AllowUpTo takes as many of n (at least 1) from key's allowance as there
// are, in one round trip: a worker about to take a batch asks once for the
// batch, not once for each. Granted says how many; none, and RetryAfter
// says when one more will be. The script charges what is left when it is
// less than n, a fraction included, and grants the whole number: a partial
// grant forgoes less than one.
func (l *Limiter) AllowUpTo(ctx context.Context, key string, limit Limit, n int) (Decision, error) {
	limit.Burst = max(limit.Burst, 1)
	res, err := l.rl.AllowAtMost(ctx, l.prefix+key, limit.gcra(), max(n, 1))
	return decide(res, limit, err)
}

// gcra is the limit as redis_rate takes it.
func (limit Limit) gcra() redis_rate.Limit {
	return redis_rate.Limit{Rate: limit.PerMinute, Burst: limit.Burst, Period: time.Minute}
}

// decide is redis_rate's answer to a request under limit (its burst at
// least 1) as a Decision.
func decide(res *redis_rate.Result, limit Limit, err error) (Decision, error) {
	if err != nil {
		return Decision{}, fmt.Errorf("rate limit: %w", err)
	}
	d := Decision{Allowed: res.Allowed > 0, Granted: max(res.Allowed, 0), Limit: limit,
		Remaining: res.Remaining, ResetAfter: max(res.ResetAfter, 0)}
	if !d.Allowed {
		d.RetryAfter = max(res.RetryAfter, time.Millisecond)
	}
	return d, nil
}

// Headers are the IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers)
// that tell a client its policy and where it stands, and, when refused,
// Retry-After in whole seconds, rounded up. The policy's quota is the
// burst, and its window how long the burst takes to come back: a plan of
// 5 a minute is q=5;w=60.
func (d Decision) Headers(policy string) map[string]string {
	window := seconds(time.Duration(d.Limit.Burst) * time.Minute / time.Duration(max(d.Limit.PerMinute, 1)))
	h := map[string]string{
		"RateLimit-Policy": fmt.Sprintf("%q;q=%d;w=%d", policy, d.Limit.Burst, window),
		"RateLimit":        fmt.Sprintf("%q;r=%d;t=%d", policy, d.Remaining, seconds(d.ResetAfter)),
	}
	if !d.Allowed {
		h["Retry-After"] = strconv.Itoa(seconds(d.RetryAfter))
	}
	return h
}

func seconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }
