package app

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/services/delivery/push/webpush/webpushreceiver"
	"github.com/heraldhq/herald/shared/recipient"
)

// PushPath is where dev's push sink answers, followed by its
// subscription's id: the sink is the push service of a pretend browser.
const PushPath = "/push/"

// pushMaxBytes is the largest push body a push service takes (RFC 8291
// §4: 4096 octets).
const pushMaxBytes = 4096

// DevPushKeyFile is where dev keeps its push sink's subscription keys
// (0600) under its data directory.
func DevPushKeyFile(dataDir string) string { return filepath.Join(dataDir, "push.key") }

// pushSink is dev's stand-in for a browser and its push service, as the
// mail directory is for an inbox: a push to its subscription that bears a
// VAPID header of dev's key and decrypts with the subscription's keys is
// written to dir as <time>-<id>.json — the JSON a service worker gets —
// and answered 201. Its subscription, in the body PUT
// /v1/subscribers/{id}/devices/{device_id} takes, is dir/subscription.json.
type pushSink struct {
	dir       string
	id        string // the subscription's, the endpoint's last segment
	keys      *webpushreceiver.Receiver
	serverKey []byte // the VAPID public key pushes must be signed by
	logger    *slog.Logger
}

// newPushSink makes the sink for pushes signed by vapidPublicKey, with the
// subscription keys kept in dataDir.
func newPushSink(dataDir, vapidPublicKey string, logger *slog.Logger) (*pushSink, error) {
	serverKey, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(vapidPublicKey, "="))
	if err != nil {
		return nil, fmt.Errorf("push sink: the VAPID public key is not base64url: %w", err)
	}
	keys, err := devPushKeys(DevPushKeyFile(dataDir))
	if err != nil {
		return nil, fmt.Errorf("push sink: %w", err)
	}
	dir := filepath.Join(dataDir, "push")
	if err := os.MkdirAll(filepath.Join(dir, ".tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("push sink: %w", err)
	}
	// The id follows from the keys, so the endpoint is the same on every
	// run on the same address: a device registered earlier still works.
	sum := sha256.Sum256([]byte(keys.Subscription("").Keys.P256dh))
	return &pushSink{dir: dir, id: hex.EncodeToString(sum[:8]), keys: keys, serverKey: serverKey, logger: logger}, nil
}

// devPushKeys reads the subscription keys at path, made on first use: a
// device registered with an earlier run's subscription stays readable.
func devPushKeys(path string) (*webpushreceiver.Receiver, error) {
	secret, err := os.ReadFile(path)
	if err == nil {
		keys, err := webpushreceiver.Parse(string(secret))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		return keys, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	keys, err := webpushreceiver.New()
	if err != nil {
		return nil, err
	}
	return keys, writeNew(path, keys.Secret(), 0o600)
}

// SubscriptionFile is where the sink's subscription is written.
func (s *pushSink) SubscriptionFile() string { return filepath.Join(s.dir, "subscription.json") }

// writeSubscription writes the subscription for the sink served at base
// (http://host:port) as a device's PUT body.
func (s *pushSink) writeSubscription(base string) error {
	sub := s.keys.Subscription(base + PushPath + s.id)
	var device struct {
		Kind         recipient.DeviceKind          `json:"kind"`
		Subscription recipient.WebPushSubscription `json:"subscription"`
	}
	device.Kind, device.Subscription.Endpoint = recipient.DeviceWebPush, sub.Endpoint
	device.Subscription.Keys.P256dh, device.Subscription.Keys.Auth = sub.Keys.P256dh, sub.Keys.Auth
	b, err := json.MarshalIndent(device, "", "  ")
	if err != nil {
		return err
	}
	// 0600: whoever has the subscription can push to the sink.
	if err := writeNew(s.SubscriptionFile(), string(b), 0o600); err != nil {
		return fmt.Errorf("push sink: %w", err)
	}
	return nil
}

func (s *pushSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("id") != s.id {
		http.Error(w, "no such subscription", http.StatusNotFound)
		return
	}
	plain, status, err := s.read(w, r)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	if err := s.write(plain); err != nil {
		s.logger.Error("push sink: writing a push", "error", err)
		http.Error(w, "the sink could not write the push", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// read checks a push as a push service does and decrypts it as the
// browser does; on failure it says which status to answer.
func (s *pushSink) read(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	// The audience is this service's origin, as the sender saw it in the
	// endpoint.
	if _, err := webpushreceiver.VerifyVAPID(r.Header.Get("Authorization"), s.serverKey, "http://"+r.Host); err != nil {
		return nil, http.StatusUnauthorized, err
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "aes128gcm" {
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Encoding %q is not aes128gcm", enc)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, pushMaxBytes))
	if err != nil {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("reading the body: %w", err)
	}
	plain, err := s.keys.Decrypt(body)
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("decrypting: %w", err)
	}
	return plain, 0, nil
}

// write writes a push's payload as <time>-<its id>.json, whole (written
// aside, then renamed).
func (s *pushSink) write(plain []byte) error {
	var p webpush.Payload
	_ = json.Unmarshal(plain, &p) // Herald's pushes are JSON; an id is optional
	id := fileSafe(p.ID)
	if id == "" {
		id = "push"
	}
	name := fmt.Sprintf("%s-%s.json", time.Now().UTC().Format("20060102T150405.000000Z"), id)
	tmp := filepath.Join(s.dir, ".tmp", name)
	if err := os.WriteFile(tmp, append(plain, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.dir, name))
}
