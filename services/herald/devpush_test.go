package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// The push sink's subscription, at the path the banner prints, PUT with a
// key of acme onto u-lucia, is taken by the devices API of herald dev —
// which lets endpoints on this machine in — and a push dev's Web Push
// provider sends to it lands decrypted where the banner says, as the push
// a service worker would get. Not parallel: it sets the environment.
func TestDevPushSinkIsADeviceDevPushesTo(t *testing.T) {
	banner, data := startDev(t)
	m := regexp.MustCompile(`Push +(\S+subscription\.json)`).FindStringSubmatch(banner)
	require.NotNil(t, m, banner)
	subscription := m[1]
	require.Equal(t, filepath.Join(data, "push", "subscription.json"), subscription)
	require.Contains(t, banner, "its pushes are written to "+filepath.Join(data, "push")+"/")
	var tenantKey string
	for _, c := range bannerCommands(t, banner) {
		if strings.Contains(c.line, "keys create --tenant") {
			t.Setenv("NATS_URL", c.natsURL)
			out, err := herald(t, c.args...)
			require.NoError(t, err, out)
			tenantKey = regexp.MustCompile(`hk_\S+`).FindString(out)
		}
	}
	require.NotEmpty(t, tenantKey, banner)
	api := regexp.MustCompile(`HTTP API +(http://\S+)/v1/`).FindStringSubmatch(banner)[1]
	put := func(path string, body []byte) (int, string) {
		req, err := http.NewRequestWithContext(heraldtest.Context(t), http.MethodPut, api+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tenantKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := heraldtest.HTTPClient(t).Do(req)
		require.NoError(t, err)
		var answer bytes.Buffer
		_, _ = answer.ReadFrom(resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode, answer.String()
	}
	// The API learns of the new key from its watch.
	var status int
	var answer string
	require.Eventually(t, func() bool {
		status, answer = put("/v1/subscribers/u-lucia", []byte(`{"name":"Lucía","email":"lucia@frutas.example","locale":"es"}`))
		return status != http.StatusUnauthorized
	}, 30*time.Second, 50*time.Millisecond)
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, status, answer)
	device, err := os.ReadFile(subscription)
	require.NoError(t, err)
	status, answer = put("/v1/subscribers/u-lucia/devices/dev-browser", device)
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, status, answer)

	// Dev's Web Push provider, with its VAPID pair from the data dir, as
	// the push channel sends.
	private, err := os.ReadFile(filepath.Join(data, "vapid.key"))
	require.NoError(t, err)
	public, err := os.ReadFile(filepath.Join(data, "vapid.pub"))
	require.NoError(t, err)
	sender, err := webpush.New(webpush.Config{VAPIDPublicKey: string(public), VAPIDPrivateKey: string(private),
		Subscriber: "mailto:dev@localhost", AllowPrivateNetworks: true})
	require.NoError(t, err)
	var body struct{ Subscription push.Subscription }
	require.NoError(t, json.Unmarshal(device, &body))
	_, err = sender.Send(heraldtest.Context(t), push.Message{ID: "ntf_1", Subscription: &body.Subscription, Title: "PO-2026-0043 shipped"})
	require.NoError(t, err)

	pushes, err := filepath.Glob(filepath.Join(data, "push", "*-ntf_1.json"))
	require.NoError(t, err)
	require.Len(t, pushes, 1, "the push is written before the sink answers")
	b, err := os.ReadFile(pushes[0])
	require.NoError(t, err)
	var p webpush.Payload
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, webpush.Payload{ID: "ntf_1", Title: "PO-2026-0043 shipped"}, p)
}
