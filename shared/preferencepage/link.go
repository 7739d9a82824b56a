package preferencepage

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/shared/recipient"
)

// Path is where the links lead; the token follows.
const Path = "/p/"

// ErrRefused covers every reason a token is not honoured (altered,
// malformed, another deployment's), on purpose undistinguished.
var ErrRefused = errors.New("preferencepage: link refused")

// Whose is the subscriber a link is for.
type Whose struct {
	Tenant     string
	Subscriber string
}

// Signer makes and checks the links.
type Signer struct {
	key     []byte
	baseURL string
}

// sigBytes is how much of the HMAC a link carries: 128 bits, which no
// one forges, in 22 characters rather than 43 — the link goes in text
// messages, where every character is paid for.
const sigBytes = 16

// NewSigner signs links under baseURL (Herald's public address) with a key
// derived from secret (the document links' secret, at least 32 bytes).
func NewSigner(secret []byte, baseURL string) (*Signer, error) {
	if len(secret) < 32 {
		return nil, errors.New("preferencepage: the link secret must be at least 32 bytes")
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("preferencepage: %q is not a base URL such as https://herald.example.com", baseURL)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("herald preference links v1"))
	return &Signer{key: mac.Sum(nil), baseURL: strings.TrimSuffix(baseURL, "/")}, nil
}

// Link is the URL of w's preference page.
func (s *Signer) Link(w Whose) string {
	return s.baseURL + Path + s.Token(w)
}

// Token is the link's last segment: the tenant and the subscriber id, a
// newline between them (neither may hold one), and the signature.
func (s *Signer) Token(w Whose) string {
	p := base64.RawURLEncoding.EncodeToString([]byte(w.Tenant + "\n" + w.Subscriber))
	return p + "." + s.sign(p)
}

// Verify reads a token, checking its signature in constant time.
func (s *Signer) Verify(token string) (Whose, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(s.sign(p))) {
		return Whose{}, ErrRefused
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return Whose{}, ErrRefused
	}
	tenant, subscriber, ok := strings.Cut(string(payload), "\n")
	if !ok || tenant == "" || recipient.CheckID(subscriber) != nil {
		return Whose{}, ErrRefused
	}
	return Whose{Tenant: tenant, Subscriber: subscriber}, nil
}

func (s *Signer) sign(payload string) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:sigBytes])
}
