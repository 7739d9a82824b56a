// Package webpushreceiver is the receiving end of Web Push: what a
// browser holds for a subscription — a P-256 key pair and a 16-byte auth
// secret — and does with a push, decrypting its aes128gcm body (RFC 8291),
// and the check a push service makes of the sender's VAPID header
// (RFC 8292). The webpushtest fake and herald dev's push sink receive with
// it, so that what they show is what a service worker would see.
package webpushreceiver

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/services/delivery/push"
)

// authSecretSize is the size of a subscription's auth secret (RFC 8291 §3.2).
const authSecretSize = 16

// Receiver is one subscription's keys, as the browser keeps them. Both
// are secrets: whoever has them reads every push to the subscription.
type Receiver struct {
	private *ecdh.PrivateKey
	auth    []byte
}

// New makes a subscription's keys, as pushManager.subscribe does: a new
// P-256 key pair and auth secret.
func New() (*Receiver, error) {
	private, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("webpushreceiver: generating a P-256 key: %w", err)
	}
	auth := make([]byte, authSecretSize)
	_, _ = rand.Read(auth) // never fails (crypto/rand)
	return &Receiver{private: private, auth: auth}, nil
}

// Parse reads keys Secret wrote.
func Parse(secret string) (*Receiver, error) {
	p, a, ok := strings.Cut(strings.TrimSpace(secret), ".")
	private, errP := base64.RawURLEncoding.DecodeString(p)
	auth, errA := base64.RawURLEncoding.DecodeString(a)
	if !ok || errP != nil || errA != nil || len(auth) != authSecretSize {
		return nil, errors.New("webpushreceiver: not a private key and a 16-byte auth secret, base64url, joined by a dot")
	}
	key, err := ecdh.P256().NewPrivateKey(private)
	if err != nil {
		return nil, errors.New("webpushreceiver: not a P-256 private key") // never quote it
	}
	return &Receiver{private: key, auth: auth}, nil
}

// Secret is the keys as text, for Parse: keep it as a private key is kept.
func (r *Receiver) Secret() string {
	return base64.RawURLEncoding.EncodeToString(r.private.Bytes()) + "." + base64.RawURLEncoding.EncodeToString(r.auth)
}

// Format keeps the keys out of any log line that prints the receiver.
func (r *Receiver) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "webpushreceiver.Receiver{P256dh: %q}", r.subscriptionKeys().P256dh)
}

// Subscription is the subscription a browser would hand over for these
// keys and endpoint, its push service's URL for it.
func (r *Receiver) Subscription(endpoint string) push.Subscription {
	return push.Subscription{Endpoint: endpoint, Keys: r.subscriptionKeys()}
}

func (r *Receiver) subscriptionKeys() push.SubscriptionKeys {
	return push.SubscriptionKeys{
		P256dh: base64.RawURLEncoding.EncodeToString(r.private.PublicKey().Bytes()),
		Auth:   base64.RawURLEncoding.EncodeToString(r.auth),
	}
}

// Decrypt opens a push's body as the browser does.
func (r *Receiver) Decrypt(body []byte) ([]byte, error) {
	return decrypt(body, r.private, r.auth)
}

// decrypt opens an aes128gcm body (RFC 8188) as the browser does, with the
// subscription's private key and auth secret (RFC 8291 §3.4): one record,
// salt(16) | rs(4) | idlen(1) | the sender's public key | ciphertext.
func decrypt(body []byte, private *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body shorter than its header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen {
		return nil, errors.New("body shorter than its key id")
	}
	senderKey, ciphertext := body[21:21+idlen], body[21+idlen:]
	if uint32(len(ciphertext)) > rs {
		return nil, fmt.Errorf("more than one record (%d bytes, record size %d)", len(ciphertext), rs)
	}
	cek, nonce, err := contentKeys(private, senderKey, auth, salt)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		return nil, fmt.Errorf("opening the record: %w", err)
	}
	// The last record's padding: zeros after a 0x02 delimiter.
	end := bytes.LastIndexByte(bytes.TrimRight(plain, "\x00"), 2)
	if end < 0 || end != len(bytes.TrimRight(plain, "\x00"))-1 {
		return nil, errors.New("no last-record delimiter")
	}
	return plain[:end], nil
}

// contentKeys derive the content encryption key and nonce.
func contentKeys(private *ecdh.PrivateKey, senderKey, auth, salt []byte) (cek, nonce []byte, err error) {
	sender, err := ecdh.P256().NewPublicKey(senderKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sender key: %w", err)
	}
	shared, err := private.ECDH(sender)
	if err != nil {
		return nil, nil, err
	}
	info := append([]byte("WebPush: info\x00"), private.PublicKey().Bytes()...)
	info = append(info, senderKey...)
	ikm, err := hkdf.Key(sha256.New, shared, auth, string(info), 32)
	if err != nil {
		return nil, nil, err
	}
	if cek, err = hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16); err != nil {
		return nil, nil, err
	}
	nonce, err = hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	return cek, nonce, err
}
