package webpush_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/services/delivery/push/webpush/webpushtest"
	"github.com/heraldhq/herald/services/delivery/webhook"
	"github.com/heraldhq/herald/shared/provider"
)

// newSender is a sender with a fresh VAPID key pair, allowed to reach the
// fake on loopback over http, and that key pair's public half.
func newSender(t *testing.T, allowPrivate bool) (*webpush.Sender, string) {
	t.Helper()
	private, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	s, err := webpush.New(webpush.Config{
		VAPIDPublicKey: public, VAPIDPrivateKey: private,
		Subscriber: "mailto:ops@example.com", AllowPrivateNetworks: allowPrivate,
	})
	require.NoError(t, err)
	return s, public
}

func message(sub push.Subscription) push.Message {
	return push.Message{
		ID: "ntf_1", Subscription: &sub,
		Title: "PO-2026-0042 shipped", Body: "Your order is on its way",
		URL: "https://shop.example.com/orders/PO-2026-0042", CollapseID: "order PO-2026-0042/status",
		TTL: time.Hour,
	}
}

func TestSendIsDecryptedByTheSubscriptionToThePayload(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	s, public := newSender(t, true)
	sub := fake.Subscribe(t, public)

	receipt, err := s.Send(context.Background(), message(sub))
	require.NoError(t, err)

	pushes := fake.Pushes()
	require.Len(t, pushes, 1)
	require.Equal(t, fake.URL+"/message/1", receipt.MessageID)
	var got webpush.Payload
	require.NoError(t, json.Unmarshal(pushes[0].Plaintext, &got))
	require.Equal(t, webpush.Payload{
		ID: "ntf_1", Title: "PO-2026-0042 shipped", Body: "Your order is on its way",
		URL: "https://shop.example.com/orders/PO-2026-0042", Tag: "order PO-2026-0042/status",
	}, got)
	require.Equal(t, 3600, pushes[0].TTL)
	require.Equal(t, "mailto:ops@example.com", pushes[0].Subscriber)
	require.NotEmpty(t, pushes[0].Topic, "a collapse id that is no Topic goes as a digest")
}

func TestSendUsesTheDefaultTTLAndATopicAsItIs(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	s, public := newSender(t, true)
	msg := message(fake.Subscribe(t, public))
	msg.TTL, msg.CollapseID = 0, "order-42"

	_, err := s.Send(context.Background(), msg)
	require.NoError(t, err)
	pushes := fake.Pushes()
	require.Len(t, pushes, 1)
	require.Equal(t, int(webpush.DefaultTTL/time.Second), pushes[0].TTL)
	require.Equal(t, "order-42", pushes[0].Topic)
}

func TestSendWithAnHTTPSContactKeepsIt(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	private, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	s, err := webpush.New(webpush.Config{VAPIDPublicKey: public, VAPIDPrivateKey: private,
		Subscriber: "https://example.com/contact", AllowPrivateNetworks: true})
	require.NoError(t, err)

	_, err = s.Send(context.Background(), message(fake.Subscribe(t, public)))
	require.NoError(t, err)
	require.Equal(t, "https://example.com/contact", fake.Pushes()[0].Subscriber)
}

func TestAnotherServerKeyIsRefusedPermanently(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	s, _ := newSender(t, true)
	_, otherPublic, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)

	_, err = s.Send(context.Background(), message(fake.Subscribe(t, otherPublic)))
	require.Error(t, err)
	require.True(t, provider.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "HTTP 403")
	require.False(t, push.IsGone(err))
	require.Empty(t, fake.Pushes())
}

func TestGoneSubscriptions(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	s, public := newSender(t, true)
	unsubscribed := fake.Subscribe(t, public)
	fake.Unsubscribe(unsubscribed.Endpoint)
	unknown := fake.Subscribe(t, public)
	unknown.Endpoint = fake.URL + "/push/nobody"

	for name, sub := range map[string]push.Subscription{"410": unsubscribed, "404": unknown} {
		_, err := s.Send(context.Background(), message(sub))
		require.Error(t, err, name)
		require.True(t, push.IsGone(err), "%s: %v", name, err)
		require.True(t, provider.IsPermanent(err), name)
		require.ErrorContains(t, err, "HTTP "+name)
	}
}

