package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/apns/apnstest"
	"github.com/heraldhq/herald/services/delivery/push/fcm/fcmtest"
	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/services/delivery/push/webpush/webpushtest"
	"github.com/heraldhq/herald/shared/recipient"
)

func secretFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// Each configured provider is built from the secret its file or variable
// holds, by the kind of device it reaches.
func TestPushProvidersAreBuiltFromTheirSecrets(t *testing.T) {
	t.Parallel()
	fake := fcmtest.New(t)
	p8, _ := apnstest.NewKey(t)
	private, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	a := &App{cfg: Config{Getenv: env{"APNS_KEY": p8}.get, Push: PushConfig{
		FCM:     &FCMConfig{CredentialsFile: secretFile(t, string(fake.ServiceAccountJSON())), Endpoint: fake.Endpoint()},
		APNs:    &APNsConfig{KeyEnv: "APNS_KEY", KeyID: "ABC123DEFG", TeamID: "DEF123GHIJ", Topic: "com.example.app"},
		WebPush: &WebPushConfig{VAPIDPublicKey: public, VAPIDPrivateKeyFile: secretFile(t, private), Contact: "mailto:ops@example.com"},
	}}}
	senders, err := a.pushProviders(context.Background())
	require.NoError(t, err)
	require.ElementsMatch(t, []recipient.DeviceKind{recipient.DeviceFCM, recipient.DeviceAPNs, recipient.DeviceWebPush},
		keys(senders))
}

func keys[K comparable, V any](m map[K]V) []K {
	var out []K
	for k := range m {
		out = append(out, k)
	}
	return out
}

type env map[string]string

func (e env) get(name string) string { return e[name] }

// A provider that cannot be built names its field, and never shows the
// secret it read.
func TestPushProviderErrorsNameTheFieldNeverTheSecret(t *testing.T) {
	t.Parallel()
	const secret = "c2VjcmV0LXRoYXQtbXVzdC1ub3Qtc2hvdw"
	brokenPEM := "-----BEGIN PRIVATE KEY-----\n" + secret + "\n-----END PRIVATE KEY-----\n"
	for _, tt := range []struct {
		name string
		push PushConfig
		want string
	}{
		{"fcm credentials not JSON", PushConfig{FCM: &FCMConfig{CredentialsFile: secretFile(t, `{"private_key": "`+secret)}},
			"push.fcm: fcm: CredentialsJSON is not JSON"},
		{"fcm credentials file missing", PushConfig{FCM: &FCMConfig{CredentialsFile: "/nonexistent/fcm.json"}},
			"push.fcm.credentials_file: reading the secret file"},
		{"apns key not a key", PushConfig{APNs: &APNsConfig{KeyFile: secretFile(t, brokenPEM), KeyID: "ABC123DEFG", TeamID: "DEF123GHIJ", Topic: "com.example.app"}},
			"push.apns: apns:"},
		{"apns key variable unset", PushConfig{APNs: &APNsConfig{KeyEnv: "NO_SUCH_VARIABLE", KeyID: "ABC123DEFG", TeamID: "DEF123GHIJ", Topic: "com.example.app"}},
			"push.apns.key_env: the environment variable NO_SUCH_VARIABLE is not set"},
		{"vapid private key not a key", PushConfig{WebPush: &WebPushConfig{VAPIDPublicKey: "BPublic", VAPIDPrivateKeyFile: secretFile(t, secret), Contact: "mailto:ops@example.com"}},
			"push.webpush: webpush:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := &App{cfg: Config{Getenv: env{}.get, Push: tt.push}}
			_, err := a.pushProviders(context.Background())
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), secret)
		})
	}
}

// A Web Push endpoint is dialled through the webhook guard: an endpoint
// on a private address (the fake's loopback) is refused, and nothing
// reaches it, unless webhooks.allow_private_networks lets webhooks reach
// such addresses too — as herald dev does.
func TestWebPushEndpointsPassTheWebhookGuard(t *testing.T) {
	t.Parallel()
	private, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	for _, allow := range []bool{false, true} {
		fake := webpushtest.NewServer(t)
		a := &App{cfg: Config{Webhooks: WebhooksConfig{AllowPrivateNetworks: allow}, Push: PushConfig{
			WebPush: &WebPushConfig{VAPIDPublicKey: public, VAPIDPrivateKeyFile: secretFile(t, private), Contact: "mailto:ops@example.com"}}}}
		senders, err := a.pushProviders(context.Background())
		require.NoError(t, err)
		sub := fake.Subscribe(t, public)
		_, err = senders[recipient.DeviceWebPush].Send(context.Background(), push.Message{ID: "n1", Subscription: &sub, Title: "Shipped", Body: "PO-1"})
		if !allow {
			require.Error(t, err)
			require.Zero(t, fake.Requests(), "nothing reaches a private address")
			continue
		}
		require.NoError(t, err)
		pushes := fake.Pushes()
		require.Len(t, pushes, 1)
		require.True(t, strings.Contains(string(pushes[0].Plaintext), "Shipped"), "the browser can read the title")
	}
}
