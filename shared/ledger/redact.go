package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrInFlight: the notification is not settled. A worker holds its entry
// and will write it back, address and all; it can be redacted once it
// settles.
var ErrInFlight = errors.New("ledger: the notification is still being sent")

// Redact rewrites a tenant's notification (by id, as ByID reads it) with
// mask applied to every text that may hold its recipient's address — the
// recipient, the dedupe key, the reason, each attempt's error and note,
// each provider report's recipient and detail — and without its delivery
// message, which holds the address too: a notification failed but
// retryable becomes failed for good, for nobody is left to resend it to.
// The entry stays at its key, in its state, with its counts, so it is
// still delivered, never sent again, and counted once. Every earlier
// revision goes with the write (a rollup), and the write is not an outcome
// (Entry.Outcome): the ledger's readers — the notification index, the
// webhook feed — take it as a later revision of the same state, and tell
// nothing again. It says whether the entry changed; ErrNotFound when there
// is none, ErrInFlight when it is not settled.
func (l *Ledger) Redact(ctx context.Context, tenant, id string, mask func(string) string) (bool, error) {
	for range redactTries {
		e, err := l.ByID(ctx, tenant, id)
		if err != nil {
			return false, err
		}
		if !e.State.Settled() {
			return false, fmt.Errorf("%w: %s is %s", ErrInFlight, id, e.State)
		}
		r, changed := redacted(e, mask)
		if !changed {
			return false, nil
		}
		err = l.rewrite(ctx, &r)
		if !errors.Is(err, ErrConflict) {
			return err == nil, err
		}
	}
	return false, fmt.Errorf("ledger: redacting %s: %w", id, ErrConflict)
}

// redactTries bounds Redact's attempts against other writers.
const redactTries = 5

// redacted is e with mask applied and its delivery message dropped, and
// whether that changed anything.
func redacted(e Entry, mask func(string) string) (Entry, bool) {
	before, _ := json.Marshal(e) // a struct of plain fields: cannot fail
	e.Recipient, e.DedupeKey, e.Reason = mask(e.Recipient), mask(e.DedupeKey), mask(e.Reason)
	e.Attempts = append([]Attempt(nil), e.Attempts...)
	for i := range e.Attempts {
		e.Attempts[i].Error, e.Attempts[i].Note = mask(e.Attempts[i].Error), mask(e.Attempts[i].Note)
	}
	e.Reports = append(e.Reports[:0:0], e.Reports...)
	for i := range e.Reports {
		e.Reports[i].Recipient, e.Reports[i].Detail = mask(e.Reports[i].Recipient), mask(e.Reports[i].Detail)
	}
	e.Delivery, e.Retryable = nil, false
	after, _ := json.Marshal(e)
	return e, string(before) != string(after)
}

// rewrite writes e at the revision it was read, dropping the earlier
// ones, stamped now: after SettledAt, so that the write is no outcome.
func (l *Ledger) rewrite(ctx context.Context, e *Entry) error {
	e.UpdatedAt = time.Now().UTC()
	if !e.UpdatedAt.After(e.SettledAt) {
		e.UpdatedAt = e.SettledAt.Add(time.Microsecond)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	m := nats.NewMsg("$KV." + Bucket + "." + e.key)
	m.Data = b
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	ack, err := l.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(e.revision))
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return ErrConflict
	}
	if err != nil {
		return fmt.Errorf("ledger: rewriting %s: %w", e.NotificationID, err)
	}
	e.revision, e.stored, e.indexed = ack.Sequence, e.State, false
	return nil
}

// To are the ids of the tenant's notifications whose recipient is one of
// addresses (without case), found by reading every entry the tenant has:
// for a deployment without the notification index, which finds them by
// index. Its cost grows with the tenant's notifications in the ledger's
// retention.
func (l *Ledger) To(ctx context.Context, tenant string, addresses []string) ([]string, error) {
	if !tenantPattern.MatchString(tenant) {
		return nil, fmt.Errorf("ledger: %q is not a tenant", tenant)
	}
	keys, err := l.kv.ListKeysFiltered(ctx, tenant+".>")
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: listing %s's entries: %w", tenant, err)
	}
	defer func() { _ = keys.Stop() }()
	var ids []string
	for key := range keys.Keys() {
		e, err := l.get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // expired since it was listed
		}
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(addresses, func(a string) bool { return strings.EqualFold(a, e.Recipient) }) {
			ids = append(ids, "ntf_"+strings.TrimPrefix(key, tenant+"."))
		}
	}
	return ids, nil
}
