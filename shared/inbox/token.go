package inbox

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A subscriber token is what a browser holds: one tenant's one subscriber,
// until it expires. hit1.<payload>.<mac>, both base64url: the payload is
// the expiry (Unix seconds, 8 bytes), the tenant's length (uvarint), the
// tenant and the subscriber id, so no id can be read as another's; the
// mac is HMAC-SHA-256 of "hit1." and the payload.
const tokenPrefix = "hit1."

const (
	MinTokenTTL     = time.Minute
	MaxTokenTTL     = 24 * time.Hour
	DefaultTokenTTL = time.Hour
	// MinSecret is the shortest secret tokens are derived from.
	MinSecret = 32
)

// ErrTokenRefused is every reason a token is not accepted — tampered,
// expired, malformed, signed with another key — so that a refusal tells
// its holder nothing.
var ErrTokenRefused = errors.New("inbox: token refused")

// Tokens mints and verifies subscriber tokens.
type Tokens struct{ key []byte }

// NewTokens derives the token key from the deployment's secret, so that
// the secret itself signs nothing the browser sees.
func NewTokens(secret []byte) (*Tokens, error) {
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("inbox: the token secret is %d bytes; at least %d", len(secret), MinSecret)
	}
	key, err := hkdf.Key(sha256.New, secret, nil, "herald inbox tokens v1", 32)
	if err != nil {
		return nil, fmt.Errorf("inbox: deriving the token key: %w", err)
	}
	return &Tokens{key: key}, nil
}

// Mint is a token for the tenant's subscriber, valid for ttl from now
// (DefaultTokenTTL when zero; between MinTokenTTL and MaxTokenTTL).
func (t *Tokens) Mint(tenant, sub string, ttl time.Duration, now time.Time) (string, time.Time, error) {
	if ttl == 0 {
		ttl = DefaultTokenTTL
	}
	if ttl < MinTokenTTL || ttl > MaxTokenTTL {
		return "", time.Time{}, fmt.Errorf("inbox: a token lives between %s and %s, not %s", MinTokenTTL, MaxTokenTTL, ttl)
	}
	if tenant == "" || sub == "" {
		return "", time.Time{}, errors.New("inbox: a token needs a tenant and a subscriber")
	}
	expires := now.Add(ttl).Truncate(time.Second)
	payload := binary.BigEndian.AppendUint64(nil, uint64(expires.Unix()))
	payload = binary.AppendUvarint(payload, uint64(len(tenant)))
	payload = append(append(payload, tenant...), sub...)
	body := tokenPrefix + base64.RawURLEncoding.EncodeToString(payload)
	return body + "." + base64.RawURLEncoding.EncodeToString(t.mac(body)), expires, nil
}

func (t *Tokens) mac(body string) []byte {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

// Verify is the tenant and subscriber token names, if its mac is this
// key's and it has not expired at now.
func (t *Tokens) Verify(token string, now time.Time) (tenant, sub string, err error) {
	body, sig, ok := cutLast(token, ".")
	encoded, versioned := strings.CutPrefix(body, tokenPrefix)
	if !ok || !versioned {
		return "", "", ErrTokenRefused
	}
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(mac, t.mac(body)) {
		return "", "", ErrTokenRefused
	}
	payload, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil || len(payload) < 9 {
		return "", "", ErrTokenRefused
	}
	if !now.Before(time.Unix(int64(binary.BigEndian.Uint64(payload)), 0)) {
		return "", "", ErrTokenRefused
	}
	r := bytes.NewReader(payload[8:])
	n, err := binary.ReadUvarint(r)
	rest := payload[len(payload)-r.Len():]
	if err != nil || n == 0 || n >= uint64(len(rest)) {
		return "", "", ErrTokenRefused
	}
	return string(rest[:n]), string(rest[n:]), nil
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+len(sep):], true
}
