// Package inbox keeps each subscriber's in-app feed: the items the inbox
// channel writes, newest first, their seen/read/archived state and the
// subscriber's counts, in the KV_inbox bucket. A subscriber's index (one
// entry, changed by compare-and-set) holds every item's state and the
// counts, so counting is one read and a state change one write; the items'
// contents are entries of their own. The bucket's stream is also the feed's
// change log: the API follows it to push new items and state changes to
// browsers (Server-Sent Events), and a browser that reconnects resumes from
// the stream sequence it last saw.
package inbox

import (
	"time"

	"github.com/heraldhq/herald/shared/notification"
)

// Item is one entry of a subscriber's feed. Title and Body are plain text
// (never HTML: the browser shows them as text); links are separate fields.
type Item struct {
	// ID is derived from the notification that wrote the item, so a
	// delivery written twice is one item.
	ID           string `json:"id"`
	Notification string `json:"notification_id"`
	Title        string `json:"title"`
	Body         string `json:"body"`
	// ActionURL is what clicking the item opens; optional.
	ActionURL string `json:"action_url,omitempty"`
	// Document is the business document the item is about, if any; the
	// API turns it into a signed link each time it lists the item.
	Document *notification.Document `json:"document,omitempty"`
	Category string                 `json:"category,omitempty"`
	// Run is the workflow run whose send wrote the item, if any: a
	// wait until_status: read follows the item's read state.
	Run       *notification.RunRef `json:"run,omitempty"`
	CreatedAt time.Time            `json:"created_at"`
	State
}

// State is an item's state. Read implies seen.
type State struct {
	SeenAt     *time.Time `json:"seen_at,omitempty"`
	ReadAt     *time.Time `json:"read_at,omitempty"`
	ArchivedAt *time.Time `json:"archived_at,omitempty"`
}

// Counts are a subscriber's counts over the items not archived.
type Counts struct {
	Unseen int `json:"unseen"`
	Unread int `json:"unread"`
	Total  int `json:"total"`
}
