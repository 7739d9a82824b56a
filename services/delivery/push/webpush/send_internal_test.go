package webpush

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/webpush/webpushtest"
	"github.com/heraldhq/herald/services/delivery/webhook"
	"github.com/heraldhq/herald/shared/provider"
)

func newTestSender(t *testing.T, allowPrivate bool) (*Sender, string) {
	t.Helper()
	private, public, err := GenerateVAPIDKeys()
	require.NoError(t, err)
	s, err := New(Config{VAPIDPublicKey: public, VAPIDPrivateKey: private,
		Subscriber: "mailto:ops@example.com", AllowPrivateNetworks: allowPrivate})
	require.NoError(t, err)
	return s, public
}

// forgeSignature changes the last character of the VAPID JWT's signature
// on its way out, as an attacker replaying a stolen token for another
// message might.
type forgeSignature struct{ next http.RoundTripper }

func (f forgeSignature) RoundTrip(req *http.Request) (*http.Response, error) {
	auth := req.Header.Get("Authorization")
	token, key, _ := strings.Cut(auth, ", k=")
	last := token[len(token)-2]
	if last == 'A' {
		last = 'B'
	} else {
		last = 'A'
	}
	req.Header.Set("Authorization", token[:len(token)-2]+string(last)+token[len(token)-1:]+", k="+key)
	return f.next.RoundTrip(req)
}

func TestABadVAPIDSignatureIsRefusedAndPermanent(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	s, public := newTestSender(t, true)
	sub := fake.Subscribe(t, public)
	client := *s.client
	client.Transport = forgeSignature{next: s.client.Transport}
	s.client = &client

	_, err := s.Send(context.Background(), push.Message{ID: "n1", Title: "t", Subscription: &sub})
	require.Error(t, err)
	require.ErrorContains(t, err, "HTTP 403")
	require.ErrorContains(t, err, "signature does not verify")
	require.True(t, provider.IsPermanent(err))
	require.False(t, push.IsGone(err))
	require.Empty(t, fake.Pushes())
}

func TestSendsGoThroughTheWebhookGuard(t *testing.T) {
	t.Parallel()
	fake := webpushtest.NewServer(t)
	s, _ := newTestSender(t, false)
	// A request past the validation (a name resolving to loopback, say)
	// still meets the guarded client's dialer.
	req, err := http.NewRequest(http.MethodPost, fake.URL+"/push/sub1", nil)
	require.NoError(t, err)
	_, err = s.client.Do(req)
	require.ErrorIs(t, err, webhook.ErrPrivateNetwork)
	require.True(t, provider.IsPermanent(err))
	require.Zero(t, fake.Requests())
}

func TestClassify(t *testing.T) {
	t.Parallel()
	retryAfter := http.Header{"Retry-After": []string{"7"}}
	cases := []struct {
		status    int
		accepted  bool
		gone      bool
		permanent bool
		wait      time.Duration
		says      string
	}{
		{status: 201, accepted: true},
		{status: 202, accepted: true},
		{status: 404, gone: true, permanent: true, says: "the device is gone"},
		{status: 410, gone: true, permanent: true, says: "the device is gone"},
		{status: 413, permanent: true, says: "payload too large"},
		{status: 429, wait: 7 * time.Second},
		{status: 500, wait: 7 * time.Second},
		{status: 502, wait: 7 * time.Second},
		{status: 503, wait: 7 * time.Second},
		{status: 400, permanent: true},
		{status: 401, permanent: true, says: "VAPID credentials refused"},
		{status: 403, permanent: true, says: "VAPID credentials refused"},
		{status: 301, permanent: true},
	}
	for _, c := range cases {
		err := classify(c.status, retryAfter, "the service's words")
		if c.accepted {
			require.NoError(t, err, c.status)
			continue
		}
		require.Error(t, err, c.status)
		require.ErrorContains(t, err, "the service's words", c.status)
		require.ErrorContains(t, err, c.says, c.status)
		require.Equal(t, c.gone, push.IsGone(err), c.status)
		require.Equal(t, c.permanent, provider.IsPermanent(err), c.status)
		if !c.permanent {
			require.Equal(t, c.wait, provider.RetryAfter(err), c.status)
		}
	}
}

func TestTopic(t *testing.T) {
	t.Parallel()
	require.Equal(t, "", topic(""))
	require.Equal(t, "order-42_A", topic("order-42_A"))
	long := topic("order PO-2026-0042/status")
	require.Len(t, long, 32)
	require.Equal(t, long, topic("order PO-2026-0042/status"), "the same collapse id, the same topic")
	require.NotEqual(t, long, topic("order PO-2026-0043/status"))
	require.Len(t, topic(strings.Repeat("a", 33)), 32)
}
