package notification

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/event"
)

// Priority orders work within a channel.
type Priority string

const (
	PriorityCritical Priority = "critical"
	PriorityNormal   Priority = "normal"
	PriorityLow      Priority = "low"
)

// Priorities lists every priority, most urgent first.
var Priorities = []Priority{PriorityCritical, PriorityNormal, PriorityLow}

// Delivery is one notification to one recipient on one channel. It carries
// everything a worker needs to render and send it, and nothing it would need
// business rules to interpret.
type Delivery struct {
	ID        string        `json:"id"`
	DedupeKey string        `json:"dedupe_key"`
	Tenant    string        `json:"tenant"`
	Channel   event.Channel `json:"channel"`
	Priority  Priority      `json:"priority"`
	Recipient Recipient     `json:"recipient"`
	Template  string        `json:"template"`
	Locale    string        `json:"locale"`
	// Category is what the notification is about for its recipient, as
	// its route names it ("documents", "alerts"); a recipient may
	// unsubscribe from a category unless Required. Empty: uncategorised,
	// nothing to unsubscribe from.
	Category string `json:"category,omitempty"`
	// Required marks a notification its recipient cannot unsubscribe from
	// (a business document they must receive): no unsubscribe link, and
	// opt-outs do not stop it — suppressions of the address still do.
	Required bool      `json:"required,omitempty"`
	Document *Document `json:"document,omitempty"`
	// Message is the caller's own content, for a notification asked for
	// directly (POST /v1/notifications) rather than routed from an event:
	// sent as written, with no template.
	Message *Message `json:"message,omitempty"`
	// Payload is a webhook's JSON body as written by whoever made it (the
	// status feed): sent as is, signed.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Attachments are stored documents the caller named, sent with Message.
	Attachments []Document `json:"attachments,omitempty"`
	// Providers, when set, are the only providers to try, in order: a pin
	// and at most one fallback, by name, instead of the tenant's chain.
	Providers []string `json:"providers,omitempty"`
	// Fallback are the channels to try next, in order, should this one
	// fail for good (a permanent refusal, or out of tries): the route's
	// fallback: [whatsapp, sms]. Each is tried once.
	Fallback []FallbackStep `json:"fallback,omitempty"`
	// FallbackOf is the notification this one replaces, on the channel
	// before it in the fallback, and why that one failed.
	FallbackOf *FallbackOf `json:"fallback_of,omitempty"`
	// RedeliveryOf is the webhook this one sends again, on demand (herald
	// webhooks redeliver): the same webhook-id and body, so the receiver
	// can tell it is not new.
	RedeliveryOf string `json:"redelivery_of,omitempty"`
	// Run is the workflow run whose send step made this notification, set
	// when a later wait of the run ends on its status (until_status): the
	// delivery service tells the run when it is delivered. A fallback's
	// notification keeps it.
	Run *RunRef `json:"run,omitempty"`
	// ActionURL is what clicking the notification in an app opens (the
	// inbox item's link): http(s), at most 2048 bytes. Optional; nothing
	// sets it yet (a notification asked for directly may, once the API
	// takes one).
	ActionURL string `json:"action_url,omitempty"`
	// Sequence, on a notification of an ordered route, is the order's
	// revisions to this recipient on this channel it takes its turn in
	// (package ordering): it is not sent before an earlier revision is
	// settled.
	Sequence *Sequence     `json:"sequence,omitempty"`
	Event    EventRef      `json:"event"`
	Order    *OrderSummary `json:"order,omitempty"`
	Stock    *event.Stock  `json:"stock,omitempty"`
	// Digest, on a workflow's digest send, is every event the digest
	// gathered (Order and Stock are its first one's).
	Digest    *Digest   `json:"digest,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Digest is what a digest notification lists: its templates see .Items
// and .Count.
type Digest struct {
	Count int          `json:"count"`
	Items []DigestItem `json:"items"`
}

// List is the digest's items; none without a digest.
func (d *Digest) List() []DigestItem {
	if d == nil {
		return nil
	}
	return d.Items
}

// Len is how many events the digest gathered; 0 without a digest.
func (d *Digest) Len() int {
	if d == nil {
		return 0
	}
	return d.Count
}

// DigestItem is one event of a digest, as a template may tell it.
type DigestItem struct {
	EventID string        `json:"event_id"`
	Order   *OrderSummary `json:"order,omitempty"`
	Stock   *event.Stock  `json:"stock,omitempty"`
}

// Sequence names the revisions of one order to one recipient on one
// channel (tenant, order, channel, address), in which a notification waits
// its turn. Behind says an earlier revision was pending when the router
// registered this one, or may be being routed (ordering.Redis.Register):
// only then does a worker ask before sending.
type Sequence struct {
	Key    string `json:"key"`
	Behind bool   `json:"behind,omitempty"`
}

// SequenceKey is the sequence of an order's notifications to address on c.
func SequenceKey(tenant, order string, c event.Channel, address string) string {
	return strings.Join([]string{tenant, order, string(c), address}, ":")
}

// FallbackStep is one channel of a fallback: the recipient's address on it
// and the dedupe key the delivery would have there.
type FallbackStep struct {
	Channel   event.Channel `json:"channel"`
	Address   string        `json:"address"`
	DedupeKey string        `json:"dedupe_key"`
}

// FallbackOf names the notification a fallback replaces.
type FallbackOf struct {
	NotificationID string        `json:"notification_id"`
	Channel        event.Channel `json:"channel"`
	Reason         string        `json:"reason"`
}

// Next is the delivery on the fallback's next channel, after d failed for
// reason; ok is false when d has no fallback left. It keeps everything but
// the channel, the address and the keys, and carries the rest of the
// fallback.
func (d Delivery) Next(reason string) (next Delivery, ok bool) {
	if len(d.Fallback) == 0 {
		return Delivery{}, false
	}
	step := d.Fallback[0]
	next = d
	next.ID, next.DedupeKey, next.Channel = ID(step.DedupeKey), step.DedupeKey, step.Channel
	next.Recipient.Address = step.Address
	next.Fallback = slices.Clone(d.Fallback[1:])
	next.FallbackOf = &FallbackOf{NotificationID: d.ID, Channel: d.Channel, Reason: reason}
	// The sequence is per channel: the next channel's notification was
	// never registered in one, and this one's settlement releases its own.
	next.Sequence = nil
	if len(next.Fallback) == 0 {
		next.Fallback = nil
	}
	return next, true
}

// Recipient is the single address this delivery goes to.
type Recipient struct {
	Name    string `json:"name,omitempty"`
	Role    string `json:"role,omitempty"`
	Address string `json:"address"`
	// Subscriber is the tenant's subscriber id when the event named a
	// subscriber, an account or a topic (shared/recipient), empty for an
	// inline contact: whose preferences are checked again just before
	// sending, and whose preference page the message links to.
	Subscriber string `json:"subscriber,omitempty"`
	// Timezone is the subscriber's IANA time zone, when known.
	Timezone string `json:"timezone,omitempty"`
}

// Document names the business document a delivery concerns. Object, SHA256
// and Size are set once the document is rendered and stored.
type Document struct {
	Type   string `json:"type"`
	Object string `json:"object,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
}

