package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/nats-io/nats.go/jetstream"
)

// IDBucket indexes the ledger by notification id, declared in
// streams/KV_notification_ids: notification id → its tenant and dedupe
// key. A notification id is a digest of its dedupe key (notification.ID)
// and cannot be turned back into one, so without the index reading a
// notification by its id would mean scanning the ledger.
const IDBucket = "notification_ids"

// ErrNotFound means no notification has this id, as far as the ledger
// knows: never recorded, or forgotten after the retention.
var ErrNotFound = errors.New("ledger: no such notification")

// idRef is what the index keeps for one notification id.
type idRef struct {
	Tenant    string `json:"tenant"`
	DedupeKey string `json:"dedupe_key"`
}

// idPattern is notification.ID's shape; anything else is no KV key and
// no notification.
var idPattern = regexp.MustCompile(`^ntf_[0-9a-f]{24}$`)

// index names a new entry by its notification id. It is written before
// the entry is created — a crash in between leaves an id that reads as
// not found, never an entry its id cannot reach — and only then: an id
// never changes its dedupe key. An id of another shape (none, or a test's
// own) is not indexed: ByID could never be asked for it.
func (l *Ledger) index(ctx context.Context, e *Entry) error {
	if !idPattern.MatchString(e.NotificationID) {
		return nil
	}
	b, err := json.Marshal(idRef{Tenant: e.Tenant, DedupeKey: e.DedupeKey})
	if err != nil {
		return err
	}
	if _, err := l.ids.Put(ctx, e.NotificationID, b); err != nil {
		return fmt.Errorf("ledger: indexing %s by id: %w", e.NotificationID, err)
	}
	return nil
}

// ByID reads the entry of a notification by its id; an id whose entry is
// not written yet is ErrNotFound too. The entry names its tenant: a caller
// answering a tenant checks it.
func (l *Ledger) ByID(ctx context.Context, id string) (Entry, error) {
	if !idPattern.MatchString(id) {
		return Entry{}, ErrNotFound
	}
	kve, err := l.ids.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Entry{}, ErrNotFound
	}
	if err != nil {
		return Entry{}, fmt.Errorf("ledger: reading %s: %w", IDBucket, err)
	}
	var ref idRef
	if err := json.Unmarshal(kve.Value(), &ref); err != nil {
		return Entry{}, fmt.Errorf("ledger: %s entry %s: %w", IDBucket, id, err)
	}
	e, err := l.get(ctx, Key(ref.Tenant, ref.DedupeKey))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Entry{}, ErrNotFound
	}
	return e, err
}
