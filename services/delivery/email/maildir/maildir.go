// Package maildir is the development email provider: it writes each message
// as a standard .eml file (RFC 5322, readable by any mail client) into a
// directory, instead of sending it.
//
// Every send writes a new file — a resend is never hidden by overwriting —
// and files appear atomically (written aside, then renamed), so a reader never
// sees half a message.
package maildir

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/provider"
)

// Name is the provider's name in receipts, logs and metrics.
const Name = "maildir"

// Sink writes messages into a directory.
type Sink struct {
	dir string
}

// New creates dir if needed and returns a sink writing into it.
func New(dir string) (*Sink, error) {
	if err := os.MkdirAll(filepath.Join(dir, ".tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("maildir: %w", err)
	}
	return &Sink{dir: dir}, nil
}

// Dir is where messages are written.
func (s *Sink) Dir() string { return s.dir }

// Send writes msg as <time>-<notification id>-<random>.eml. The file name is
// the receipt's message id.
func (s *Sink) Send(ctx context.Context, msg email.Message) (provider.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return provider.Receipt{}, err
	}
	raw, err := msg.MIME()
	if err != nil {
		return provider.Receipt{}, err
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	name := fmt.Sprintf("%s-%s-%s.eml", time.Now().UTC().Format("20060102T150405.000000Z"), msg.ID, hex.EncodeToString(suffix[:]))
	tmp := filepath.Join(s.dir, ".tmp", name)
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		return provider.Receipt{}, fmt.Errorf("maildir: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, name)); err != nil {
		return provider.Receipt{}, fmt.Errorf("maildir: %w", err)
	}
	return provider.Receipt{MessageID: name}, nil
}