// Message is a notification's content as its caller wrote it.
type Message struct {
	Subject string `json:"subject"`
	Text    string `json:"text"`
	HTML    string `json:"html,omitempty"`
}

// EventRef points back at the event that caused the delivery.
type EventRef struct {
	ID     string    `json:"id"`
	Type   string    `json:"type"`
	Source string    `json:"source"`
	Time   time.Time `json:"time,omitzero"`
	// StoredAt is when the event reached its JetStream stream: where
	// Herald's end-to-end latency starts.
	StoredAt time.Time `json:"stored_at,omitzero"`
}

// OrderSummary is what a template may say about an order.
type OrderSummary struct {
	ID       string       `json:"id"`
	Kind     event.Kind   `json:"kind"`
	Revision int          `json:"revision"`
	IssuedAt time.Time    `json:"issued_at,omitzero"`
	Currency string       `json:"currency"`
	Buyer    string       `json:"buyer"`
	Supplier string       `json:"supplier"`
	Lines    int          `json:"lines"`
	Totals   event.Totals `json:"totals"`
}

// Key identifies a notification. Its String form is the dedupe key.
type Key struct {
	Tenant    string
	Subject   string // the order id, or the event id for notifications without an order
	Revision  int
	Document  string // document type, or the template for notifications without a document
	Channel   event.Channel
	Recipient string
}

