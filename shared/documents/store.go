package documents

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/notification"
)

// HeaderSHA256 carries the hex SHA-256 of a stored document, as Herald
// references it (the store keeps its own digest too, base64).
const HeaderSHA256 = "Herald-Sha256"

// ErrNotFound means no document is stored under the name.
var ErrNotFound = errors.New("documents: not found")

// ErrDigestMismatch means the stored bytes are not the ones referenced.
var ErrDigestMismatch = errors.New("documents: digest mismatch")

// Store keeps documents in the object store.
type Store struct {
	obj jetstream.ObjectStore
}

// Open binds to the bucket, which streams.Apply creates.
func Open(ctx context.Context, js jetstream.JetStream) (*Store, error) {
	obj, err := js.ObjectStore(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("documents: bucket %s: %w", Bucket, err)
	}
	return &Store{obj: obj}, nil
}

// Put stores a document under name and returns its reference. Storing the
// same bytes again is a no-op, so re-rendering a revision is idempotent;
// different bytes under an existing name replace them (a fixed renderer).
func (s *Store) Put(ctx context.Context, name, docType string, pdf []byte) (notification.Document, error) {
	sum := sha256.Sum256(pdf)
	ref := notification.Document{Type: docType, Object: name, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(pdf))}
	info, err := s.obj.GetInfo(ctx, name)
	if err == nil && info.Headers.Get(HeaderSHA256) == ref.SHA256 {
		return ref, nil
	}
	if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return ref, fmt.Errorf("documents: %s: %w", name, err)
	}
	meta := jetstream.ObjectMeta{Name: name, Headers: map[string][]string{HeaderSHA256: {ref.SHA256}, "Content-Type": {"application/pdf"}}}
	if _, err := s.obj.Put(ctx, meta, bytes.NewReader(pdf)); err != nil {
		return ref, fmt.Errorf("documents: storing %s: %w", name, err)
	}
	return ref, nil
}

// Lookup returns the reference of a stored document, if there is one.
func (s *Store) Lookup(ctx context.Context, name, docType string) (notification.Document, bool, error) {
	info, err := s.obj.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return notification.Document{}, false, nil
	}
	if err != nil {
		return notification.Document{}, false, fmt.Errorf("documents: %s: %w", name, err)
	}
	sum := info.Headers.Get(HeaderSHA256)
	return notification.Document{Type: docType, Object: name, SHA256: sum, Size: int64(info.Size)}, sum != "", nil
}

// Get reads a referenced document and checks it is the one referenced.
func (s *Store) Get(ctx context.Context, ref notification.Document) ([]byte, error) {
	b, err := s.obj.GetBytes(ctx, ref.Object)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, ref.Object)
	}
	if err != nil {
		return nil, fmt.Errorf("documents: reading %s: %w", ref.Object, err)
	}
	if sum := sha256.Sum256(b); ref.SHA256 != "" && hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fmt.Errorf("%w: %s", ErrDigestMismatch, ref.Object)
	}
	return b, nil
}
