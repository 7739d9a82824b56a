package documents

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrLinkRefused covers every reason a link is not honoured (expired,
// altered, malformed), on purpose undistinguished to the caller.
var ErrLinkRefused = errors.New("documents: link refused")

// Signer makes and checks expiring links to documents: the link carries its
// expiry and an HMAC-SHA256 of the document name and that expiry.
type Signer struct {
	secret  []byte
	baseURL string
	ttl     time.Duration
}

// NewSigner signs with secret (at least 32 bytes) links under baseURL (the
// public address of Herald's HTTP API) that stay valid for ttl.
func NewSigner(secret []byte, baseURL string, ttl time.Duration) (*Signer, error) {
	if len(secret) < 32 {
		return nil, errors.New("documents: the link secret must be at least 32 bytes")
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("documents: %q is not a base URL such as https://herald.example.com", baseURL)
	}
	if ttl <= 0 {
		return nil, errors.New("documents: the link lifetime must be positive")
	}
	return &Signer{secret: secret, baseURL: strings.TrimSuffix(baseURL, "/"), ttl: ttl}, nil
}

// LinkPath is where documents are served; the object name follows.
const LinkPath = "/v1/documents/"

// Link returns a URL to the named document, valid until now + ttl, and
// that expiry.
func (s *Signer) Link(name string, now time.Time) (string, time.Time) {
	expires := now.Add(s.ttl).Truncate(time.Second)
	exp := strconv.FormatInt(expires.Unix(), 10)
	q := url.Values{"expires": {exp}, "signature": {s.sign(name, exp)}}
	return s.baseURL + LinkPath + escapePath(name) + "?" + q.Encode(), expires
}

// Verify checks a link's expiry and signature, in constant time.
func (s *Signer) Verify(name, expires, signature string, now time.Time) error {
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || now.Unix() > exp {
		return ErrLinkRefused
	}
	want := s.sign(name, expires)
	if !hmac.Equal([]byte(want), []byte(signature)) {
		return ErrLinkRefused
	}
	return nil
}

func (s *Signer) sign(name, expires string) string {
	mac := hmac.New(sha256.New, s.secret)
	mac.Write([]byte(name))
	mac.Write([]byte{0})
	mac.Write([]byte(expires))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// escapePath escapes each segment of an object name, keeping the slashes.
func escapePath(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
