// Package history is the index a tenant's notifications are listed from:
// one row per notification — its order, document, channel, recipient and
// where it stands — kept in SQL so that "newest first, only this order,
// only failed" is an index scan, never a scan of the ledger.
//
// The rows are derived, never the source of truth: the history service
// fills them from the ledger's own changes (the KV stream of bucket
// deliveries) and, for notifications no worker has claimed yet, from the
// records the router and the API publish when they create notifications
// (notification.Accepted). Lost, the index is rebuilt by replaying both.
//
// PostgreSQL (postgres://…) serves any number of replicas; SQLite
// (sqlite:PATH, pure Go) serves one process, as in `herald dev`.
package history

import (
	"errors"
	"time"
)

// States a row can be in: pending (created, not yet claimed by a worker),
// then the ledger's own — sending, retrying, delivered, failed, suppressed;
// or skipped: never planned (the recipient's preference, or a reference
// to nobody), with the reason, so that nothing is dropped unseen.
const (
	Skipped    = "skipped"
	Pending    = "pending"
	Sending    = "sending"
	Retrying   = "retrying"
	Delivered  = "delivered"
	Failed     = "failed"
	Suppressed = "suppressed"
)

// States lists every state, in the order a notification meets them.
var States = []string{Skipped, Pending, Sending, Retrying, Delivered, Failed, Suppressed}

// Row is one notification.
type Row struct {
	Tenant string
	ID     string // ntf_…
	// Order is the order id; empty for a notification without an order
	// (a stock alert, a job sent through the API).
	Order string
	// Document is the document type (purchase_order…) or, without a
	// document, the template or "job".
	Document          string
	Channel           string
	Recipient         string
	State             string
	Reason            string
	Provider          string
	ProviderMessageID string
	Tries             int
	CreatedAt         time.Time
	UpdatedAt         time.Time
	// Revision is the ledger revision the row reflects: a change is
	// applied only over an older one, so a replayed or reordered change
	// never moves a row back. 0 for a pending row, which the ledger's
	// first change replaces.
	Revision uint64
}

// Query selects a page of one tenant's notifications, newest first.
type Query struct {
	Tenant    string // required
	Order     string // optional: only this order's
	Recipient string // optional: only to this address (case-insensitive)
	State     string // optional: only in this state (one of States)
	// Since and Until, when set, keep only the notifications created at
	// or after Since and before Until.
	Since, Until time.Time
	// Limit is the page size, 1 to MaxLimit; 0 means DefaultLimit.
	Limit int
	// Cursor continues from a previous page's Next; empty starts at the
	// newest.
	Cursor string
}

// Page sizes.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Page is one page of a listing. Next is the cursor of the page after it,
// empty on the last page.
type Page struct {
	Rows []Row
	Next string
}

// Errors a Store answers with.
var (
	ErrNotFound  = errors.New("history: no such notification")
	ErrBadCursor = errors.New("history: the cursor is not one this index gave")
	ErrBadQuery  = errors.New("history: bad query")
)
