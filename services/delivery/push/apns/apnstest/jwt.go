package apnstest

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"time"
)

// tokenLifetime is how long APNs accepts a provider token after its iat.
const tokenLifetime = time.Hour

// clockSkew is how far in the future an iat may be.
const clockSkew = time.Minute

// checkProviderToken verifies an authorization header's provider token as
// APNs does, and returns the 403 reason it is refused with, or "".
func (s *Server) checkProviderToken(authorization string) string {
	jwt, ok := strings.CutPrefix(authorization, "bearer ")
	if !ok || jwt == "" {
		return "MissingProviderToken"
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 || !s.verifies(parts[0]+"."+parts[1], parts[2]) {
		return "InvalidProviderToken"
	}
	var header struct{ Alg, Kid string }
	var claims struct {
		Iss string
		Iat int64
	}
	if !decodePart(parts[0], &header) || !decodePart(parts[1], &claims) ||
		header.Alg != "ES256" || header.Kid != s.account.KeyID || claims.Iss != s.account.TeamID {
		return "InvalidProviderToken"
	}
	iat := time.Unix(claims.Iat, 0)
	if time.Since(iat) > tokenLifetime || time.Until(iat) > clockSkew {
		return "ExpiredProviderToken"
	}
	return ""
}

// verifies checks an ES256 signature (r || s, 32 bytes each) of signed
// with the account's key.
func (s *Server) verifies(signed, signature string) bool {
	sig, err := base64.RawURLEncoding.DecodeString(signature)
	if err != nil || len(sig) != 64 || s.account.Key == nil {
		return false
	}
	digest := sha256.Sum256([]byte(signed))
	r, ss := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	return ecdsa.Verify(s.account.Key, digest[:], r, ss)
}

func decodePart(part string, v any) bool {
	raw, err := base64.RawURLEncoding.DecodeString(part)
	return err == nil && json.Unmarshal(raw, v) == nil
}
