package apns_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/apns"
	"github.com/heraldhq/herald/services/delivery/push/apns/apnstest"
	"github.com/heraldhq/herald/shared/provider"
)

const (
	keyID  = "ABC123DEFG"
	teamID = "DEF123GHIJ"
	topic  = "com.example.shop"
	device = "6f1c2b0e9d8a7f6e5d4c3b2a19080706f1c2b0e9d8a7f6e5d4c3b2a190807066"
)

type testBundle struct {
	fake   *apnstest.Server
	sender *apns.Sender
	p8     string
}

// setup is a fake APNs for a fresh .p8 key and a sender that signs with
// signingKey, or with that key when signingKey is "".
func setup(t *testing.T, signingKey string) testBundle {
	t.Helper()
	p8, key := apnstest.NewKey(t)
	fake := apnstest.NewServer(t, apnstest.Account{KeyID: keyID, TeamID: teamID, Key: &key.PublicKey, Topic: topic})
	if signingKey == "" {
		signingKey = p8
	}
	s, err := apns.New(apns.Config{KeyID: keyID, TeamID: teamID, AuthKey: signingKey, Topic: topic,
		Host: fake.URL, Transport: fake.Client().Transport})
	require.NoError(t, err)
	return testBundle{fake: fake, sender: s, p8: p8}
}

func message() push.Message {
	return push.Message{
		ID: "ntf_1", Token: device,
		Title: "PO-2026-0042 shipped", Body: "Your order is on its way",
		URL: "https://shop.example.com/orders/PO-2026-0042", CollapseID: "order-PO-2026-0042",
		TTL: time.Hour,
	}
}

func TestSendIsRecordedWithTitleBodyAndLink(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	before := time.Now()

	receipt, err := b.sender.Send(context.Background(), message())
	require.NoError(t, err)

	pushes := b.fake.Pushes()
	require.Len(t, pushes, 1)
	got := pushes[0]
	require.Equal(t, got.ApnsID, receipt.MessageID)
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, got.ApnsID)
	require.Equal(t, device, got.Token)
	require.Equal(t, "PO-2026-0042 shipped", got.Title)
	require.Equal(t, "Your order is on its way", got.Body)
	require.Equal(t, "https://shop.example.com/orders/PO-2026-0042", got.URL)
	require.Equal(t, "ntf_1", got.ID)
	require.Equal(t, "order-PO-2026-0042", got.CollapseID)
	require.Equal(t, "10", got.Priority)
	require.GreaterOrEqual(t, got.Expiration, before.Add(time.Hour).Unix())
	require.LessOrEqual(t, got.Expiration, time.Now().Add(time.Hour).Unix())
}

func TestEveryTryOfANotificationCarriesOneApnsID(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	other := message()
	other.ID = "ntf_2"

	for _, msg := range []push.Message{message(), message(), other} {
		_, err := b.sender.Send(context.Background(), msg)
		require.NoError(t, err)
	}
	pushes := b.fake.Pushes()
	require.Len(t, pushes, 3)
	require.Equal(t, pushes[0].ApnsID, pushes[1].ApnsID)
	require.NotEqual(t, pushes[0].ApnsID, pushes[2].ApnsID)
}

func TestSendUsesTheDefaultTTLAndDigestsALongCollapseID(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	msg := message()
	msg.TTL = 0
	msg.CollapseID = fmt.Sprintf("%070d", 42)
	before := time.Now()

	_, err := b.sender.Send(context.Background(), msg)
	require.NoError(t, err)
	got := b.fake.Pushes()[0]
	require.GreaterOrEqual(t, got.Expiration, before.Add(apns.DefaultTTL).Unix())
	require.LessOrEqual(t, len(got.CollapseID), 64)
	require.NotEmpty(t, got.CollapseID)
}

