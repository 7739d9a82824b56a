package fcm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/fcm"
	"github.com/heraldhq/herald/services/delivery/push/fcm/fcmtest"
	"github.com/heraldhq/herald/shared/provider"
)

func newSender(t *testing.T, fake *fcmtest.Server) *fcm.Sender {
	t.Helper()
	s, err := fcm.New(context.Background(), fcm.Config{CredentialsJSON: fake.ServiceAccountJSON(), Endpoint: fake.Endpoint()})
	require.NoError(t, err)
	return s
}

func TestSendDeliversTheNotificationAndReturnsFCMsName(t *testing.T) {
	t.Parallel()
	fake := fcmtest.New(t)
	receipt, err := newSender(t, fake).Send(context.Background(), push.Message{
		ID: "ntf_1", Token: "device-1", Title: "Invoice paid", Body: "Thanks!",
		URL: "https://app.example.com/invoices/7", CollapseID: "invoice-7", TTL: time.Hour,
	})
	require.NoError(t, err)
	msgs := fake.Messages()
	require.Len(t, msgs, 1)
	got := msgs[0]
	require.Equal(t, got.Name, receipt.MessageID)
	require.Equal(t, "device-1", got.Token)
	require.Equal(t, fcmtest.Notification{Title: "Invoice paid", Body: "Thanks!"}, *got.Notification)
	require.Equal(t, map[string]string{"id": "ntf_1", "url": "https://app.example.com/invoices/7"}, got.Data)
	require.Equal(t, fcmtest.Android{CollapseKey: "invoice-7", TTL: "3600s"}, *got.Android)
	require.Equal(t, "invoice-7", got.APNS.Headers["apns-collapse-id"])
	require.NotEmpty(t, got.APNS.Headers["apns-expiration"])
	require.Equal(t, "3600", got.Webpush.Headers["TTL"])
	require.Equal(t, "https://app.example.com/invoices/7", got.Webpush.FCMOptions.Link)
}

func TestADeepLinkIsDataButNotAWebLink(t *testing.T) {
	t.Parallel()
	fake := fcmtest.New(t)
	_, err := newSender(t, fake).Send(context.Background(), push.Message{Token: "device-1", Title: "Hi", URL: "herald://inbox/1"})
	require.NoError(t, err)
	got := fake.Messages()[0]
	require.Equal(t, "herald://inbox/1", got.Data["url"])
	require.Nil(t, got.Webpush.FCMOptions)
}

// TestFCMErrorCodes is the classification table, row by row, as FCM's
// real error answers reach it through the SDK.
func TestFCMErrorCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code       string
		retryAfter time.Duration
		gone       bool
		permanent  bool
		wait       time.Duration
	}{
		{code: "UNREGISTERED", gone: true, permanent: true},
		{code: "INVALID_ARGUMENT", permanent: true},
		{code: "SENDER_ID_MISMATCH", permanent: true},
		{code: "THIRD_PARTY_AUTH_ERROR", permanent: true},
		{code: "QUOTA_EXCEEDED", retryAfter: 7 * time.Second, wait: 7 * time.Second},
		{code: "QUOTA_EXCEEDED"},
		// A Retry-After past two minutes stops the SDK's own retries of a 503.
		{code: "UNAVAILABLE", retryAfter: 5 * time.Minute, wait: 5 * time.Minute},
		{code: "INTERNAL"},
	}
	fake := fcmtest.New(t)
	sender := newSender(t, fake)
	for i, tt := range tests {
		token := fmt.Sprintf("device-%d", i)
		fake.Refuse(token, tt.code, tt.retryAfter)
		_, err := sender.Send(context.Background(), push.Message{Token: token, Title: "Hi"})
		require.Error(t, err, tt.code)
		require.ErrorContains(t, err, tt.code)
		require.Equal(t, tt.gone, push.IsGone(err), tt.code)
		require.Equal(t, tt.permanent, provider.IsPermanent(err), tt.code)
		require.Equal(t, tt.wait, provider.RetryAfter(err), tt.code)
		require.False(t, provider.IsAmbiguous(err), tt.code)
	}
	require.Empty(t, fake.Messages())
}

