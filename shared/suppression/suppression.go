// Package suppression keeps the addresses each tenant must not be sent to —
// after a hard bounce or a complaint, or by an operator's hand — in the
// key-value bucket "suppressions" (streams/KV_suppressions). The delivery
// workers ask it before any provider is called: a suppressed notification is
// recorded as such, not tried and not dead-lettered, since it is not a
// failure.
//
// An entry is keyed by tenant and a hash of the channel and the normalized
// address, so the address itself, which KV keys could not hold, is only in
// the value. An entry is for one channel — an SMS bounce says nothing about
// WhatsApp to the same number — or, with no channel, for every channel the
// address is reached on: the entries made before channels were kept (their
// keys hash the address alone, and still do), those made by hand without
// one, and those a provider says are about the address itself.
package suppression

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/resource"
)

// Bucket is the key-value bucket declared in streams/KV_suppressions.
const Bucket = "suppressions"

// Reasons an address is suppressed.
const (
	HardBounce = "hard_bounce"
	Complaint  = "complaint"
	Manual     = "manual"
	// Unsubscribed: the recipient left a category (one-click unsubscribe).
	Unsubscribed = "unsubscribed"
)

// Reasons lists the reasons an entry may give.
var Reasons = []string{HardBounce, Complaint, Manual, Unsubscribed}

// channels are the channels whose addresses are suppressed. A webhook
// endpoint is the tenant's own: it is disabled, not suppressed.
var channels = []event.Channel{event.ChannelEmail, event.ChannelSMS, event.ChannelWhatsApp}

