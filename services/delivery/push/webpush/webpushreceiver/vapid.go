package webpushreceiver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"
)

// claims are the VAPID JWT's claims (RFC 8292 §2).
type claims struct {
	Aud string `json:"aud"`
	Exp int64  `json:"exp"`
	Sub string `json:"sub"`
}

// VerifyVAPID checks an Authorization header "vapid t=<JWT>, k=<key>" as a
// push service does: k is the key the subscription was made with, the JWT
// is ES256-signed with it, its audience is origin, it has not expired and
// expires within 24 hours, and it names a contact. It returns the contact.
func VerifyVAPID(header string, serverKey []byte, origin string) (string, error) {
	token, key, err := vapidParams(header)
	if err != nil {
		return "", err
	}
	if string(key) != string(serverKey) {
		return "", errors.New("VAPID key k is not the subscription's application server key")
	}
	c, err := verifyJWT(token, key)
	if err != nil {
		return "", err
	}
	now := time.Now()
	switch {
	case c.Aud != origin:
		return "", fmt.Errorf("VAPID aud %q is not the push service's origin %q", c.Aud, origin)
	case c.Exp <= now.Unix():
		return "", errors.New("VAPID JWT has expired")
	case c.Exp > now.Add(24*time.Hour).Unix():
		return "", errors.New("VAPID JWT expires more than 24 hours ahead")
	case !contact(c.Sub):
		return "", fmt.Errorf("VAPID sub %q is not a mailto: address or https: URL", c.Sub)
	}
	return c.Sub, nil
}

// vapidParams reads t and k from the header.
func vapidParams(header string) (token string, key []byte, err error) {
	rest, ok := strings.CutPrefix(header, "vapid ")
	if !ok {
		return "", nil, errors.New("Authorization is not a vapid one")
	}
	var k string
	for _, param := range strings.Split(rest, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(param), "=")
		switch name {
		case "t":
			token = value
		case "k":
			k = value
		}
	}
	key, err = base64.RawURLEncoding.DecodeString(k)
	if token == "" || err != nil {
		return "", nil, errors.New("Authorization lacks t or a base64url k")
	}
	return token, key, nil
}

// verifyJWT checks an ES256 JWT's signature with the uncompressed P-256
// key and returns its claims.
func verifyJWT(token string, key []byte) (claims, error) {
	var c claims
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, errors.New("VAPID t is not a JWT")
	}
	var head struct{ Alg string }
	if err := decodeSegment(parts[0], &head); err != nil || head.Alg != "ES256" {
		return c, errors.New("VAPID JWT is not ES256")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), key)
	if err != nil {
		return c, fmt.Errorf("VAPID k: %w", err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return c, errors.New("VAPID JWT signature is not 64 bytes")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(pub, digest[:], r, s) {
		return c, errors.New("VAPID JWT signature does not verify")
	}
	if err := decodeSegment(parts[1], &c); err != nil {
		return c, fmt.Errorf("VAPID JWT claims: %w", err)
	}
	return c, nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// contact reports whether sub is one mailto: address or an https: URL.
func contact(sub string) bool {
	if address, ok := strings.CutPrefix(sub, "mailto:"); ok {
		return strings.Contains(address, "@") && !strings.Contains(address, ":")
	}
	u, err := url.Parse(sub)
	return err == nil && u.Scheme == "https" && u.Host != ""
}
