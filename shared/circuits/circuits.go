// Package circuits shares the providers' circuit breaker states across
// processes. Each delivery process keeps its own breakers (a provider down
// for one is down for all soon enough); a Board writes each change to the
// KV bucket circuits, keyed by channel, provider and process, so that the
// console shows which providers are being skipped and where. An entry
// expires an hour after its last change (streams/KV_circuits): no entry
// means closed, or a process gone.
package circuits

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Bucket holds the states.
const Bucket = "circuits"

// State is one breaker's state in one process.
type State struct {
	Channel  string    `json:"channel"`
	Provider string    `json:"provider"`
	Process  string    `json:"process"`
	State    string    `json:"state"` // closed, open or half-open
	Since    time.Time `json:"since"`
}

// Board writes one process's changes. Note never blocks a breaker: changes
// queue, and a full queue keeps only the latest of each breaker.
type Board struct {
	kv      jetstream.KeyValue
	process string
	logger  *slog.Logger

	mu      sync.Mutex
	pending map[string]State
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// Open starts a board for process (a name unique among the running
// processes: the host name, say). Close stops it.
func Open(ctx context.Context, js jetstream.JetStream, process string, logger *slog.Logger) (*Board, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("circuits: bucket %s: %w", Bucket, err)
	}
	b := &Board{kv: kv, process: process, logger: logger, pending: map[string]State{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.write()
	return b, nil
}

// Note records that channel's breaker for provider entered state.
func (b *Board) Note(channel, provider, state string) {
	s := State{Channel: channel, Provider: provider, Process: b.process, State: state, Since: time.Now().UTC()}
	b.mu.Lock()
	b.pending[key(s)] = s
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Close writes what is queued, then stops.
func (b *Board) Close() {
	close(b.stop)
	<-b.done
}

func (b *Board) write() {
	defer close(b.done)
	for {
		select {
		case <-b.wake:
		case <-b.stop:
			b.flush()
			return
		}
		b.flush()
	}
}

func (b *Board) flush() {
	b.mu.Lock()
	pending := b.pending
	b.pending = map[string]State{}
	b.mu.Unlock()
	for k, s := range pending {
		v, _ := json.Marshal(s)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := b.kv.Put(ctx, k, v)
		cancel()
		if err != nil && b.logger != nil {
			b.logger.Warn("circuits: a breaker's state was not shared", "channel", s.Channel, "provider", s.Provider, "error", err)
		}
	}
}

// key is channel.provider.process, each made a valid key token.
func key(s State) string {
	return token(s.Channel) + "." + token(s.Provider) + "." + token(s.Process)
}

func token(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '=' {
			return r
		}
		return '_'
	}, s)
}

// List reads every state the bucket holds, by channel, provider and
// process.
func List(ctx context.Context, js jetstream.JetStream) ([]State, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("circuits: bucket %s: %w", Bucket, err)
	}
	keys, err := kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("circuits: %w", err)
	}
	var out []State
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue // expired or purged meanwhile
		}
		var s State
		if json.Unmarshal(e.Value(), &s) == nil {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b State) int {
		return strings.Compare(a.Channel+"\x00"+a.Provider+"\x00"+a.Process, b.Channel+"\x00"+b.Provider+"\x00"+b.Process)
	})
	return out, nil
}
