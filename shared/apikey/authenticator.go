package apikey

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrUnauthorized is every refusal: a malformed, unknown or revoked key,
// or a wrong secret. It never says which, and never quotes the key.
var ErrUnauthorized = errors.New("apikey: unauthorized")

// ErrUnavailable is every well-formed key presented once the Authenticator
// no longer follows the bucket (Stop, or its connection closed for good):
// it would not hear of a revocation, so it takes no key, but the key may
// be good — the caller is to try again, not to give up on it.
var ErrUnavailable = errors.New("apikey: the keys cannot be checked: their watch has ended")

// AuthConfig configures an Authenticator.
type AuthConfig struct {
	// LastUsedEvery is how often, at most, a key's last use is written.
	// Defaults to a minute.
	LastUsedEvery time.Duration
	// LastUsedQueue is how many last-use writes may wait; when it is full
	// a use is not written, and a later request of the key tries again.
	// Defaults to 1024.
	LastUsedQueue int
	// WriteTimeout bounds each last-use write, and the writing of those
	// still queued when the Authenticator stops. Defaults to 5 s.
	WriteTimeout time.Duration
	// Now is the clock that stamps uses. Defaults to time.Now.
	Now func() time.Time
	// Logger reports last-use writes that failed. Defaults to discarding.
	Logger *slog.Logger
}

// WithDefaults fills in what is not set.
func (c AuthConfig) WithDefaults() AuthConfig {
	c.LastUsedEvery = cmp.Or(c.LastUsedEvery, time.Minute)
	c.LastUsedQueue = cmp.Or(c.LastUsedQueue, 1024)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, 5*time.Second)
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	return c
}

// Validate says what is wrong with the settings, by field.
func (c AuthConfig) Validate() error {
	switch {
	case c.LastUsedEvery < 0:
		return fmt.Errorf("last_used_every: %s is negative", c.LastUsedEvery)
	case c.LastUsedQueue < 0:
		return fmt.Errorf("last_used_queue: %d is negative", c.LastUsedQueue)
	case c.WriteTimeout < 0:
		return fmt.Errorf("write_timeout: %s is negative", c.WriteTimeout)
	}
	return nil
}

// known is a key as the Authenticator holds it.
type known struct {
	record   record
	digest   [sha256.Size]byte
	revision uint64
	// usedAt is when a use was last written or queued, Unix nanoseconds;
	// 0 if never.
	usedAt atomic.Int64
}

// use is a last use to write.
type use struct {
	key *known
	at  time.Time
}

// Authenticator checks presented keys against every key of the bucket,
// held in memory and kept current by a watch.
type Authenticator struct {
	keys *Keys
	cfg  AuthConfig

	mu    sync.RWMutex
	known map[string]*known // by id; revoked keys are dropped

	uses     chan use
	watcher  jetstream.KeyWatcher
	cancel   context.CancelFunc // ends the watch
	stopping chan struct{}
	stopped  atomic.Bool
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// NewAuthenticator makes an Authenticator; Start loads the keys.
func NewAuthenticator(keys *Keys, cfg AuthConfig) (*Authenticator, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("apikey: %w", err)
	}
	return &Authenticator{
		keys:     keys,
		cfg:      cfg,
		known:    map[string]*known{},
		uses:     make(chan use, cfg.LastUsedQueue),
		stopping: make(chan struct{}),
	}, nil
}

// Start loads every key and returns once they are all known; from then on
// the watch brings new keys and revocations, and a writer records uses,
// until Stop. ctx bounds the start only.
func (a *Authenticator) Start(ctx context.Context) error {
	// The watch lives as long as the context it is made with: one of its
	// own, which Stop cancels, and ctx too until the keys are loaded.
	var watchCtx context.Context
	watchCtx, a.cancel = context.WithCancel(context.Background())
	detach := context.AfterFunc(ctx, a.cancel)
	w, err := a.keys.kv.WatchAll(watchCtx)
	if err != nil {
		a.cancel()
		return fmt.Errorf("apikey: watch %s: %w", Bucket, err)
	}
	a.watcher = w
	loaded, ended := make(chan struct{}), make(chan struct{})
	a.wg.Add(2)
	go a.follow(loaded, ended)
	go a.writeUses()
	select {
	case <-loaded:
		if detach() {
			return nil
		}
		err = fmt.Errorf("apikey: loading keys: %w", ctx.Err())
	case <-ended:
		err = errors.New("apikey: the watch ended before the keys were loaded")
	case <-ctx.Done():
		err = fmt.Errorf("apikey: loading keys: %w", ctx.Err())
	}
	a.Stop()
	return err
}

// Stop ends the watch, writes the uses still queued (for WriteTimeout at
// most) and returns when both are done. A stopped Authenticator no longer
// hears of revocations, so it takes no key: ErrUnavailable.
func (a *Authenticator) Stop() {
	a.stopOnce.Do(func() {
		a.stopped.Store(true)
		// Through its context, not KeyWatcher.Stop, which also deletes
		// the consumer and so waits for JetStream's timeout when the
		// server is out of reach. Left alone, the server drops the
		// consumer soon (it is ephemeral).
		if a.cancel != nil {
			a.cancel()
		}
		close(a.stopping)
		a.wg.Wait()
	})
}

