package ledger

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrNotFound means the tenant has no notification of this id, as far as
// the ledger knows: never recorded, or forgotten after the retention.
var ErrNotFound = errors.New("ledger: no such notification")

// idPattern is notification.ID's shape: "ntf_" and the SHA-256 of the
// dedupe key in hex — the digest the ledger's key ends with (Key), so an
// id leads to its entry without an index. tenantPattern keeps the key one
// KV token.
var (
	idPattern     = regexp.MustCompile(`^ntf_[0-9a-f]{64}$`)
	tenantPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// ByID reads a tenant's notification by its id. An id of another shape,
// or of another tenant's notification, is ErrNotFound like one never
// recorded.
func (l *Ledger) ByID(ctx context.Context, tenant, id string) (Entry, error) {
	if !idPattern.MatchString(id) || !tenantPattern.MatchString(tenant) {
		return Entry{}, ErrNotFound
	}
	e, err := l.get(ctx, tenant+"."+strings.TrimPrefix(id, "ntf_"))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Entry{}, ErrNotFound
	}
	return e, err
}
