// Package suppression keeps the addresses each tenant must not be sent to —
// after a hard bounce or a complaint, or by an operator's hand — in the
// key-value bucket "suppressions" (streams/KV_suppressions). The delivery
// workers ask it before any provider is called: a suppressed notification is
// recorded as such, not tried and not dead-lettered, since it is not a
// failure.
//
// An entry is keyed by tenant and a hash of the normalized address, so the
// address itself, which KV keys could not hold, is only in the value.
package suppression

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/kvmirror"
	"github.com/nats-io/nats.go/jetstream"
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

// Entry is one suppressed address of a tenant.
type Entry struct {
	Tenant  string `json:"tenant"`
	Address string `json:"address"`
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
func (e invalid) Is(target error) bool { return target == ErrInvalid }

// Store reads and writes suppressions.
type Store struct {
	kv  jetstream.KeyValue
	now func() time.Time
}

// Open binds to the bucket, which streams.Apply creates.
func Open(ctx context.Context, js jetstream.JetStream) (*Store, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("suppression: bucket %s: %w", Bucket, err)
	}
	return &Store{kv: kv, now: time.Now}, nil
}

// Normalize is the form an address is compared in: trimmed, and an email
// address lowercased (providers treat them so; a phone number has no case).
func Normalize(address string) string {
	return strings.ToLower(strings.TrimSpace(address))
}

// key is tenant, a digest of the address, and for an entry limited to a
// category the category: <tenant>.<digest>[.<category>].
func key(tenant, address, category string) string {
	sum := sha256.Sum256([]byte(Normalize(address)))
	k := tenant + "." + hex.EncodeToString(sum[:16])
	if category != "" {
		k += "." + category
	}
	return k
}

// categoryPattern keeps a category one KV key token.
var categoryPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidCategory says whether s can name a category.
func ValidCategory(s string) bool { return categoryPattern.MatchString(s) }

// Add suppresses e.Address for e.Tenant, replacing an entry it had.
func (s *Store) Add(ctx context.Context, e Entry) (Entry, error) {
	e.Address = Normalize(e.Address)
	switch {
	case e.Tenant == "":
		return Entry{}, invalid("suppression: a tenant is required")
	case e.Address == "":
		return Entry{}, invalid("address: required")
	case !slices.Contains(Reasons, e.Reason):
		return Entry{}, invalid(fmt.Sprintf("reason: %q is not one of %s", e.Reason, strings.Join(Reasons, ", ")))
	case e.Category != "" && !ValidCategory(e.Category):
		return Entry{}, invalid(fmt.Sprintf("category: %q is not a category (1 to 64 letters, digits, '-' or '_')", e.Category))
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = s.now().UTC()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return Entry{}, err
	}
	if _, err := s.kv.Put(ctx, key(e.Tenant, e.Address, e.Category), b); err != nil {
		return Entry{}, fmt.Errorf("suppression: %w", err)
	}
	return e, nil
}

// Get returns the tenant's entry for address in category ("" for the one
// blocking every notification), or ErrNotFound.
func (s *Store) Get(ctx context.Context, tenant, address, category string) (Entry, error) {
	if category != "" && !ValidCategory(category) {
		return Entry{}, ErrNotFound
	}
	kve, err := s.kv.Get(ctx, key(tenant, address, category))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Entry{}, ErrNotFound
	}
	if err != nil {
		return Entry{}, fmt.Errorf("suppression: %w", err)
	}
	return decode(kve)
}

func decode(kve jetstream.KeyValueEntry) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(kve.Value(), &e); err != nil {
		return Entry{}, fmt.Errorf("suppression: entry %s: %w", kve.Key(), err)
	}
	return e, nil
}

// Blocks returns the tenant's entry that keeps a notification of category
// from address: the one blocking every notification, else the category's;
// ErrNotFound when none does.
func (s *Store) Blocks(ctx context.Context, tenant, address, category string) (Entry, error) {
	e, err := s.Get(ctx, tenant, address, "")
	if errors.Is(err, ErrNotFound) && category != "" {
		return s.Get(ctx, tenant, address, category)
	}
	return e, err
}

// Remove lifts the suppression of address for tenant in category ("" for
// the one blocking every notification); ErrNotFound if there was none.
func (s *Store) Remove(ctx context.Context, tenant, address, category string) error {
	if _, err := s.Get(ctx, tenant, address, category); err != nil {
		return err
	}
	if err := s.kv.Delete(ctx, key(tenant, address, category)); err != nil {
		return fmt.Errorf("suppression: %w", err)
	}
	return nil
}

// List returns the tenant's suppressed addresses, those limited to a
// category included, newest first.
func (s *Store) List(ctx context.Context, tenant string) ([]Entry, error) {
	out, err := kvmirror.List(ctx, s.kv, tenant+".>", decode)
	if err != nil {
		return nil, fmt.Errorf("suppression: %w", err)
	}
	slices.SortFunc(out, func(a, b Entry) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, nil
}