func TestThrottlingAndOutagesAreTransient(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	s, public := newSender(t, true)
	sub := fake.Subscribe(t, public)
	fake.Refuse(webpushtest.Answer{Status: http.StatusTooManyRequests, RetryAfter: "30", Body: "slow down"},
		webpushtest.Answer{Status: http.StatusServiceUnavailable, RetryAfter: "5"})

	_, err := s.Send(context.Background(), message(sub))
	require.Error(t, err)
	require.False(t, provider.IsPermanent(err), "%v", err)
	require.Equal(t, 30*time.Second, provider.RetryAfter(err))
	require.ErrorContains(t, err, "slow down")

	_, err = s.Send(context.Background(), message(sub))
	require.Error(t, err)
	require.False(t, provider.IsPermanent(err), "%v", err)
	require.Equal(t, 5*time.Second, provider.RetryAfter(err))
}

func TestPrivateEndpointsAreRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	s, public := newSender(t, false)
	sub := fake.Subscribe(t, public)
	port := fake.URL[strings.LastIndex(fake.URL, ":"):]

	for _, endpoint := range []string{
		"https://127.0.0.1" + port + "/push/sub1",
		"https://localhost" + port + "/push/sub1",
		"https://LocalHost." + port + "/push/sub1",
		"https://[::ffff:127.0.0.1]" + port + "/push/sub1",
	} {
		sub.Endpoint = endpoint
		_, err := s.Send(context.Background(), message(sub))
		require.Error(t, err, endpoint)
		require.True(t, provider.IsPermanent(err), endpoint)
		require.ErrorIs(t, err, webhook.ErrPrivateNetwork, endpoint)
		var field *webpush.FieldError
		require.ErrorAs(t, err, &field, endpoint)
		require.Equal(t, "subscription.endpoint", field.Field)
	}
	require.Zero(t, fake.Requests())
}

func TestPlainHTTPNeedsPrivateNetworksAllowed(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	s, public := newSender(t, false)
	sub := fake.Subscribe(t, public)

	_, err := s.Send(context.Background(), message(sub))
	var field *webpush.FieldError
	require.ErrorAs(t, err, &field)
	require.Equal(t, "subscription.endpoint", field.Field)
	require.ErrorContains(t, err, `must be https, not "http"`)
	require.True(t, provider.IsPermanent(err))
	require.Zero(t, fake.Requests())
}

func TestAPayloadTooLargeIsPermanentAndNotSent(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	s, public := newSender(t, true)
	msg := message(fake.Subscribe(t, public))
	msg.Body = strings.Repeat("x", 4096)

	_, err := s.Send(context.Background(), msg)
	require.Error(t, err)
	require.True(t, provider.IsPermanent(err), "%v", err)
	require.Zero(t, fake.Requests())
}

func TestAnUnreachableServiceIsTransient(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	s, public := newSender(t, true)
	sub := fake.Subscribe(t, public)
	fake.Close()

	_, err := s.Send(context.Background(), message(sub))
	require.Error(t, err)
	require.False(t, provider.IsPermanent(err), "%v", err)
	require.False(t, provider.IsAmbiguous(err), "a refused connection delivered nothing")
	require.NotContains(t, err.Error(), "/push/", "the endpoint's path is its capability")
}

