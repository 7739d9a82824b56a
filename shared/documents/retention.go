package documents

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Stored is a document in the store: its name, and when it was stored.
type Stored struct {
	Name     string
	StoredAt time.Time
}

// All lists every stored document. It reads each one's metadata, not its
// bytes: a sweep's cost, not a request's.
func (s *Store) All(ctx context.Context) ([]Stored, error) {
	infos, err := s.obj.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("documents: listing: %w", err)
	}
	out := make([]Stored, 0, len(infos))
	for _, info := range infos {
		out = append(out, Stored{Name: info.Name, StoredAt: info.ModTime})
	}
	return out, nil
}

// Remove deletes a stored document; removed is false when it was already
// gone (another replica's sweep removed it first).
func (s *Store) Remove(ctx context.Context, name string) (removed bool, err error) {
	err = s.obj.Delete(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("documents: removing %s: %w", name, err)
	}
	return true, nil
}

// ParseObjectName reads what ObjectName wrote: the tenant, the order and
// the document type; ok is false for a name it did not write.
func ParseObjectName(name string) (tenant, order, docType string, ok bool) {
	tenant, rest, ok := strings.Cut(name, "/")
	slash := strings.LastIndex(rest, "/")
	if !ok || slash <= 0 {
		return "", "", "", false
	}
	order, file := rest[:slash], strings.TrimSuffix(rest[slash+1:], ".pdf")
	dash := strings.LastIndex(file, "-r")
	if dash <= 0 || !strings.HasSuffix(rest, ".pdf") {
		return "", "", "", false
	}
	if _, err := strconv.Atoi(file[dash+2:]); err != nil {
		return "", "", "", false
	}
	return tenant, order, file[:dash], tenant != ""
}
