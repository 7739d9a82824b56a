package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// HookPath is where dev's webhook sink answers.
const HookPath = "/hook"

// hookMaxBytes bounds one delivery the sink keeps: Herald's webhook bodies
// are a status event or a notification, a few kilobytes.
const hookMaxBytes = 1 << 20

// Delivery is one POST the webhook sink received, as it writes it to a file.
type Delivery struct {
	// ID, Timestamp and Signature are the Standard Webhooks headers.
	ID        string          `json:"webhook_id"`
	Timestamp string          `json:"webhook_timestamp"`
	Signature string          `json:"webhook_signature"`
	Body      json.RawMessage `json:"body"`
}

// hookSink is dev's stand-in for a tenant's endpoint, as the mail directory
// is for an SMTP server: it answers 204 to each Standard Webhooks POST and
// writes it to dir as <time>-<webhook-id>-<random>.json. Every delivery is a
// new file, so a retry shows; files appear whole (written aside, then
// renamed).
type hookSink struct {
	dir    string
	logger *slog.Logger
}

// startHookSink serves the sink on listen until the server is shut down,
// and push, when given, at PushPath: dev's sinks that listen share one
// address.
func startHookSink(listen, dir string, push *pushSink, logger *slog.Logger) (*http.Server, net.Addr, error) {
	if err := os.MkdirAll(filepath.Join(dir, ".tmp"), 0o755); err != nil {
		return nil, nil, fmt.Errorf("webhook sink: %w", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook sink: %w (choose another port with --hook-listen)", err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+HookPath, hookSink{dir: dir, logger: logger})
	if push != nil {
		mux.Handle("POST "+PushPath+"{id}", push)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("webhook sink stopped", "error", err)
		}
	}()
	return srv, ln.Addr(), nil
}

func (s hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d, err := readDelivery(w, r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.write(d); err != nil {
		s.logger.Error("webhook sink: writing a delivery", "error", err)
		http.Error(w, "the sink could not write the delivery", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// readDelivery reads a Standard Webhooks POST, or says what it lacks.
func readDelivery(w http.ResponseWriter, r *http.Request) (Delivery, error) {
	d := Delivery{ID: r.Header.Get("webhook-id"), Timestamp: r.Header.Get("webhook-timestamp"),
		Signature: r.Header.Get("webhook-signature")}
	if d.ID == "" || d.Timestamp == "" || d.Signature == "" {
		return d, errors.New("not a Standard Webhooks delivery: it needs webhook-id, webhook-timestamp and webhook-signature")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, hookMaxBytes))
	if err != nil {
		return d, fmt.Errorf("reading the body: %w", err)
	}
	if !json.Valid(body) {
		return d, errors.New("the body is not JSON")
	}
	d.Body = body
	return d, nil
}

func (s hookSink) write(d Delivery) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	name := fmt.Sprintf("%s-%s-%s.json", time.Now().UTC().Format("20060102T150405.000000Z"), fileSafe(d.ID), hex.EncodeToString(suffix[:]))
	tmp := filepath.Join(s.dir, ".tmp", name)
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.dir, name))
}

// fileSafe keeps the letters, digits, _ and - of a sender's id, at most 80:
// enough of a notification id (ntf_ and 64 hex digits) to find it by.
func fileSafe(id string) string {
	id = strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return -1
	}, id)
	return id[:min(len(id), 80)]
}

// stopHookSink shuts the sink down, if it runs.
func stopHookSink(ctx context.Context, srv *http.Server) error {
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}
