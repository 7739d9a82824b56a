package redisconn

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// maxBatch bounds the commands one round trip carries.
const maxBatch = 256

// Batcher sends the commands of concurrent callers to Redis together: one
// pipeline, one write and one read for all of them, instead of a round trip
// each. There is no background goroutine: the first caller to find no
// round trip under way leads one, for itself and everyone queued; callers
// queued meanwhile wait, and the first of them leads the next. Under load
// batches grow by themselves; alone, a command goes out at once.
//
// Pipelining changes nothing of each command's meaning: Redis runs them one
// by one, in order, each as atomic as it was alone.
//
// The leases (shared/lock) and the orders' sequences (shared/ordering) each
// keep one: every delivery takes a lease, gives it back and settles its
// revision, and on two cores a round trip each was a tenth of a delivery's
// cost.
type Batcher struct {
	client  redis.UniversalClient
	mu      sync.Mutex
	queue   []*call
	leading bool
}

// NewBatcher sends its callers' commands to client.
func NewBatcher(client redis.UniversalClient) *Batcher { return &Batcher{client: client} }

type call struct {
	cmd      redis.Cmder
	wake     chan struct{}
	finished bool // set before wake: the result is in cmd; else, lead
}

// Do runs cmd, with whatever other commands are waiting, and returns when
// its result is in. It does not give up on ctx: a command sent cannot be
// taken back (a lease taken while its caller stopped waiting would be held
// for nothing until its TTL), and the client's own timeouts bound the wait.
func (b *Batcher) Do(ctx context.Context, cmd redis.Cmder) error {
	c := &call{cmd: cmd, wake: make(chan struct{}, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	lead := !b.leading
	b.leading = true
	b.mu.Unlock()
	if !lead {
		if <-c.wake; c.finished {
			return cmd.Err()
		}
	}
	for !c.finished {
		b.mu.Lock()
		batch := b.queue[:min(len(b.queue), maxBatch)]
		b.queue = b.queue[len(batch):]
		b.mu.Unlock()
		b.exec(context.WithoutCancel(ctx), batch, c)
	}
	b.mu.Lock()
	if len(b.queue) > 0 {
		b.queue[0].wake <- struct{}{} // the next leader
	} else {
		b.leading = false
	}
	b.mu.Unlock()
	return cmd.Err()
}

// exec sends batch in one pipeline and wakes every caller in it but self.
// Per-command results (and errors) land in each command.
func (b *Batcher) exec(ctx context.Context, batch []*call, self *call) {
	pipe := b.client.Pipeline()
	for _, c := range batch {
		_ = pipe.Process(ctx, c.cmd)
	}
	_, _ = pipe.Exec(ctx)
	b.followCluster(ctx, batch)
	for _, c := range batch {
		c.finished = true
		if c != self {
			c.wake <- struct{}{}
		}
	}
}

// followCluster asks a cluster client to read the cluster's slots again when
// a command could not reach its node: after a master dies and its replica
// takes over, the client would otherwise keep dialling the dead address
// for its slots (go-redis reloads on MOVED, which a dead node never sends).
func (b *Batcher) followCluster(ctx context.Context, batch []*call) {
	cc, ok := b.client.(*redis.ClusterClient)
	if !ok {
		return
	}
	for _, c := range batch {
		var answered redis.Error
		if err := c.cmd.Err(); err != nil && !errors.As(err, &answered) {
			cc.ReloadState(ctx)
			return
		}
	}
}