func TestAnUnregisteredDeviceIsGone(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fake.Refuse(device, apnstest.Answer{Status: http.StatusGone, Reason: "Unregistered",
		Timestamp: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)})

	_, err := b.sender.Send(context.Background(), message())
	require.Error(t, err)
	require.True(t, push.IsGone(err), "%v", err)
	require.True(t, provider.IsPermanent(err))
	require.ErrorContains(t, err, "HTTP 410: Unregistered")
	require.ErrorContains(t, err, "2026-03-01T12:00:00Z")
	require.Empty(t, b.fake.Pushes())
}

func TestAnotherAppsDeviceIsGone(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fake.Refuse(device, apnstest.Answer{Status: http.StatusBadRequest, Reason: "DeviceTokenNotForTopic"})

	_, err := b.sender.Send(context.Background(), message())
	require.True(t, push.IsGone(err), "%v", err)
	require.ErrorContains(t, err, "HTTP 400: DeviceTokenNotForTopic")
}

func TestThrottlingAndOutagesAreTransient(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	for _, a := range []apnstest.Answer{
		{Status: http.StatusTooManyRequests, Reason: "TooManyRequests"},
		{Status: http.StatusServiceUnavailable, Reason: "ServiceUnavailable"},
	} {
		b.fake.Refuse(device, a)
		_, err := b.sender.Send(context.Background(), message())
		require.Error(t, err)
		require.False(t, provider.IsPermanent(err), "%v", err)
		require.False(t, push.IsGone(err))
		require.False(t, provider.IsAmbiguous(err), "APNs answered: it did not take the message")
		require.ErrorContains(t, err, a.Reason)
	}
}

func TestATokenSignedByAnotherKeyIsAConfigurationError(t *testing.T) {
	t.Parallel()
	otherP8, _ := apnstest.NewKey(t)
	b := setup(t, otherP8)

	_, err := b.sender.Send(context.Background(), message())
	require.Error(t, err)
	require.True(t, provider.IsPermanent(err), "%v", err)
	require.False(t, push.IsGone(err))
	require.ErrorContains(t, err, "HTTP 403: InvalidProviderToken")
	require.ErrorIs(t, err, apns.ErrConfig)
	require.Empty(t, b.fake.Pushes())
}

func TestTheFakeChecksTheAccountInTheProviderToken(t *testing.T) {
	t.Parallel()
	p8, key := apnstest.NewKey(t)
	fake := apnstest.NewServer(t, apnstest.Account{KeyID: keyID, TeamID: teamID, Key: &key.PublicKey, Topic: topic})
	cases := map[string]apns.Config{
		"another key id":  {KeyID: "ZZZ999ZZZZ", TeamID: teamID, Topic: topic},
		"another team id": {KeyID: keyID, TeamID: "ZZZ999ZZZZ", Topic: topic},
	}
	for name, cfg := range cases {
		cfg.AuthKey, cfg.Host, cfg.Transport = p8, fake.URL, fake.Client().Transport
		s, err := apns.New(cfg)
		require.NoError(t, err, name)
		_, err = s.Send(context.Background(), message())
		require.ErrorContains(t, err, "HTTP 403: InvalidProviderToken", name)
	}
	require.Empty(t, fake.Pushes())
}

func TestAnotherTopicIsRefused(t *testing.T) {
	t.Parallel()
	p8, key := apnstest.NewKey(t)
	fake := apnstest.NewServer(t, apnstest.Account{KeyID: keyID, TeamID: teamID, Key: &key.PublicKey, Topic: topic})
	s, err := apns.New(apns.Config{KeyID: keyID, TeamID: teamID, AuthKey: p8, Topic: "com.example.other",
		Host: fake.URL, Transport: fake.Client().Transport})
	require.NoError(t, err)

	_, err = s.Send(context.Background(), message())
	require.ErrorContains(t, err, "HTTP 400: DeviceTokenNotForTopic")
	require.Empty(t, fake.Pushes())
}