func TestAnUnknownProjectIsPermanent(t *testing.T) {
	t.Parallel()
	fake := fcmtest.New(t)
	sender, err := fcm.New(context.Background(), fcm.Config{CredentialsJSON: fake.ServiceAccountJSON(), Endpoint: fake.Endpoint(), ProjectID: "someone-else"})
	require.NoError(t, err)
	_, err = sender.Send(context.Background(), push.Message{Token: "device-1", Title: "Hi"})
	require.True(t, provider.IsPermanent(err))
	require.False(t, push.IsGone(err))
	require.ErrorContains(t, err, "NOT_FOUND")
}

func TestARevokedBearerIsRefused(t *testing.T) {
	t.Parallel()
	fake := fcmtest.New(t)
	sender := newSender(t, fake)
	_, err := sender.Send(context.Background(), push.Message{Token: "device-1", Title: "Hi"})
	require.NoError(t, err)
	fake.RevokeTokens()
	_, err = sender.Send(context.Background(), push.Message{Token: "device-1", Title: "Again"})
	require.ErrorContains(t, err, "UNAUTHENTICATED")
	require.True(t, provider.IsPermanent(err))
	require.False(t, push.IsGone(err))
	require.Len(t, fake.Messages(), 1)
}

// TestThePrivateKeyNeverAppears sends with a key the token endpoint
// refuses, and prints the config and the sender: none shows the key.
func TestThePrivateKeyNeverAppears(t *testing.T) {
	t.Parallel()
	fake := fcmtest.New(t)
	credentials := fake.StrangerJSON(t)
	cfg := fcm.Config{CredentialsJSON: credentials, Endpoint: fake.Endpoint()}
	sender, err := fcm.New(context.Background(), cfg)
	require.NoError(t, err)
	_, err = sender.Send(context.Background(), push.Message{Token: "device-1", Title: "Hi"})
	require.ErrorContains(t, err, "credentials are refused")
	require.True(t, provider.IsPermanent(err))
	require.False(t, provider.IsAmbiguous(err))
	require.Empty(t, fake.Messages())
	for _, shown := range []string{err.Error(), fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(sender)} {
		requireNoKey(t, credentials, shown)
	}
}

func requireNoKey(t *testing.T, credentials []byte, shown string) {
	t.Helper()
	var account struct {
		PrivateKey string `json:"private_key"`
	}
	require.NoError(t, json.Unmarshal(credentials, &account))
	for _, line := range strings.Split(account.PrivateKey, "\n") {
		if len(line) > 16 && !strings.HasPrefix(line, "-----") {
			require.NotContains(t, shown, line)
		}
	}
	require.NotContains(t, shown, fmt.Sprint(credentials))
}

func TestNewRefusesCredentialsWithoutQuotingThem(t *testing.T) {
	t.Parallel()
	fake := fcmtest.New(t)
	valid := fake.ServiceAccountJSON()
	var account map[string]string
	require.NoError(t, json.Unmarshal(valid, &account))
	without := func(field string) []byte {
		c := map[string]string{}
		for k, v := range account {
			if k != field {
				c[k] = v
			}
		}
		out, _ := json.Marshal(c)
		return out
	}
	tests := []struct {
		credentials []byte
		says        string
	}{
		{nil, "CredentialsJSON is required"},
		{valid[:len(valid)/2], "CredentialsJSON is not JSON"},
		{without("type"), "not a service account's"},
		{without("client_email"), "no client_email"},
		{without("private_key"), "no private_key"},
		{without("project_id"), "ProjectID is required"},
	}
	for _, tt := range tests {
		_, err := fcm.New(context.Background(), fcm.Config{CredentialsJSON: tt.credentials, Endpoint: fake.Endpoint()})
		require.ErrorContains(t, err, tt.says)
		requireNoKey(t, valid, err.Error())
	}
}

func TestAMessageWithoutATokenIsNotSent(t *testing.T) {
	t.Parallel()
	fake := fcmtest.New(t)
	_, err := newSender(t, fake).Send(context.Background(), push.Message{Token: " ", Title: "Hi"})
	require.True(t, provider.IsPermanent(err))
	require.False(t, push.IsGone(err))
	require.Empty(t, fake.Messages())
}

func TestAnEndedContextSendsNothingAndIsNotAmbiguous(t *testing.T) {
	t.Parallel()
	fake := fcmtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newSender(t, fake).Send(ctx, push.Message{Token: "device-1", Title: "Hi"})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, provider.IsAmbiguous(err))
	require.False(t, provider.IsPermanent(err))
	require.Empty(t, fake.Messages())
}