// Entry is one suppressed address of a tenant.
type Entry struct {
	Tenant string `json:"tenant"`
	// Channel, when set, limits the entry to that channel's notifications.
	// Empty holds back every channel the address is reached on.
	Channel event.Channel `json:"channel,omitempty"`
	// Address is empty once its subscriber was erased (Conceal), which
	// leaves AddressHash, its keyed hash, in its place.
	Address     string `json:"address"`
	AddressHash string `json:"address_hash,omitempty"`
	// Reason is one of Reasons; Detail, what caused it in words (a
	// provider's bounce message, an operator's note).
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
	// Source is the event that caused it: a provider's event id, or who
	// added it by hand ("api", "cli").
	Source string `json:"source,omitempty"`
	// Category, when set, limits the entry to the notifications of that
	// category (a route's, such as "alerts"): the recipient unsubscribed
	// from it, and hears the rest. Empty blocks every notification.
	Category  string    `json:"category,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// ErrNotFound: the address is not suppressed.
var ErrNotFound = errors.New("suppression: address not suppressed")

// ErrInvalid is what Add's refusals of an entry match; their messages
// name the field ("reason: …").
var ErrInvalid = errors.New("suppression: invalid entry")

type invalid string

func (e invalid) Error() string        { return string(e) }
func (e invalid) Is(target error) bool { return target == ErrInvalid || target == resource.ErrInvalid }

// Suppressions is the resource kind of suppressed addresses.
var Suppressions = resource.Kind[Entry]{Name: "suppression", Bucket: Bucket, NotFound: ErrNotFound,
	Key:      func(e Entry) string { return key(e.Tenant, e.Channel, e.Address, e.Category) },
	Validate: Entry.check, MaxBytes: resource.MaxPayload, Unreadable: unreadable}

// Store reads and writes suppressions: the kind's resource store, with the
// package's own methods.
type Store resource.Store[Entry]

// Open binds to the bucket, which streams.Apply creates.
func Open(ctx context.Context, js jetstream.JetStream) (*Store, error) {
	s, err := resource.Open(ctx, js, Suppressions)
	return (*Store)(s), err
}

// Records is s as the generic store, for code that handles every kind of
// resource alike; the package's own methods normalize what they are given
// first.
func (s *Store) Records() *resource.Store[Entry] { return (*resource.Store[Entry])(s) }

// Normalize is the form an address is compared in: trimmed, and an email
// address lowercased (providers treat them so; a phone number has no case).
func Normalize(address string) string {
	return strings.ToLower(strings.TrimSpace(address))
}

// key is tenant, a digest of the channel and the address, and for an
// entry limited to a category the category: <tenant>.<digest>[.<category>].
// An entry for every channel digests the address alone, as every entry did
// before channels were kept: those are read as they were written.
func key(tenant string, channel event.Channel, address, category string) string {
	id := Normalize(address)
	if channel != "" {
		id = string(channel) + ":" + id
	}
	sum := sha256.Sum256([]byte(id))
	k := tenant + "." + hex.EncodeToString(sum[:16])
	if category != "" {
		k += "." + category
	}
	return k
}

// blocking are the keys of the entries that would hold back a notification
// of category to address on channel, in the order they are asked: the
// channel's for all categories, the one for every channel, then the same
// two for the category.
func blocking(tenant string, channel event.Channel, address, category string) []string {
	keys := make([]string, 0, 4)
	if channel != "" {
		keys = append(keys, key(tenant, channel, address, ""))
	}
	keys = append(keys, key(tenant, "", address, ""))
	if category != "" { // the same entries limited to the category: no digest again
		for _, k := range slices.Clone(keys) {
			keys = append(keys, k+"."+category)
		}
	}
	return keys
}

// categoryPattern keeps a category one KV key token.
var categoryPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidCategory says whether s can name a category.
func ValidCategory(s string) bool { return categoryPattern.MatchString(s) }

// Add suppresses e.Address for e.Tenant, replacing an entry it had.
func (s *Store) Add(ctx context.Context, e Entry) (Entry, error) {
	e.Address = Normalize(e.Address)
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now().UTC()
	}
	if _, err := s.Records().Put(ctx, e); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// check says what is wrong with e, naming the field. Its texts are tenant
// input: they are listed in terminals and pages, so no control character
// is kept.
func (e Entry) check() error {
	switch {
	case !event.ValidTenant(e.Tenant):
		return invalid(fmt.Sprintf("suppression: tenant %q is not a tenant id", e.Tenant))
	case e.Channel != "" && !slices.Contains(channels, e.Channel):
		return invalid(fmt.Sprintf("channel: %q is not one of %s (or none, for all)", e.Channel, channelList()))
	case e.addressProblem() != "" && !e.Concealed():
		return invalid("address: " + e.addressProblem())
	case !slices.Contains(Reasons, e.Reason):
		return invalid(fmt.Sprintf("reason: %q is not one of %s", e.Reason, strings.Join(Reasons, ", ")))
	case e.Category != "" && !ValidCategory(e.Category):
		return invalid(fmt.Sprintf("category: %q is not a category (1 to 64 letters, digits, '-' or '_')", e.Category))
	}
	if err := event.CheckText(e.Detail); err != nil {
		return invalid("detail: " + err.Error())
	}
	if err := event.CheckText(e.Source); err != nil {
		return invalid("source: " + err.Error())
	}
	return nil
}

// addressProblem says why e's address is not one its channel sends to —
// for an entry of every channel, an email address or a phone number — or
// "" when it is.
func (e Entry) addressProblem() string {
	switch {
	case e.Channel != "" && event.ValidAddress(e.Channel, e.Address),
		e.Channel == "" && (event.ValidAddress(event.ChannelEmail, e.Address) || event.ValidAddress(event.ChannelSMS, e.Address)):
		return ""
	}
	switch e.Channel {
	case "":
		if e.Address == "" {
			return "required"
		}
		return fmt.Sprintf("%q is neither an email address nor an E.164 phone number such as +34600111222", e.Address)
	case event.ChannelEmail:
		return fmt.Sprintf("%q is not an email address (channel email)", e.Address)
	default:
		return fmt.Sprintf("%q is not an E.164 phone number such as +34600111222 (channel %s)", e.Address, e.Channel)
	}
}

func channelList() string {
	names := make([]string, len(channels))
	for i, c := range channels {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// Get returns the tenant's entry for address on channel ("" for the one of
// every channel) in category ("" for the one blocking every notification),
// or ErrNotFound.
func (s *Store) Get(ctx context.Context, tenant string, channel event.Channel, address, category string) (Entry, error) {
	if category != "" && !ValidCategory(category) {
		return Entry{}, ErrNotFound
	}
	return s.get(ctx, key(tenant, channel, address, category))
}

func (s *Store) get(ctx context.Context, k string) (Entry, error) {
	e, _, err := s.Records().Get(ctx, k)
	return e, err
}

// Blocks returns the tenant's entry that keeps a notification of category
// from address on channel: the channel's or every channel's, the one
// blocking every notification before the category's; ErrNotFound when none
// does.
func (s *Store) Blocks(ctx context.Context, tenant string, channel event.Channel, address, category string) (Entry, error) {
	if category != "" && !ValidCategory(category) {
		category = ""
	}
	for _, k := range blocking(tenant, channel, address, category) {
		e, err := s.get(ctx, k)
		if !errors.Is(err, ErrNotFound) {
			return e, err
		}
	}
	return Entry{}, ErrNotFound
}

// Remove lifts the suppression of address on channel ("" for the one of
// every channel) for tenant in category ("" for the one blocking every
// notification); ErrNotFound if there was none.
func (s *Store) Remove(ctx context.Context, tenant string, channel event.Channel, address, category string) error {
	if category != "" && !ValidCategory(category) {
		return ErrNotFound
	}
	return s.Records().Delete(ctx, key(tenant, channel, address, category))
}

// List returns the tenant's suppressed addresses, those limited to a
// category included, newest first.
func (s *Store) List(ctx context.Context, tenant string) ([]Entry, error) {
	out, err := s.Records().All(ctx, tenant)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Entry) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, nil
}
