package api_test

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
)

const deviceAPNsToken = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"

func devicePath(subscriber, id string) string {
	return subscriberPath(subscriber) + "/devices/" + id
}

// webPushBody is a webpush device's body, the browser's endpoint at endpoint.
func webPushBody(t *testing.T, endpoint string) string {
	t.Helper()
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	require.NoError(t, err)
	return fmt.Sprintf(`{"kind":"webpush","subscription":{"endpoint":%q,"keys":{"p256dh":%q,"auth":%q}}}`, endpoint,
		base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()), base64.RawURLEncoding.EncodeToString(make([]byte, 16)))
}

// A subscriber's devices are put, listed masked, and removed; a 21st is
// refused naming the cap, a device of no subscriber is 404.
func TestASubscribersDevicesThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, subscriberPath("u-olga"), acmeSend, olgaBody).status)
	apns := `{"kind":"apns","token":"` + deviceAPNsToken + `","locale":"es-MX"}`

	put := b.sendJSON(t, http.MethodPut, devicePath("u-olga", "iphone"), acmeSend, apns)
	require.Equal(t, http.StatusCreated, put.status, put.body)
	require.NotContains(t, put.body, deviceAPNsToken)
	again := b.sendJSON(t, http.MethodPut, devicePath("u-olga", "iphone"), acmeSend, apns)
	require.Equal(t, http.StatusOK, again.status, again.body)
	web := b.sendJSON(t, http.MethodPut, devicePath("u-olga", "firefox"), acmeSend, webPushBody(t, "https://93.184.215.14/wpush/v2/secret-path"))
	require.Equal(t, http.StatusCreated, web.status, web.body)
	require.Equal(t, http.StatusForbidden, b.sendJSON(t, http.MethodPut, devicePath("u-olga", "x"), acmeRead, apns).status,
		"writing needs the send scope")

	list := b.do(t, http.MethodGet, subscriberPath("u-olga")+"/devices", acmeRead, nil)
	require.Equal(t, http.StatusOK, list.status, list.body)
	var got struct{ Devices []api.Device }
	require.NoError(t, json.Unmarshal([]byte(list.body), &got))
	require.Len(t, got.Devices, 2)
	require.Equal(t, "firefox", got.Devices[0].ID, "in id order")
	require.Equal(t, "https://93.184.215.14", got.Devices[0].Endpoint, "the origin only")
	require.Equal(t, "…61bb78ad", got.Devices[1].Token, "the last 8 characters only")
	require.Equal(t, "es-MX", got.Devices[1].Locale)
	require.NotContains(t, list.body, "secret-path")
	require.NotContains(t, list.body, deviceAPNsToken)
	require.NotContains(t, list.body, "p256dh")
	sub := b.do(t, http.MethodGet, subscriberPath("u-olga"), acmeRead, nil)
	require.Equal(t, http.StatusOK, sub.status, sub.body)
	var withDevices api.SubscriberWithDevices
	require.NoError(t, json.Unmarshal([]byte(sub.body), &withDevices))
	require.Equal(t, "olga@zarya.example", withDevices.Email)
	require.Equal(t, got.Devices, withDevices.Devices, "the subscriber shows her devices as their listing does")
	require.NotContains(t, sub.body, deviceAPNsToken)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, subscriberPath("u-olga")+"/devices", globexRead, nil).status,
		"acme's subscriber, not globex's")

	ghost := b.sendJSON(t, http.MethodPut, devicePath("u-ghost", "iphone"), acmeSend, apns)
	require.Equal(t, http.StatusNotFound, ghost.status, ghost.body)
	require.Contains(t, ghost.body, `has no subscriber \"u-ghost\"`)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, subscriberPath("u-ghost")+"/devices", acmeRead, nil).status)

	bad := b.sendJSON(t, http.MethodPut, devicePath("u-olga", "pixel"), acmeSend,
		strings.Replace(webPushBody(t, "https://93.184.215.14/wpush"), `"webpush"`, `"fcm"`, 1))
	require.Equal(t, http.StatusUnprocessableEntity, bad.status, bad.body)
	require.Contains(t, bad.body, "token: required for a fcm device")
	require.Contains(t, bad.body, "subscription: only a webpush device has one")

	for i := 2; i < 20; i++ {
		require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, devicePath("u-olga", fmt.Sprintf("d%02d", i)), acmeSend, apns).status)
	}
	capped := b.sendJSON(t, http.MethodPut, devicePath("u-olga", "one-more"), acmeSend, apns)
	require.Equal(t, http.StatusUnprocessableEntity, capped.status, capped.body)
	require.Contains(t, capped.body, "the most one may have (20)")

	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, devicePath("u-olga", "iphone"), acmeSend, nil).status)
	gone := b.do(t, http.MethodDelete, devicePath("u-olga", "iphone"), acmeSend, nil)
	require.Equal(t, http.StatusNotFound, gone.status, gone.body)
	require.Contains(t, gone.body, `has no device \"iphone\"`)
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, devicePath("u-olga", "one-more"), acmeSend, apns).status,
		"one removed, one more fits")
}

// A Web Push endpoint in a private network is refused, naming the field,
// unless private networks are allowed (herald dev).
func TestAWebPushEndpointInAPrivateNetworkIsRefused(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{false, true} {
		b := setup(t, api.Config{AllowPrivateNetworks: allow})
		require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, subscriberPath("u-olga"), acmeSend, olgaBody).status)
		for _, endpoint := range []string{"https://127.0.0.1:8443/push", "https://[::ffff:10.0.0.7]/push", "https://localhost/push"} {
			put := b.sendJSON(t, http.MethodPut, devicePath("u-olga", "firefox"), acmeSend, webPushBody(t, endpoint))
			if allow {
				require.Less(t, put.status, 300, "%s: %s", endpoint, put.body)
				continue
			}
			require.Equal(t, http.StatusUnprocessableEntity, put.status, "%s: %s", endpoint, put.body)
			require.Contains(t, put.body, "subscription.endpoint: ")
			require.True(t, strings.Contains(put.body, "loopback") || strings.Contains(put.body, "private"), put.body)
		}
	}
}
