package resource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/nats-io/nats.go/jetstream"
)

// ActorHeader is the header of a revision that names who wrote it.
const ActorHeader = "Herald-Actor"

// maxActor bounds an actor as recorded.
const maxActor = 128

type actorKey struct{}

// WithActor returns ctx carrying who makes the changes done with it (an
// API key's id, "cli", "inbound:sendgrid"); every write made with it
// records it beside the revision. Control characters are dropped and it
// is cut to 128 bytes: it lands in a header.
func WithActor(ctx context.Context, who string) context.Context {
	who = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, who)
	if len(who) > maxActor {
		who = strings.ToValidUTF8(who[:maxActor], "")
	}
	return context.WithValue(ctx, actorKey{}, who)
}

// Actor is who WithActor says makes the changes done with ctx, or "".
func Actor(ctx context.Context) string {
	who, _ := ctx.Value(actorKey{}).(string)
	return who
}

// Change is one revision of a record: what was done, by whom, when.
type Change struct {
	Revision uint64
	// Deleted: the revision removed the record; otherwise it wrote it.
	Deleted bool
	// Actor is who wrote it (WithActor), "" when the writer did not say.
	Actor string
	Time  time.Time
}

// Changes are the revisions the bucket keeps of key, oldest first (its
// stream keeps the last few of each key, and a Replace forgets the ones
// before it): the key's audit trail. The kind's NotFound if it has none.
func (s *Store[T]) Changes(ctx context.Context, key string) ([]Change, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	entries, err := s.kv.History(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, s.kind.notFound()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: history of %s: %w", s.kind.Name, key, err)
	}
	st, err := s.js.Stream(ctx, "KV_"+s.kind.Bucket)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.kind.Name, err)
	}
	out := make([]Change, 0, len(entries))
	for _, e := range entries {
		msg, err := st.GetMsg(ctx, e.Revision())
		if err != nil {
			return nil, fmt.Errorf("%s: %s revision %d: %w", s.kind.Name, key, e.Revision(), err)
		}
		out = append(out, Change{Revision: e.Revision(), Deleted: e.Operation() != jetstream.KeyValuePut,
			Actor: msg.Header.Get(ActorHeader), Time: e.Created()})
	}
	return out, nil
}