func (k Key) String() string {
	return strings.Join([]string{
		k.Tenant, k.Subject, strconv.Itoa(k.Revision), k.Document, string(k.Channel), k.Recipient,
	}, ":")
}

// JobKey is the dedupe key of a notification asked for directly, without
// an event: the tenant's, for one channel and recipient, under the
// caller's idempotency key and reference. Its third segment, "job-" and a
// digest, is never an order key's revision number, so no job shares a key
// with a routed notification.
func JobKey(tenant, idempotencyKey, reference string, c event.Channel, recipient string) string {
	sum := sha256.Sum256([]byte(idempotencyKey + "\x00" + reference))
	return strings.Join([]string{tenant, "job", "job-" + hex.EncodeToString(sum[:]), string(c), recipient}, ":")
}

// ID derives a stable notification id from a dedupe key, so a republished
// delivery keeps its id and a mail client can recognise a resend. It is
// the whole SHA-256, the digest the ledger keys the notification by, so
// the id leads to the ledger entry without an index (ledger.ByID).
func ID(dedupeKey string) string {
	sum := sha256.Sum256([]byte(dedupeKey))
	return "ntf_" + hex.EncodeToString(sum[:])
}

// Subject is the NATS subject a delivery is published on.
func Subject(c event.Channel, p Priority, tenant string) string {
	return fmt.Sprintf("notify.%s.%s.%s", c, p, tenant)
}

// Decode parses and checks a delivery message.
func Decode(b []byte) (Delivery, error) {
	var d Delivery
	if err := json.Unmarshal(b, &d); err != nil {
		return Delivery{}, fmt.Errorf("malformed delivery: %w", err)
	}
	if missing := missingFields(&d); missing != "" {
		return Delivery{}, fmt.Errorf("malformed delivery: missing %s", missing)
	}
	return d, nil
}

// missingFields names the fields a worker needs that d lacks, in order of
// name and comma-separated; "" when it has them all. It runs for every
// delivery a worker reads: a list kept in order, rather than a map hashed
// for each delivery and its misses sorted.
func missingFields(d *Delivery) string {
	written := d.Message != nil // by its caller: no template
	var subject, text string
	if written {
		subject, text = d.Message.Subject, d.Message.Text
	}
	required := [...]struct {
		field, value string
		needed       bool
	}{ // in order of field
		{"channel", string(d.Channel), true},
		{"dedupe_key", d.DedupeKey, true},
		{"id", d.ID, true},
		{"message.subject", subject, written},
		{"message.text", text, written},
		{"recipient.address", d.Recipient.Address, true},
		{"template", d.Template, !written},
		{"tenant", d.Tenant, true},
	}
	var missing []string
	for _, r := range required {
		if r.needed && r.value == "" {
			missing = append(missing, r.field)
		}
	}
	return strings.Join(missing, ", ")
}

// Unsubscribable is the category its recipient may unsubscribe from: its
// Category, unless it is Required; "" when there is none.
func (d Delivery) Unsubscribable() string {
	if d.Required {
		return ""
	}
	return d.Category
}
