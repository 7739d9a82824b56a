// Package unsubscribe is one-click unsubscribe (RFC 8058): the signed link
// an email in a category its recipient may leave carries in its
// List-Unsubscribe header, and the page that link leads to.
//
// The link names the tenant, the category and the address, signed with
// HMAC-SHA256 under a key derived from the document links' secret. It does
// not expire: mail is read, and its header used, long after it was sent.
// A POST to it — what a mail client's "unsubscribe" button sends, with the
// body List-Unsubscribe=One-Click, and what the page's button sends —
// records the opt-out: for a subscriber's email (the link names them), as
// their preference — the category switched off for email — and for an
// address written inline, as a suppression limited to that category. A
// link signed before links named subscribers keeps working, as the latter.
// A GET only
// shows the page asking to confirm: link scanners fetch every link in a
// message, and must not unsubscribe anyone.
package unsubscribe

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/shared/suppression"
)

// Path is where the links lead; the token follows.
const Path = "/v1/unsubscribe/"

// ErrRefused covers every reason a token is not honoured (altered,
// malformed, another deployment's), on purpose undistinguished.
var ErrRefused = errors.New("unsubscribe: link refused")

// Opt is what a link unsubscribes: an address from a tenant's category,
// and when the address is a subscriber's, which subscriber.
type Opt struct {
	Tenant   string `json:"t"`
	Category string `json:"c"`
	Address  string `json:"a"`
	// Subscriber is the tenant's subscriber the email went to; empty for an
	// inline recipient, and in every link signed before it existed.
	Subscriber string `json:"s,omitempty"`
}

// Signer makes and checks the links.
type Signer struct {
	key     []byte
	baseURL string
}

// NewSigner signs links under baseURL (Herald's public address) with a key
// derived from secret (the document links' secret, at least 32 bytes), so
// that a document link's signature is never an unsubscribe link's.
func NewSigner(secret []byte, baseURL string) (*Signer, error) {
	if len(secret) < 32 {
		return nil, errors.New("unsubscribe: the link secret must be at least 32 bytes")
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("unsubscribe: %q is not a base URL such as https://herald.example.com", baseURL)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("herald unsubscribe links v1"))
	return &Signer{key: mac.Sum(nil), baseURL: strings.TrimSuffix(baseURL, "/")}, nil
}

// Link is the URL that unsubscribes o.
func (s *Signer) Link(o Opt) string {
	o.Address = suppression.Normalize(o.Address)
	payload, _ := json.Marshal(o) // strings only: cannot fail
	p := base64.RawURLEncoding.EncodeToString(payload)
	return s.baseURL + Path + p + "." + s.sign(p)
}

// Verify reads a token (the link's last segment), checking its signature
// in constant time.
func (s *Signer) Verify(token string) (Opt, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(s.sign(p))) {
		return Opt{}, ErrRefused
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return Opt{}, ErrRefused
	}
	var o Opt
	if err := json.Unmarshal(payload, &o); err != nil || o.Tenant == "" || o.Address == "" || !suppression.ValidCategory(o.Category) {
		return Opt{}, ErrRefused
	}
	return o, nil
}

func (s *Signer) sign(payload string) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}
