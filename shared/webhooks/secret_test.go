package webhooks_test

import (
	"encoding/base64"
	"strings"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/webhooks"
)

func TestNewSecretIsAStandardSecret(t *testing.T) {
	t.Parallel()
	s, err := webhooks.NewSecret()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(s, "whsec_"), "a secret is shown as whsec_…")
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	require.NoError(t, err)
	require.Len(t, raw, 32)

	key, err := webhooks.ParseSecret(s)
	require.NoError(t, err)
	require.Equal(t, raw, key)

	// The official library reads it as the same key.
	wh, err := standardwebhooks.NewWebhook(s)
	require.NoError(t, err)
	raw2, err := standardwebhooks.NewWebhookRaw(key)
	require.NoError(t, err)
	require.Equal(t, raw2, wh)

	other, err := webhooks.NewSecret()
	require.NoError(t, err)
	require.NotEqual(t, s, other, "secrets are random")
}

func TestParseSecret(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	b64 := base64.StdEncoding.EncodeToString(key)
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"prefixed", "whsec_" + b64, true},
		{"bare", b64, true},
		{"trailing newline", "whsec_" + b64 + "\n", true},
		{"24 bytes, the minimum", base64.StdEncoding.EncodeToString(key[:24]), true},
		{"64 bytes, the maximum", base64.StdEncoding.EncodeToString(append(key, key...)), true},
		{"empty", "", false},
		{"prefix only", "whsec_", false},
		{"not base64", "whsec_not*base64*at*all*sekrit", false},
		{"unpadded", "whsec_" + strings.TrimRight(base64.StdEncoding.EncodeToString(key[:25]), "="), false},
		{"too short", "whsec_" + base64.StdEncoding.EncodeToString([]byte("shortsekrit")), false},
		{"too long", "whsec_" + base64.StdEncoding.EncodeToString(append(append(key, key...), 'x')), false},
	}
	for _, tt := range tests {
		got, err := webhooks.ParseSecret(tt.in)
		if tt.ok {
			require.NoError(t, err, tt.name)
			require.NotEmpty(t, got, tt.name)
			continue
		}
		require.Error(t, err, tt.name)
		// Never echo the secret, or any recognisable part of it.
		if body := strings.TrimPrefix(strings.TrimSpace(tt.in), "whsec_"); len(body) > 4 {
			require.NotContains(t, err.Error(), body, tt.name)
			require.NotContains(t, err.Error(), "sekrit", tt.name)
		}
	}
}
