package resource

import (
	"errors"
	"fmt"
	"regexp"
)

// Kind describes one kind of tenant resource: its bucket, how a record's
// key is made, what a valid record is, and its caps.
type Kind[T any] struct {
	// Name names the kind in errors: "sending domain", "template".
	Name string
	// Bucket is the key-value bucket the records are kept in, declared
	// in streams/KV_<Bucket>.
	Bucket string
	// Key is where a record is kept: "<tenant>.<id…>", the tenant first
	// so that a tenant's records are listed by one filter. It is what keeps
	// a kind's data readable across versions: change it and the records
	// written before are no longer found. A kind written only by Patch,
	// which is given the key, may leave it nil.
	Key func(T) string
	// Validate says what is wrong with a record before it is written; nil
	// accepts every record.
	Validate func(T) error
	// MaxBytes caps a record as stored (its JSON). Defaults to 64 KiB.
	MaxBytes int
	// MaxPerTenant caps how many records a tenant has: Create, and a Put
	// of a new key, are refused past it. Zero is no cap.
	MaxPerTenant int
	// NotFound is the error a missing record is reported as (a package's
	// own ErrNotFound); it matches ErrNotFound too. Defaults to ErrNotFound.
	NotFound error
	// Unreadable is what a watched cache keeps for a value that does not
	// decode (a hand edit gone wrong), given its key and why; false leaves
	// the key out. Nil leaves every such key out.
	Unreadable func(key string, err error) (T, bool)
}

// Sentinels a store's errors match, whatever the kind.
var (
	// ErrNotFound: no record at that key (Kind.NotFound matches it too).
	ErrNotFound = errors.New("resource: no such record")
	// ErrExists: Create found a record at the key already.
	ErrExists = errors.New("resource: a record is there already")
	// ErrConflict: the record changed since it was read (Update), or kept
	// changing (Patch).
	ErrConflict = errors.New("resource: the record changed meanwhile; read it again")
	// ErrInvalid: a record, key or tenant the store refuses. A kind's
	// Validate errors are returned as they are; a package makes them match
	// ErrInvalid too if its callers branch on it.
	ErrInvalid = errors.New("resource: invalid")
	// ErrTooLarge: a record over its kind's MaxBytes. It matches ErrInvalid.
	ErrTooLarge = fmt.Errorf("%w: record too large", ErrInvalid)
	// ErrTooMany: a tenant at its kind's MaxPerTenant. It matches ErrInvalid.
	ErrTooMany = fmt.Errorf("%w: too many records", ErrInvalid)
)

// defaultMaxBytes is MaxBytes' default.
const defaultMaxBytes = 64 << 10

// MaxPayload is the largest message a NATS server takes by default: the
// cap of a kind whose records were never bounded but by the server, so
// that what it stored before is still stored.
const MaxPayload = 1 << 20

func (k Kind[T]) maxBytes() int {
	if k.MaxBytes > 0 {
		return k.MaxBytes
	}
	return defaultMaxBytes
}

// notFound is a missing record: its kind's NotFound in words, matching
// both it and ErrNotFound.
type notFound struct{ kind error }

func (e notFound) Error() string { return e.kind.Error() }
func (e notFound) Is(target error) bool {
	return target == ErrNotFound || target == e.kind
}

func (k Kind[T]) notFound() error {
	if k.NotFound == nil {
		return ErrNotFound
	}
	return notFound{k.NotFound}
}

// keyPattern is a key a bucket takes: tokens of letters, digits and
// -_=/ separated by single dots. A wildcard or a space would make the
// write a subject the server refuses or, in a filter, another tenant's.
var (
	keyPattern   = regexp.MustCompile(`^[-/_=A-Za-z0-9]+(\.[-/_=A-Za-z0-9]+)*$`)
	tokenPattern = regexp.MustCompile(`^[-/_=A-Za-z0-9]+$`)
)

func checkKey(key string) error {
	if !keyPattern.MatchString(key) {
		return fmt.Errorf("%w: key %q", ErrInvalid, key)
	}
	return nil
}