func TestValidateSubscription(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	_, public := newSender(t, true)
	good := fake.Subscribe(t, public)
	good.Endpoint = "https://fcm.googleapis.com/fcm/send/secret-capability"
	require.NoError(t, webpush.ValidateSubscription(good, false))

	cases := []struct {
		name, field string
		change      func(*push.Subscription)
		allow       bool
	}{
		{"no endpoint", "subscription.endpoint", func(s *push.Subscription) { s.Endpoint = "" }, false},
		{"relative", "subscription.endpoint", func(s *push.Subscription) { s.Endpoint = "/fcm/send/secret-capability" }, false},
		{"credentials", "subscription.endpoint", func(s *push.Subscription) { s.Endpoint = "https://u:p@fcm.googleapis.com/secret-capability" }, false},
		{"http", "subscription.endpoint", func(s *push.Subscription) { s.Endpoint = "http://fcm.googleapis.com/secret-capability" }, false},
		{"ftp even when allowed", "subscription.endpoint", func(s *push.Subscription) { s.Endpoint = "ftp://fcm.googleapis.com/secret-capability" }, true},
		{"metadata", "subscription.endpoint", func(s *push.Subscription) { s.Endpoint = "https://169.254.169.254/secret-capability" }, false},
		{"rfc1918", "subscription.endpoint", func(s *push.Subscription) { s.Endpoint = "https://10.1.2.3/secret-capability" }, false},
		{"p256dh not base64url", "subscription.keys.p256dh", func(s *push.Subscription) { s.Keys.P256dh = "not base64!" }, false},
		{"p256dh short", "subscription.keys.p256dh", func(s *push.Subscription) { s.Keys.P256dh = s.Keys.P256dh[:40] }, false},
		{"p256dh missing", "subscription.keys.p256dh", func(s *push.Subscription) { s.Keys.P256dh = "" }, false},
		{"auth 15 bytes", "subscription.keys.auth", func(s *push.Subscription) { s.Keys.Auth = "AAAAAAAAAAAAAAAAAAAA" }, false},
		{"auth missing", "subscription.keys.auth", func(s *push.Subscription) { s.Keys.Auth = "" }, false},
	}
	for _, c := range cases {
		sub := good
		c.change(&sub)
		err := webpush.ValidateSubscription(sub, c.allow)
		var field *webpush.FieldError
		require.ErrorAs(t, err, &field, c.name)
		require.Equal(t, c.field, field.Field, c.name)
		require.NotContains(t, err.Error(), "secret-capability", "%s: the endpoint's path is its capability", c.name)
	}

	allowed := good
	allowed.Endpoint = "http://127.0.0.1:8080/push/1"
	require.NoError(t, webpush.ValidateSubscription(allowed, true))
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	private, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	_, otherPublic, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	good := webpush.Config{VAPIDPublicKey: public, VAPIDPrivateKey: private, Subscriber: "mailto:ops@example.com"}
	_, err = webpush.New(good)
	require.NoError(t, err)

	cases := map[string]func(*webpush.Config){
		"no public key":            func(c *webpush.Config) { c.VAPIDPublicKey = "" },
		"no private key":           func(c *webpush.Config) { c.VAPIDPrivateKey = "" },
		"another pair's public":    func(c *webpush.Config) { c.VAPIDPublicKey = otherPublic },
		"public not a point":       func(c *webpush.Config) { c.VAPIDPublicKey = c.VAPIDPublicKey[:20] },
		"private not a key":        func(c *webpush.Config) { c.VAPIDPrivateKey = c.VAPIDPrivateKey[:10] },
		"contact without a scheme": func(c *webpush.Config) { c.Subscriber = "ops@example.com" },
		"http contact":             func(c *webpush.Config) { c.Subscriber = "http://example.com" },
		"no contact":               func(c *webpush.Config) { c.Subscriber = "" },
	}
	for name, change := range cases {
		cfg := good
		change(&cfg)
		_, err := webpush.New(cfg)
		require.Error(t, err, name)
		require.NotContains(t, err.Error(), private, name)
	}
}

func TestThePrivateKeyIsNeverPrinted(t *testing.T) {
	t.Parallel()
	private, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	cfg := webpush.Config{VAPIDPublicKey: public, VAPIDPrivateKey: private, Subscriber: "mailto:ops@example.com"}
	s, err := webpush.New(cfg)
	require.NoError(t, err)
	for _, out := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%v", s), fmt.Sprintf("%+v", struct{ S *webpush.Sender }{s})} {
		require.NotContains(t, out, private)
	}
}

func TestAnEndedContextSendsNothingAndIsNotAmbiguous(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	s, public := newSender(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := s.Send(ctx, message(fake.Subscribe(t, public)))
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, provider.IsAmbiguous(err), "nothing was sent: %v", err)
	require.Zero(t, fake.Requests())
}

func TestSendWithoutASubscriptionIsPermanent(t *testing.T) {
	t.Parallel()
	s, _ := newSender(t, true)
	_, err := s.Send(context.Background(), push.Message{ID: "ntf_1", Title: "t"})
	require.ErrorContains(t, err, "no subscription")
	require.True(t, provider.IsPermanent(err))
}
