package resource

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// What a revision did, in the bucket's own terms (the KV-Operation header
// the client libraries read; a put has none).
const (
	opPut    = ""
	opDelete = "DEL"
)

// change is how one write is made.
type change struct {
	op string
	// expect, when set, is the revision the key must be at: 0 for none.
	expect *uint64
	// rollup removes the key's earlier revisions with this write.
	rollup bool
}

// publish writes one revision of key as the key-value client would, with
// who made it (Actor) in a header beside it: the bucket's history of a key
// is its audit trail (Changes).
func (s *Store[T]) publish(ctx context.Context, key string, data []byte, c change) (uint64, error) {
	m := s.message(ctx, key, data, c.op)
	if c.rollup {
		m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	}
	var opts []jetstream.PublishOpt
	if c.expect != nil {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(*c.expect))
	}
	ack, err := s.js.PublishMsg(ctx, m, opts...)
	if wrongRevision(err) {
		return 0, fmt.Errorf("%s %s: %w", s.kind.Name, key, ErrConflict)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: writing %s: %w", s.kind.Name, key, err)
	}
	return ack.Sequence, nil
}

// message is one revision of key as the key-value client writes it,
// naming who made it.
func (s *Store[T]) message(ctx context.Context, key string, data []byte, op string) *nats.Msg {
	m := nats.NewMsg("$KV." + s.kind.Bucket + "." + key)
	m.Data = data
	if op != opPut {
		m.Header.Set("KV-Operation", op)
	}
	if who := Actor(ctx); who != "" {
		m.Header.Set(ActorHeader, who)
	}
	return m
}

// wrongRevision is the server's refusal of a write whose expected revision
// is not the key's (10164 on replicated streams).
func wrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// create writes key if it holds no record: none ever, or a deleted one,
// whose delete marker is the revision to write over.
func (s *Store[T]) create(ctx context.Context, key string, data []byte) (uint64, error) {
	none := uint64(0)
	rev, err := s.publish(ctx, key, data, change{op: opPut, expect: &none})
	if !errors.Is(err, ErrConflict) {
		return rev, err
	}
	deleted, lerr := s.deletedAt(ctx, key)
	if lerr != nil {
		return 0, lerr
	}
	if deleted == 0 {
		return 0, fmt.Errorf("%s %s: %w", s.kind.Name, key, ErrExists)
	}
	rev, err = s.publish(ctx, key, data, change{op: opPut, expect: &deleted})
	if errors.Is(err, ErrConflict) {
		return 0, fmt.Errorf("%s %s: %w", s.kind.Name, key, ErrExists)
	}
	return rev, err
}

// deletedAt is the revision of key's delete marker, or 0 if its latest
// revision is a record.
func (s *Store[T]) deletedAt(ctx context.Context, key string) (uint64, error) {
	st, err := s.js.Stream(ctx, "KV_"+s.kind.Bucket)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", s.kind.Name, err)
	}
	msg, err := st.GetLastMsgForSubject(ctx, "$KV."+s.kind.Bucket+"."+key)
	if err != nil {
		return 0, fmt.Errorf("%s: reading %s: %w", s.kind.Name, key, err)
	}
	if msg.Header.Get("KV-Operation") == "" {
		return 0, nil
	}
	return msg.Sequence, nil
}

// Write is how Patch writes what its edit made.
type Write int

const (
	// Skip writes nothing: the edit changed nothing.
	Skip Write = iota
	// Save writes the record at the revision read.
	Save
	// Replace writes it at the revision read and removes every earlier
	// revision of the key with it: what the record leaves out (a secret)
	// is gone from the bucket, not only from its latest revision. The
	// bucket must allow rollups.
	Replace
)

// patchTries bounds Patch's attempts against other writers.
const patchTries = 5

// Patch reads the record at key (the zero T, found false, if there is
// none), lets edit change it and say how to write it, and writes it at the
// revision read — from the read again when another writer came first, up
// to five times, then ErrConflict. An error from edit is returned as it
// is, nothing written. It returns the record as written (or as read, when
// edit said Skip).
func (s *Store[T]) Patch(ctx context.Context, key string, edit func(v *T, found bool) (Write, error)) (T, error) {
	var zero T
	if err := checkKey(key); err != nil {
		return zero, err
	}
	for range patchTries {
		v, rev, err := s.Get(ctx, key)
		found := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return zero, err
		}
		w, err := edit(&v, found)
		if err != nil || w == Skip {
			return v, err
		}
		if err = s.patchOnce(ctx, key, v, rev, w); !errors.Is(err, ErrConflict) && !errors.Is(err, ErrExists) {
			return v, err
		}
	}
	return zero, fmt.Errorf("%s %s: %w", s.kind.Name, key, ErrConflict)
}

func (s *Store[T]) patchOnce(ctx context.Context, key string, v T, rev uint64, w Write) error {
	b, err := s.encode(v)
	if err != nil {
		return err
	}
	if rev == 0 {
		if err := s.checkCount(ctx, key); err != nil {
			return err
		}
		_, err = s.create(ctx, key, b)
		return err
	}
	_, err = s.publish(ctx, key, b, change{op: opPut, expect: &rev, rollup: w == Replace})
	return err
}
