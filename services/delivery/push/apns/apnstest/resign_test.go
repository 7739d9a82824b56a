package apnstest_test

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// resign makes a provider token issued at iat, as apns2 would have then.
func resign(t *testing.T, key *ecdsa.PrivateKey, iat time.Time) string {
	t.Helper()
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString([]byte(`{"alg":"ES256","kid":"KEY"}`)) + "." +
		enc.EncodeToString([]byte(fmt.Sprintf(`{"iss":"TEAM","iat":%d}`, iat.Unix())))
	digest := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	require.NoError(t, err)
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signed + "." + enc.EncodeToString(sig)
}
