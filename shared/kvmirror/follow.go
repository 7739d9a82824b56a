package kvmirror

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Follower hands every entry of a bucket, then every change to it, to a
// function: for a copy that is not a map by key (an index by topic, a
// count), where a Mirror would not do.
type Follower struct {
	bucket  string
	apply   func(jetstream.KeyValueEntry)
	watcher jetstream.KeyWatcher
	cancel  context.CancelFunc
	done    chan struct{}
	stop    sync.Once
}

// Follow binds to bucket and calls apply with each entry in it — a put, or
// a delete or purge (Operation says which) — then with each change, one
// at a time, in the order the bucket took them. It returns once every
// entry present when it began was applied (ctx bounds that wait, not the
// following). Stop ends it.
func Follow(ctx context.Context, js jetstream.JetStream, bucket string, apply func(jetstream.KeyValueEntry)) (*Follower, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", bucket, err)
	}
	// The watch outlives ctx and ends with Stop, which cancels its context
	// too: nats.go keeps a goroutine per watch until its context ends.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w, err := kv.WatchAll(wctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching %s: %w", bucket, err)
	}
	f := &Follower{bucket: bucket, apply: apply, watcher: w, cancel: cancel, done: make(chan struct{})}
	if err := f.load(ctx); err != nil {
		_ = w.Stop()
		cancel()
		return nil, err
	}
	go f.follow()
	return f, nil
}

// load applies the watch's updates up to its mark that every key present
// when it began was delivered.
func (f *Follower) load(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("loading %s: %w", f.bucket, ctx.Err())
		case entry, ok := <-f.watcher.Updates():
			if !ok {
				return fmt.Errorf("loading %s: the watch ended", f.bucket)
			}
			if entry == nil {
				return nil
			}
			f.apply(entry)
		}
	}
}

// follow applies updates until the watch is stopped.
func (f *Follower) follow() {
	defer close(f.done)
	for entry := range f.watcher.Updates() {
		if entry != nil {
			f.apply(entry)
		}
	}
}

// Stop ends the watch and waits for the last change to be applied.
func (f *Follower) Stop() {
	f.stop.Do(func() {
		_ = f.watcher.Stop()
		f.cancel()
	})
	<-f.done
}
