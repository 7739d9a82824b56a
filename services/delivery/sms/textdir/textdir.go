// Package textdir is the development text-message provider: it writes each
// SMS or WhatsApp message as a small JSON file into a directory, instead of
// sending it, so `herald dev` shows what a phone would receive.
//
// Every send writes a new file — a resend is never hidden by overwriting —
// and files appear atomically (written aside, then renamed).
package textdir

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/provider"
)

// Name is the provider's type in configuration.
const Name = "textdir"

// Sink writes messages into a directory.
type Sink struct {
	dir string
}

// Written is one file's content.
type Written struct {
	NotificationID string            `json:"notification_id"`
	Channel        event.Channel     `json:"channel"`
	To             string            `json:"to"`
	Body           string            `json:"body"`
	Encoding       string            `json:"encoding"`
	ContentSID     string            `json:"content_sid,omitempty"`
	Variables      map[string]string `json:"variables,omitempty"`
	Time           time.Time         `json:"time"`
}

// New creates dir if needed and returns a sink writing into it.
func New(dir string) (*Sink, error) {
	if err := os.MkdirAll(filepath.Join(dir, ".tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("textdir: %w", err)
	}
	return &Sink{dir: dir}, nil
}

// Dir is where messages are written.
func (s *Sink) Dir() string { return s.dir }

// Send writes msg as <time>-<channel>-<notification id>-<random>.json. The
// file name is the receipt's message id.
func (s *Sink) Send(ctx context.Context, msg sms.Message) (provider.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return provider.Receipt{}, err
	}
	if msg.Channel != event.ChannelSMS && msg.Channel != event.ChannelWhatsApp {
		return provider.Receipt{}, provider.Permanentf("textdir sends sms and whatsapp, not %q", msg.Channel)
	}
	if msg.To == "" {
		return provider.Receipt{}, provider.Permanentf("no phone number to send to")
	}
	w := Written{NotificationID: msg.ID, Channel: msg.Channel, To: msg.To, Body: msg.Body,
		Encoding: sms.Describe(msg.Body), Time: time.Now().UTC()}
	if msg.Template != nil {
		w.ContentSID, w.Variables = msg.Template.ContentSID, msg.Template.Variables
	}
	raw, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return provider.Receipt{}, provider.Permanent(err)
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	name := fmt.Sprintf("%s-%s-%s-%s.json", w.Time.Format("20060102T150405.000000Z"), msg.Channel, msg.ID, hex.EncodeToString(suffix[:]))
	tmp := filepath.Join(s.dir, ".tmp", name)
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		return provider.Receipt{}, fmt.Errorf("textdir: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, name)); err != nil {
		return provider.Receipt{}, fmt.Errorf("textdir: %w", err)
	}
	return provider.Receipt{MessageID: name}, nil
}

// Read returns every message written to dir so far, oldest first.
func Read(dir string) ([]Written, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := make([]Written, 0, len(names))
	for _, name := range names {
		raw, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var w Written
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, fmt.Errorf("textdir: %s: %w", filepath.Base(name), err)
		}
		out = append(out, w)
	}
	return out, nil
}