func TestAnUntrustedCertificateSendsNothing(t *testing.T) {
	t.Parallel()
	p8, key := apnstest.NewKey(t)
	fake := apnstest.NewServer(t, apnstest.Account{KeyID: keyID, TeamID: teamID, Key: &key.PublicKey, Topic: topic})
	s, err := apns.New(apns.Config{KeyID: keyID, TeamID: teamID, AuthKey: p8, Topic: topic, Host: fake.URL})
	require.NoError(t, err)

	_, err = s.Send(context.Background(), message())
	require.Error(t, err)
	require.False(t, provider.IsPermanent(err))
	require.ErrorContains(t, err, "certificate")
	require.NotContains(t, err.Error(), device, "the device token stays out of errors")
	require.Empty(t, fake.Pushes())
}

func TestTheP8KeyIsNeverInAnErrorOrALogLine(t *testing.T) {
	t.Parallel()
	otherP8, _ := apnstest.NewKey(t)
	b := setup(t, otherP8)
	_, err := b.sender.Send(context.Background(), message())
	require.Error(t, err)

	cfg := apns.Config{KeyID: keyID, TeamID: teamID, AuthKey: otherP8, Topic: topic}
	broken := apns.Config{KeyID: keyID, TeamID: teamID, AuthKey: otherP8[:len(otherP8)/2] + "\n-----END PRIVATE KEY-----", Topic: topic}
	_, brokenErr := apns.New(broken)
	require.Error(t, brokenErr)
	for name, text := range map[string]string{
		"send error": err.Error(), "config": fmt.Sprintf("%v %+v %s", cfg, cfg, cfg),
		"sender": fmt.Sprintf("%v", b.sender), "parse error": brokenErr.Error(),
	} {
		require.NotContains(t, text, "PRIVATE KEY", name)
		require.NotContains(t, text, otherP8[40:80], name)
	}
}

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	t.Parallel()
	p8, _ := apnstest.NewKey(t)
	good := apns.Config{KeyID: keyID, TeamID: teamID, AuthKey: p8, Topic: topic}
	cases := map[string]struct {
		change func(*apns.Config)
		says   string
	}{
		"no key id":    {func(c *apns.Config) { c.KeyID = " " }, "KeyID is required"},
		"no team id":   {func(c *apns.Config) { c.TeamID = "" }, "TeamID is required"},
		"no key":       {func(c *apns.Config) { c.AuthKey = "" }, "AuthKey is required"},
		"no topic":     {func(c *apns.Config) { c.Topic = "" }, "Topic (the app's bundle id) is required"},
		"not PEM":      {func(c *apns.Config) { c.AuthKey = "secret-not-pem" }, "AuthKey is not PEM"},
		"not a key":    {func(c *apns.Config) { c.AuthKey = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----" }, "not a PKCS#8 ECDSA"},
		"a P-384 key":  {func(c *apns.Config) { c.AuthKey = p384Key(t) }, "not a P-256 key"},
		"a plain host": {func(c *apns.Config) { c.Host = "http://api.push.apple.com" }, "must be an https URL"},
	}
	for name, tc := range cases {
		cfg := good
		tc.change(&cfg)
		_, err := apns.New(cfg)
		require.ErrorContains(t, err, tc.says, name)
	}
	_, err := apns.New(good)
	require.NoError(t, err)
}

func TestAMalformedDeviceTokenIsRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	for name, tok := range map[string]string{
		"empty": "", "a path": "../../3/device/" + device, "not hex": "zz" + device,
		"too long": fmt.Sprintf("%0201d", 1),
	} {
		msg := message()
		msg.Token = tok
		_, err := b.sender.Send(context.Background(), msg)
		require.Error(t, err, name)
		require.True(t, provider.IsPermanent(err), name)
		require.False(t, push.IsGone(err), name)
		require.ErrorContains(t, err, "the device token", name)
	}
	require.Zero(t, b.fake.Requests())
}

func TestAnEndedContextSendsNothingAndIsNotAmbiguous(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := b.sender.Send(ctx, message())
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, provider.IsAmbiguous(err))
	require.False(t, provider.IsPermanent(err))
	require.Empty(t, b.fake.Pushes())
}

// p384Key is a .p8-shaped key on the wrong curve for ES256.
func p384Key(t *testing.T) string {
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}
