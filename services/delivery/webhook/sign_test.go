package webhook_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/webhook"
	"github.com/heraldhq/herald/shared/webhooks"
)

// secret returns a new secret as a receiver knows it (whsec_…) and as
// Herald signs with it (the key).
func secret(t *testing.T) (string, []byte) {
	t.Helper()
	s, err := webhooks.NewSecret()
	require.NoError(t, err)
	key, err := webhooks.ParseSecret(s)
	require.NoError(t, err)
	return s, key
}

// verify checks a delivery the way a receiver does, with the official
// library and the receiver's copy of the secret.
func verify(t *testing.T, whsec string, id string, ts time.Time, sig string, body []byte) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(whsec)
	require.NoError(t, err)
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("webhook-signature", sig)
	return wh.Verify(body, h)
}

func TestSignIsVerifiedByTheOfficialLibrary(t *testing.T) {
	t.Parallel()
	oldS, oldK := secret(t)
	newS, newK := secret(t)
	otherS, _ := secret(t)
	id, ts := "ntf_0123abcd", time.Now()
	body := []byte(`{"type":"notification.delivered","data":{"id":"ntf_0123abcd"}}`)

	one := webhook.Sign(id, ts, body, newK)
	require.True(t, strings.HasPrefix(one, "v1,"))
	require.NotContains(t, one, " ")
	rotating := webhook.Sign(id, ts, body, newK, oldK)
	require.Len(t, strings.Split(rotating, " "), 2, "one signature per secret, space-separated")

	tests := []struct {
		name     string
		whsec    string
		id       string
		ts       time.Time
		sig      string
		body     []byte
		verifies bool
	}{
		{"one secret", newS, id, ts, one, body, true},
		{"rotation: the new secret", newS, id, ts, rotating, body, true},
		{"rotation: the old secret", oldS, id, ts, rotating, body, true},
		{"the old secret after the grace period", oldS, id, ts, one, body, false},
		{"another endpoint's secret", otherS, id, ts, rotating, body, false},
		{"a tampered body", newS, id, ts, rotating, []byte(`{"type":"notification.delivered","data":{"id":"ntf_other"}}`), false},
		{"a body with a stray space", newS, id, ts, one, append([]byte(" "), body...), false},
		{"another id", newS, "ntf_0123abce", ts, one, body, false},
		{"another timestamp", newS, id, ts.Add(time.Second), one, body, false},
	}
	for _, tt := range tests {
		err := verify(t, tt.whsec, tt.id, tt.ts, tt.sig, tt.body)
		if tt.verifies {
			require.NoError(t, err, tt.name)
		} else {
			require.ErrorIs(t, err, standardwebhooks.ErrNoMatchingSignature, tt.name)
		}
	}
}

func TestSignMatchesTheOfficialLibrarysSignature(t *testing.T) {
	t.Parallel()
	whsec, key := secret(t)
	wh, err := standardwebhooks.NewWebhook(whsec)
	require.NoError(t, err)
	ts := time.Unix(1674087231, 0)
	body := []byte(`{"type":"contact.created"}`)
	want, err := wh.Sign("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", ts, body)
	require.NoError(t, err)
	require.Equal(t, want, webhook.Sign("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", ts, body, key))
	require.Empty(t, webhook.Sign("msg_x", ts, body), "no secret, no signature")
}