// follow applies what the watch brings, closing loaded once it has
// brought what the bucket held at the start, and ended when it closes: at
// Stop, or when the connection is closed for good (a reconnect keeps it).
func (a *Authenticator) follow(loaded, ended chan<- struct{}) {
	defer a.wg.Done()
	defer close(ended)
	// Without its watch it would not hear of revocations: it takes none.
	defer a.stopped.Store(true)
	// Reading on to the end, whatever happens, lets the watch's callback,
	// which blocks on a full channel, finish and close it.
	for e := range a.watcher.Updates() {
		switch {
		case e != nil:
			a.apply(e)
		case loaded != nil: // the watch marks the end of what was there once
			close(loaded)
			loaded = nil
		}
	}
}

// apply makes one change of the bucket known.
func (a *Authenticator) apply(e jetstream.KeyValueEntry) {
	var k *known
	if e.Operation() == jetstream.KeyValuePut {
		k = a.decode(e)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.known[e.Key()]
	if k == nil || !k.record.Revoked.IsZero() {
		delete(a.known, e.Key())
		return
	}
	if old != nil { // a use queued here may not be in the bucket yet
		k.usedAt.Store(max(k.usedAt.Load(), old.usedAt.Load()))
	}
	a.known[e.Key()] = k
}

// decode reads an entry, or returns nil (refusing the key) if it cannot.
func (a *Authenticator) decode(e jetstream.KeyValueEntry) *known {
	r, err := decode(e)
	if err == nil && r.ID != e.Key() {
		err = fmt.Errorf("apikey: entry %s holds key %s", e.Key(), r.ID)
	}
	if err == nil {
		err = r.check()
	}
	var digest [sha256.Size]byte
	if err == nil {
		digest, err = r.digest()
	}
	if err != nil {
		a.cfg.Logger.Error("api key unreadable: it is refused", "error", err)
		return nil
	}
	k := &known{record: r, digest: digest, revision: e.Revision()}
	if !r.LastUsed.IsZero() {
		k.usedAt.Store(r.LastUsed.UnixNano())
	}
	return k
}

// Authenticate returns the key presented, ErrUnauthorized, or
// ErrUnavailable once the watch has ended. It reads memory only.
func (a *Authenticator) Authenticate(_ context.Context, presented string) (Key, error) {
	p, err := parse(presented)
	if err != nil {
		return Key{}, ErrUnauthorized
	}
	k, err := a.lookup(p.id)
	if err != nil {
		return Key{}, err
	}
	if subtle.ConstantTimeCompare(k.digest[:], p.digest[:]) != 1 {
		return Key{}, ErrUnauthorized
	}
	a.noteUse(k)
	return k.public(), nil
}

// Active returns the key with this id while it is known and not revoked,
// ErrUnauthorized once it is revoked (or unknown), ErrUnavailable once the
// watch has ended: what a session opened with the key asks before each
// request, so it ends with the key, as soon as the watch brings the
// revocation. It reads memory only, and records no use.
func (a *Authenticator) Active(_ context.Context, id string) (Key, error) {
	k, err := a.lookup(id)
	if err != nil {
		return Key{}, err
	}
	return k.public(), nil
}

// lookup is the key with this id, if the Authenticator still follows the
// bucket and knows it.
func (a *Authenticator) lookup(id string) (*known, error) {
	if a.stopped.Load() {
		return nil, ErrUnavailable
	}
	a.mu.RLock()
	k := a.known[id]
	a.mu.RUnlock()
	if k == nil {
		return nil, ErrUnauthorized
	}
	return k, nil
}

// public is the key as callers get it: theirs to change, not the cache's.
func (k *known) public() Key {
	key := k.record.Key
	key.Scopes = slices.Clone(key.Scopes)
	return key
}

// noteUse queues a write of the key's last use, unless one was written or
// queued less than LastUsedEvery ago. It never waits.
func (a *Authenticator) noteUse(k *known) {
	now := a.cfg.Now()
	last := k.usedAt.Load()
	if now.UnixNano()-last < int64(a.cfg.LastUsedEvery) || !k.usedAt.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	select {
	case a.uses <- use{key: k, at: now}:
	default: // the queue is full: let a later request try again
		k.usedAt.CompareAndSwap(now.UnixNano(), last)
	}
}

// writeUses writes queued uses until Stop, then those still queued.
func (a *Authenticator) writeUses() {
	defer a.wg.Done()
	for {
		select {
		case u := <-a.uses:
			ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
			a.writeUse(ctx, u)
			cancel()
		case <-a.stopping:
			ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
			defer cancel()
			for {
				select {
				case u := <-a.uses:
					a.writeUse(ctx, u)
				default:
					return
				}
			}
		}
	}
}

// writeUse records u over the revision the watch brought. A conflict means
// the key changed since — another replica recorded a use, or the key was
// revoked — so it reads the key again and writes only if it is still
// active and its last use is still older than LastUsedEvery.
func (a *Authenticator) writeUse(ctx context.Context, u use) {
	r, rev := u.key.record, u.key.revision
	for range 3 {
		r.LastUsed = u.at.UTC()
		err := a.keys.update(ctx, r, rev)
		if !errors.Is(err, errConflict) {
			if err != nil {
				a.cfg.Logger.Warn("api key: last use not recorded", "key", r.ID, "error", err)
			}
			return
		}
		r, rev, err = a.keys.get(ctx, r.ID)
		if err != nil || !r.Revoked.IsZero() || r.LastUsed.After(u.at.Add(-a.cfg.LastUsedEvery)) {
			return
		}
	}
}
