package inbox

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var secret = bytes.Repeat([]byte("s"), 32)

func TestTokens(t *testing.T) {
	t.Parallel()
	tokens, err := NewTokens(secret)
	require.NoError(t, err)
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	// Ids hold any printable text: the tenant/subscriber split is by
	// length, not by a separator.
	token, expires, err := tokens.Mint("acme", "ana.o'brien 1@x", 0, now)
	require.NoError(t, err)
	require.Equal(t, now.Add(DefaultTokenTTL), expires)
	tenant, sub, err := tokens.Verify(token, now.Add(59*time.Minute))
	require.NoError(t, err)
	require.Equal(t, "acme", tenant)
	require.Equal(t, "ana.o'brien 1@x", sub)

	other, err := NewTokens(bytes.Repeat([]byte("o"), 32))
	require.NoError(t, err)
	body, sig, _ := cutLast(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(body, tokenPrefix))
	require.NoError(t, err)
	payload[len(payload)-1] ^= 1
	forged := tokenPrefix + base64.RawURLEncoding.EncodeToString(payload) + "." + sig
	flipped := []byte(sig)
	flipped[3] ^= 2

	for name, tc := range map[string]struct {
		tokens *Tokens
		token  string
		at     time.Time
	}{
		"expired":            {tokens, token, expires},
		"tampered payload":   {tokens, forged, now},
		"tampered signature": {tokens, body + "." + string(flipped), now},
		"other secret":       {other, token, now},
		"malformed":          {tokens, "hit1.", now},
		"other version":      {tokens, "hit2." + strings.TrimPrefix(token, tokenPrefix), now},
	} {
		_, _, err := tc.tokens.Verify(tc.token, tc.at)
		require.Equal(t, ErrTokenRefused, err, name)
	}

	for _, ttl := range []time.Duration{time.Second, 25 * time.Hour, -time.Hour} {
		_, _, err := tokens.Mint("acme", "ana", ttl, now)
		require.Error(t, err, ttl)
	}
	_, err = NewTokens(secret[:31])
	require.Error(t, err)
}
