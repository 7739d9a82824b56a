package apnstest_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push/apns/apnstest"
)

const device = "0a1b2c3d4e5f"

func TestTheFakeRefusesWhatAPNsRefuses(t *testing.T) {
	t.Parallel()
	_, key := apnstest.NewKey(t)
	fake := apnstest.NewServer(t, apnstest.Account{KeyID: "KEY", TeamID: "TEAM", Key: &key.PublicKey, Topic: "app"})
	good := func() *http.Request {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost,
			fake.URL+"/3/device/"+device, strings.NewReader(`{"aps":{"alert":{"title":"t"}}}`))
		require.NoError(t, err)
		req.Header.Set("authorization", "bearer "+resign(t, key, time.Now()))
		req.Header.Set("apns-topic", "app")
		req.Header.Set("apns-push-type", "alert")
		return req
	}
	cases := map[string]struct {
		change func(*http.Request)
		status int
		reason string
	}{
		"no provider token": {func(r *http.Request) { r.Header.Del("authorization") }, 403, "MissingProviderToken"},
		"an old iat": {func(r *http.Request) {
			r.Header.Set("authorization", "bearer "+resign(t, key, time.Now().Add(-2*time.Hour)))
		}, 403, "ExpiredProviderToken"},
		"no topic":           {func(r *http.Request) { r.Header.Del("apns-topic") }, 400, "MissingTopic"},
		"a background push":  {func(r *http.Request) { r.Header.Set("apns-push-type", "background") }, 400, "InvalidPushType"},
		"an apns-id no UUID": {func(r *http.Request) { r.Header.Set("apns-id", "ntf_1") }, 400, "BadMessageId"},
		"a long collapse id": {func(r *http.Request) { r.Header.Set("apns-collapse-id", strings.Repeat("c", 65)) }, 400, "BadCollapseId"},
		"a priority of 7":    {func(r *http.Request) { r.Header.Set("apns-priority", "7") }, 400, "BadPriority"},
		"an expiration date": {func(r *http.Request) { r.Header.Set("apns-expiration", "tomorrow") }, 400, "BadExpirationDate"},
		"a path with no hex": {func(r *http.Request) { r.URL.Path = "/3/device/xyz" }, 404, "BadPath"},
		"accepted as it is":  {func(*http.Request) {}, 200, ""},
	}
	for name, tc := range cases {
		req := good()
		tc.change(req)
		resp, err := fake.Client().Do(req)
		require.NoError(t, err, name)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, tc.status, resp.StatusCode, "%s: %s", name, body)
		require.Contains(t, string(body), tc.reason, name)
	}
	require.Len(t, fake.Pushes(), 1)
}
