package inbound

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/sms/twilio/twiliotest"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/report"
	"github.com/heraldhq/herald/shared/vault"
)

const (
	twilioPublicURL = "https://herald.example.com"
	platformSID     = "AC0123456789abcdef0123456789abcdef"
	platformToken   = "f00dfeedf00dfeedf00dfeedf00dfeed"
	tenantSID       = "ACfedcba9876543210fedcba9876543210"
	tenantToken     = "0badc0de0badc0de0badc0de0badc0de"
	messageSID      = "SM7a1f0c2e9d4b4b8e8f6a5d3c2b1a0f9e"
	recipient       = "+34600111222"
)

// twilioBundle is a Handler for the platform's Twilio account and a tenant
// acme's account tw1, served over HTTP, storing into a real JetStream.
type twilioBundle struct {
	js     jetstream.JetStream
	url    string // where the handler is served
	client *http.Client
	logs   *heraldtest.Buffer
	clock  *clock
}

// clock is the handler's Now, which the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func setupTwilio(t *testing.T, change ...func(*Config)) *twilioBundle {
	t.Helper()
	n := heraldtest.StartNATS(t)
	_, err := n.JS.CreateStream(heraldtest.Context(t), jetstream.StreamConfig{
		Name: report.Stream, Subjects: []string{"notify.reports.>"},
	})
	require.NoError(t, err)

	b := &twilioBundle{js: n.JS, client: heraldtest.HTTPClient(t), logs: &heraldtest.Buffer{},
		clock: &clock{now: time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)}}
	cfg := Config{
		JetStream:        n.JS,
		TwilioAuthToken:  vault.NewSecret(platformToken),
		TwilioAccountSID: platformSID,
		PublicURL:        twilioPublicURL,
		Accounts: fakeAccounts{"acme/tw1": {Name: "tw1", Type: vault.TypeTwilio,
			AccountSID: tenantSID, AuthToken: vault.NewSecret(tenantToken), From: "+15017122661"}},
		Logger: slog.New(slog.NewJSONHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    b.clock.Now,
	}
	for _, c := range change {
		c(&cfg)
	}
	h, err := New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

// fakeAccounts is a vault holding tenants' credentials under
// "tenant/name".
type fakeAccounts map[string]vault.Credential

func (a fakeAccounts) Get(_ context.Context, tenant, name string) (vault.Credential, error) {
	c, ok := a[tenant+"/"+name]
	if !ok {
		return vault.Credential{}, vault.ErrNotFound
	}
	return c, nil
}

// callback is the form Twilio posts to a message's StatusCallback.
func callback(status, errorCode string) url.Values {
	form := url.Values{
		"ApiVersion":    {"2010-04-01"},
		"AccountSid":    {platformSID},
		"MessageSid":    {messageSID},
		"SmsSid":        {messageSID},
		"MessageStatus": {status},
		"SmsStatus":     {status},
		"From":          {"+15017122661"},
		"To":            {recipient},
	}
	if errorCode != "" {
		form.Set("ErrorCode", errorCode)
	}
	return form
}

// post sends form to pathAndQuery with signature sig (none when empty) and
// returns the answer's status and body.
func (b *twilioBundle) post(t *testing.T, pathAndQuery string, form url.Values, sig string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+pathAndQuery, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	req.Header.Set("User-Agent", "TwilioProxy/1.1")
	if sig != "" {
		req.Header.Set("X-Twilio-Signature", sig)
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// postSigned posts form to pathAndQuery signed with token, as Twilio would
// calling Herald at its public URL.
func (b *twilioBundle) postSigned(t *testing.T, pathAndQuery string, form url.Values, token string) (int, string) {
	t.Helper()
	return b.post(t, pathAndQuery, form, twiliotest.Signature(token, twilioPublicURL+pathAndQuery, form))
}

// stored is every report on the stream, oldest first.
func (b *twilioBundle) stored(t *testing.T) []report.Report {
	t.Helper()
	var out []report.Report
	for _, m := range heraldtest.StreamMessages(t, b.js, report.Stream) {
		require.Equal(t, report.Subject(Twilio), m.Subject)
		var r report.Report
		require.NoError(t, json.Unmarshal(m.Data, &r))
		out = append(out, r)
	}
	return out
}

func TestTwilioStatusCallbacks(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	want := func(kind report.Kind, eventID, detail string, hard bool) []report.Report {
		return []report.Report{{Provider: Twilio, MessageID: messageSID, EventID: messageSID + ":" + eventID,
			Kind: kind, Hard: hard, Recipient: recipient, Detail: detail, Time: now}}
	}
	withMessage := func(f url.Values, words string) url.Values { f.Set("ErrorMessage", words); return f }
	everyChannel := func(r []report.Report) []report.Report { r[0].EveryChannel = true; return r }
	whatsapp := func(f url.Values) url.Values {
		f.Set("To", "whatsapp:"+recipient)
		f.Set("From", "whatsapp:+15017122661")
		return f
	}
	tests := []struct {
		name string
		form url.Values
		want []report.Report
	}{
		{name: "Delivered", form: callback("delivered", ""),
			want: want(report.Delivered, "delivered", "delivered", false)},
		{name: "WhatsAppRead", form: whatsapp(callback("read", "")),
			want: want(report.Opened, "read", "read", false)},
		{name: "UnknownHandsetIsHard", form: callback("undelivered", "30005"),
			want: want(report.Bounced, "undelivered:30005", "error 30005", true)},
		{name: "LandlineIsHard", form: callback("undelivered", "30006"),
			want: want(report.Bounced, "undelivered:30006", "error 30006", true)},
		// A number that is no number takes no channel's messages.
		{name: "InvalidToIsHardOnEveryChannel", form: callback("failed", "21211"),
			want: everyChannel(want(report.Bounced, "failed:21211", "error 21211", true))},
		{name: "NotMobileIsHard", form: callback("failed", "21614"),
			want: want(report.Bounced, "failed:21614", "error 21614", true)},
		{name: "InvalidWhatsAppRecipientIsHard", form: whatsapp(callback("failed", "63024")),
			want: want(report.Bounced, "failed:63024", "error 63024", true)},
		{name: "UnreachableIsSoft", form: callback("undelivered", "30003"),
			want: want(report.Bounced, "undelivered:30003", "error 30003", false)},
		{name: "CarrierFilterIsSoft", form: withMessage(callback("undelivered", "30007"), "Message filtered"),
			want: want(report.Bounced, "undelivered:30007", "error 30007: Message filtered", false)},
		{name: "FailedWithoutCodeIsSoft", form: callback("failed", ""),
			want: want(report.Bounced, "failed", "failed", false)},
		{name: "StopIsUnsubscribed", form: withMessage(callback("failed", "21610"), "Attempt to send to unsubscribed recipient"),
			want: want(report.Unsubscribed, "failed:21610", "error 21610: Attempt to send to unsubscribed recipient", false)},
	}
	for _, status := range []string{"queued", "accepted", "sending", "sent", "scheduled", "canceled", "receiving", "received"} {
		tests = append(tests, struct {
			name string
			form url.Values
			want []report.Report
		}{name: "NothingFor_" + status, form: callback(status, "")})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupTwilio(t)
			status, body := b.postSigned(t, "/v1/inbound/twilio", tt.form, platformToken)
			require.Equal(t, http.StatusOK, status, body)
			require.Equal(t, tt.want, b.stored(t))
		})
	}
}

func TestTwilioRefusals(t *testing.T) {
	t.Parallel()
	const path = "/v1/inbound/twilio"
	signed := func(token string, form url.Values) string {
		return twiliotest.Signature(token, twilioPublicURL+path, form)
	}
	tampered := callback("delivered", "")
	otherAccount := callback("undelivered", "30005")
	otherAccount.Set("AccountSid", tenantSID)
	noSID := callback("delivered", "")
	noSID.Del("MessageSid")
	noStatus := callback("delivered", "")
	noStatus.Del("MessageStatus")
	tests := []struct {
		name   string
		form   url.Values
		sig    string
		status int
		words  string
	}{
		{name: "NoSignature", form: callback("delivered", ""), status: http.StatusUnauthorized, words: "no X-Twilio-Signature"},
		{name: "WrongToken", form: callback("delivered", ""), sig: signed(tenantToken, callback("delivered", "")),
			status: http.StatusForbidden, words: "does not match"},
		{name: "NotBase64", form: callback("delivered", ""), sig: "not a signature", status: http.StatusForbidden, words: "not the base64 of an HMAC-SHA1"},
		// Signed as delivered, posted as a hard bounce.
		{name: "TamperedParameter", form: callback("undelivered", "30005"),
			sig: signed(platformToken, tampered), status: http.StatusForbidden, words: "does not match"},
		{name: "AddedParameter", form: func() url.Values { f := callback("delivered", ""); f.Set("ErrorCode", "30005"); return f }(),
			sig: signed(platformToken, tampered), status: http.StatusForbidden, words: "does not match"},
		{name: "SignedForAnotherURL", form: callback("delivered", ""),
			sig:    twiliotest.Signature(platformToken, "https://other.example.com"+path, callback("delivered", "")),
			status: http.StatusForbidden, words: "another URL than https://herald.example.com/v1/inbound/twilio"},
		{name: "OtherAccount", form: otherAccount, sig: signed(platformToken, otherAccount),
			status: http.StatusForbidden, words: "another Twilio account"},
		{name: "NoMessageSid", form: noSID, sig: signed(platformToken, noSID), status: http.StatusBadRequest, words: "MessageSid"},
		{name: "NoMessageStatus", form: noStatus, sig: signed(platformToken, noStatus), status: http.StatusBadRequest, words: "MessageStatus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupTwilio(t)
			status, body := b.post(t, path, tt.form, tt.sig)
			require.Equal(t, tt.status, status, body)
			require.Contains(t, body, tt.words)
			require.Empty(t, b.stored(t))
			require.Contains(t, b.logs.String(), "provider webhook refused")
		})
	}
	t.Run("NotAForm", func(t *testing.T) {
		t.Parallel()
		b := setupTwilio(t)
		body := `{"MessageSid":"` + messageSID + `","MessageStatus":"delivered"}`
		req, err := http.NewRequest(http.MethodPost, b.url+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Twilio-Signature", twiliotest.Signature(platformToken, twilioPublicURL+path, nil))
		resp, err := b.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Empty(t, b.stored(t))
	})
}

// Twilio signs the URL it was given, query included: an operator may tag
// the callback URL.
func TestTwilioQueryStringIsSigned(t *testing.T) {
	t.Parallel()
	b := setupTwilio(t)
	const path = "/v1/inbound/twilio?source=orders&region=eu"
	form := callback("delivered", "")

	status, body := b.postSigned(t, path, form, platformToken)
	require.Equal(t, http.StatusOK, status, body)
	require.Len(t, b.stored(t), 1)

	// The same signature without the query is not Twilio's.
	sig := twiliotest.Signature(platformToken, twilioPublicURL+"/v1/inbound/twilio", form)
	status, _ = b.post(t, path, form, sig)
	require.Equal(t, http.StatusForbidden, status)
}

// Twilio retries a callback it got no 200 for: the stream keeps it once.
func TestTwilioSameCallbackTwiceIsStoredOnce(t *testing.T) {
	t.Parallel()
	b := setupTwilio(t)
	form := callback("undelivered", "30005")
	for range 2 {
		status, body := b.postSigned(t, "/v1/inbound/twilio", form, platformToken)
		require.Equal(t, http.StatusOK, status, body)
		b.clock.Add(time.Minute)
	}
	got := b.stored(t)
	require.Len(t, got, 1)
	require.Equal(t, messageSID+":undelivered:30005", got[0].EventID)

	// A later status of the same message is another event.
	status, body := b.postSigned(t, "/v1/inbound/twilio", callback("delivered", ""), platformToken)
	require.Equal(t, http.StatusOK, status, body)
	require.Len(t, b.stored(t), 2)
}

// A tenant's path is verified with the tenant's own account, and its
// reports carry the tenant: the platform's token speaks for no tenant.
func TestTwilioTenantAccount(t *testing.T) {
	t.Parallel()
	const path = "/v1/inbound/twilio/acme/tw1"
	form := callback("undelivered", "30006")
	form.Set("AccountSid", tenantSID)

	t.Run("TenantToken", func(t *testing.T) {
		t.Parallel()
		b := setupTwilio(t)
		status, body := b.postSigned(t, path, form, tenantToken)
		require.Equal(t, http.StatusOK, status, body)
		got := b.stored(t)
		require.Len(t, got, 1)
		require.Equal(t, report.Report{Provider: Twilio, Tenant: "acme", Account: "tw1", MessageID: messageSID,
			EventID: messageSID + ":undelivered:30006", Kind: report.Bounced, Hard: true, Recipient: recipient,
			Detail: "error 30006", Time: b.clock.Now()}, got[0])
	})
	t.Run("PlatformTokenRefused", func(t *testing.T) {
		t.Parallel()
		b := setupTwilio(t)
		status, _ := b.postSigned(t, path, form, platformToken)
		require.Equal(t, http.StatusForbidden, status)
		status, _ = b.postSigned(t, path, callback("undelivered", "30006"), platformToken)
		require.Equal(t, http.StatusForbidden, status)
		require.Empty(t, b.stored(t))
	})
	t.Run("PlatformAccountSidRefused", func(t *testing.T) {
		t.Parallel()
		b := setupTwilio(t)
		status, body := b.postSigned(t, path, callback("undelivered", "30006"), tenantToken)
		require.Equal(t, http.StatusForbidden, status, body)
		require.Empty(t, b.stored(t))
	})
	t.Run("TenantTokenRefusedOnThePlatformPath", func(t *testing.T) {
		t.Parallel()
		b := setupTwilio(t)
		status, _ := b.postSigned(t, "/v1/inbound/twilio", form, tenantToken)
		require.Equal(t, http.StatusForbidden, status)
		require.Empty(t, b.stored(t))
	})
	t.Run("UnknownAccount", func(t *testing.T) {
		t.Parallel()
		b := setupTwilio(t)
		status, _ := b.postSigned(t, "/v1/inbound/twilio/acme/tw2", form, tenantToken)
		require.Equal(t, http.StatusForbidden, status)
	})
}

// Without public_url, the URL Twilio signed is taken as http:// and the
// Host it called: right when nothing stands in front of Herald.
func TestTwilioWithoutPublicURL(t *testing.T) {
	t.Parallel()
	b := setupTwilio(t, func(c *Config) { c.PublicURL = "" })
	form := callback("delivered", "")
	status, body := b.post(t, "/v1/inbound/twilio", form, twiliotest.Signature(platformToken, b.url+"/v1/inbound/twilio", form))
	require.Equal(t, http.StatusOK, status, body)
	require.Len(t, b.stored(t), 1)
}

// A public URL written with a trailing slash is the same URL.
func TestTwilioPublicURLWithTrailingSlash(t *testing.T) {
	t.Parallel()
	b := setupTwilio(t, func(c *Config) { c.PublicURL = twilioPublicURL + "/" })
	status, body := b.postSigned(t, "/v1/inbound/twilio", callback("delivered", ""), platformToken)
	require.Equal(t, http.StatusOK, status, body)
}

func TestTwilioTokensNeverShow(t *testing.T) {
	t.Parallel()
	b := setupTwilio(t)
	var bodies strings.Builder
	record := func(_ int, body string) { bodies.WriteString(body) }
	const path = "/v1/inbound/twilio"
	tenantForm := callback("failed", "21610")
	tenantForm.Set("AccountSid", tenantSID)
	otherAccount := callback("delivered", "")
	otherAccount.Set("AccountSid", "AC00000000000000000000000000000000")

	record(b.postSigned(t, path, callback("delivered", ""), platformToken))
	record(b.postSigned(t, path, callback("undelivered", "30005"), tenantToken))
	record(b.postSigned(t, path, otherAccount, platformToken))
	record(b.post(t, path, callback("delivered", ""), ""))
	record(b.post(t, path, callback("delivered", ""), "bm90IGEgc2lnbmF0dXJl"))
	record(b.postSigned(t, path+"/acme/tw1", tenantForm, tenantToken))
	record(b.postSigned(t, path+"/acme/tw1", callback("delivered", ""), platformToken))
	record(b.postSigned(t, path+"/acme/tw1", callback("delivered", ""), tenantToken))

	require.Len(t, b.stored(t), 2)
	require.Contains(t, b.logs.String(), "provider webhook refused")
	heraldtest.RequireNoSecret(t, bodies.String(), "the response bodies", platformToken, tenantToken)
	heraldtest.RequireNoSecret(t, b.logs.String(), "the logs", platformToken, tenantToken)
	heraldtest.RequireNoSecret(t, strings.Join(storedData(t, b), "\n"), "the stored reports", platformToken, tenantToken)
}

func storedData(t *testing.T, b *twilioBundle) []string {
	t.Helper()
	var out []string
	for _, m := range heraldtest.StreamMessages(t, b.js, report.Stream) {
		out = append(out, string(m.Data))
	}
	return out
}
