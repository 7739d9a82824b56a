package webpushreceiver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/services/delivery/push/webpush/webpushreceiver"
)

// received is one request a push service got: its VAPID header and body.
type received struct {
	authorization string
	body          []byte
}

// pushed sends a push with the real Web Push provider to r's subscription
// on a server that keeps what it gets, and returns that, the server's
// origin and the VAPID public key the sender signed with.
func pushed(t *testing.T, r *webpushreceiver.Receiver, title string) (received, string, []byte) {
	t.Helper()
	got := make(chan received, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		require.NoError(t, err)
		got <- received{authorization: req.Header.Get("Authorization"), body: body}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	private, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	s, err := webpush.New(webpush.Config{VAPIDPublicKey: public, VAPIDPrivateKey: private,
		Subscriber: "mailto:ops@example.com", AllowPrivateNetworks: true})
	require.NoError(t, err)
	sub := r.Subscription(srv.URL + "/push/1")
	_, err = s.Send(context.Background(), push.Message{ID: "ntf_1", Subscription: &sub, Title: title, Body: "On its way"})
	require.NoError(t, err)
	serverKey, err := base64.RawURLEncoding.DecodeString(public)
	require.NoError(t, err)
	return <-got, srv.URL, serverKey
}

// A push the real provider sends to a receiver's subscription is opened
// by the receiver, and by the same keys read back from their secret, to
// the payload the service worker gets; other keys, or a changed byte, do
// not open it.
func TestAReceiverDecryptsWhatTheSenderEncryptedForIt(t *testing.T) {
	t.Parallel()
	r, err := webpushreceiver.New()
	require.NoError(t, err)
	got, _, _ := pushed(t, r, "PO-1 shipped")

	plain, err := r.Decrypt(got.body)
	require.NoError(t, err)
	var p webpush.Payload
	require.NoError(t, json.Unmarshal(plain, &p))
	require.Equal(t, webpush.Payload{ID: "ntf_1", Title: "PO-1 shipped", Body: "On its way"}, p)

	again, err := webpushreceiver.Parse(r.Secret())
	require.NoError(t, err)
	require.Equal(t, r.Subscription("x"), again.Subscription("x"))
	plainAgain, err := again.Decrypt(got.body)
	require.NoError(t, err)
	require.Equal(t, plain, plainAgain)

	other, err := webpushreceiver.New()
	require.NoError(t, err)
	_, err = other.Decrypt(got.body)
	require.ErrorContains(t, err, "opening the record")

	changed := append([]byte(nil), got.body...)
	changed[len(changed)-1] ^= 1
	_, err = r.Decrypt(changed)
	require.ErrorContains(t, err, "opening the record")
	_, err = r.Decrypt(got.body[:20])
	require.Error(t, err)
}

// A subscription's keys are what a browser hands over: a P-256 public key
// and a 16-byte auth secret, base64url, which the provider accepts.
func TestAReceiversSubscriptionIsOneTheProviderAccepts(t *testing.T) {
	t.Parallel()
	r, err := webpushreceiver.New()
	require.NoError(t, err)
	sub := r.Subscription("https://push.example/sub/1")
	require.Equal(t, "https://push.example/sub/1", sub.Endpoint)
	require.NoError(t, webpush.ValidateSubscription(sub, false))
}

// The keys are secrets: printing a receiver shows its public key only,
// and Parse refuses what is not a pair of keys without quoting it.
func TestAReceiversKeysStaySecret(t *testing.T) {
	t.Parallel()
	r, err := webpushreceiver.New()
	require.NoError(t, err)
	auth, err := base64.RawURLEncoding.DecodeString(r.Subscription("").Keys.Auth)
	require.NoError(t, err)
	for _, printed := range []string{fmt.Sprint(r), fmt.Sprintf("%v %+v %#v", r, r, r)} {
		require.NotContains(t, printed, r.Secret())
		require.NotContains(t, printed, fmt.Sprint(auth)[1:20])
		require.Contains(t, printed, r.Subscription("").Keys.P256dh)
	}
	authText := r.Subscription("").Keys.Auth
	for _, bad := range []string{"", "no-dot", "AAAA." + authText, r.Secret() + "AA", "!." + authText} {
		_, err := webpushreceiver.Parse(bad)
		require.Error(t, err, "%q", bad)
		if bad != "" {
			require.NotContains(t, err.Error(), bad)
		}
	}
}

// A push service takes a push only with a VAPID header signed by the key
// the subscription was made with, for its own origin: it says who sent.
func TestVerifyVAPIDChecksTheKeyAndTheAudience(t *testing.T) {
	t.Parallel()
	r, err := webpushreceiver.New()
	require.NoError(t, err)
	got, origin, serverKey := pushed(t, r, "PO-1 shipped")

	sub, err := webpushreceiver.VerifyVAPID(got.authorization, serverKey, origin)
	require.NoError(t, err)
	require.Equal(t, "mailto:ops@example.com", sub)

	_, otherPublic, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	otherKey, err := base64.RawURLEncoding.DecodeString(otherPublic)
	require.NoError(t, err)
	_, err = webpushreceiver.VerifyVAPID(got.authorization, otherKey, origin)
	require.ErrorContains(t, err, "not the subscription's application server key")
	_, err = webpushreceiver.VerifyVAPID(got.authorization, serverKey, "https://push.example")
	require.ErrorContains(t, err, "is not the push service's origin")
	_, err = webpushreceiver.VerifyVAPID("", serverKey, origin)
	require.ErrorContains(t, err, "not a vapid one")
}
