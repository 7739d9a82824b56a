package inbound

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/report"
	"github.com/heraldhq/herald/shared/vault"
)

// sendgridKey is an Event Webhook signing key pair, as SendGrid makes one
// per account: the test signs with the private half and gives Herald the
// public half, base64 DER, as SendGrid's settings page shows it.
type sendgridKey struct {
	private *ecdsa.PrivateKey
	public  string
}

func newSendGridKey(t *testing.T) sendgridKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	return sendgridKey{private: k, public: base64.StdEncoding.EncodeToString(der)}
}

// sign is X-Twilio-Email-Event-Webhook-Signature as SendGrid computes it.
func (k sendgridKey) sign(t *testing.T, stamp string, body []byte) string {
	t.Helper()
	sig, err := sendgridtest.EventSignature(k.private, stamp, body)
	require.NoError(t, err)
	return sig
}

type sendgridBundle struct {
	js       jetstream.JetStream
	url      string
	client   *http.Client
	logs     *heraldtest.Buffer
	clock    *clock
	platform sendgridKey
	tenant   sendgridKey
}

var sendgridNow = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

func setupSendGrid(t *testing.T) *sendgridBundle {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	b := &sendgridBundle{js: n.JS, client: heraldtest.HTTPClient(t), logs: &heraldtest.Buffer{},
		clock: &clock{now: sendgridNow}, platform: newSendGridKey(t), tenant: newSendGridKey(t)}
	h, err := New(Config{
		JetStream: n.JS, SendGridPublicKey: b.platform.public, MaxBodyBytes: 64 << 10,
		Accounts: fakeAccounts{"acme/sg": {Name: "sg", Type: vault.TypeSendGrid, APIKey: vault.NewSecret("SG.secret"),
			WebhookPublicKey: b.tenant.public}},
		Logger: slog.New(slog.NewJSONHandler(b.logs, nil)), Now: b.clock.Now,
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

// post sends body to path with the signature headers given (none when
// empty) and returns the answer's status and body.
func (b *sendgridBundle) post(t *testing.T, path string, body []byte, sig, stamp string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+path, strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if sig != "" {
		req.Header.Set("X-Twilio-Email-Event-Webhook-Signature", sig)
		req.Header.Set("X-Twilio-Email-Event-Webhook-Timestamp", stamp)
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(answer)
}

// postSigned posts body signed with k now, as SendGrid does.
func (b *sendgridBundle) postSigned(t *testing.T, path string, body []byte, k sendgridKey) (int, string) {
	t.Helper()
	stamp := strconv.FormatInt(b.clock.Now().Unix(), 10)
	return b.post(t, path, body, k.sign(t, stamp, body), stamp)
}

func (b *sendgridBundle) stored(t *testing.T) []report.Report {
	t.Helper()
	var out []report.Report
	for _, m := range heraldtest.StreamMessages(t, b.js, report.Stream) {
		var r report.Report
		require.NoError(t, json.Unmarshal(m.Data, &r))
		out = append(out, r)
	}
	return out
}

// sendgridEvents is a post as SendGrid's Event Webhook makes one: a batch
// of events, their sg_message_id the X-Message-Id of the send and a
// filter's suffix.
const sendgridEvents = `[
 {"email":"olga@zarya.example","timestamp":1764666000,"smtp-id":"<a@zarya>","event":"processed","herald_notification_id":"ntf_1","sg_event_id":"p-1","sg_message_id":"W5RVsNmvQ9CGpTV_D1-0LA.filterdrecv-1.0"},
 {"email":"olga@zarya.example","timestamp":1764666001,"event":"delivered","response":"250 OK","herald_notification_id":"ntf_1","sg_event_id":"d-1","sg_message_id":"W5RVsNmvQ9CGpTV_D1-0LA.filterdrecv-1.0"},
 {"email":"ivan@zarya.example","timestamp":1764666002,"event":"bounce","type":"bounce","status":"5.1.1","reason":"550 5.1.1 The email account does not exist","herald_notification_id":"ntf_1","sg_event_id":"b-1","sg_message_id":"Xq8qkS1RQ0yqWAvXm4lq7A.filterdrecv-2.0"},
 {"email":"anna@zarya.example","timestamp":1764666003,"event":"bounce","type":"blocked","status":"4.7.0","reason":"421 try again later","herald_notification_id":"ntf_1","sg_event_id":"b-2","sg_message_id":"Ya1.filter"},
 {"email":"olga@zarya.example","timestamp":1764666004,"event":"open","herald_notification_id":"ntf_1","sg_event_id":"o-1","sg_message_id":"W5RVsNmvQ9CGpTV_D1-0LA.filterdrecv-1.0"},
 {"email":"olga@zarya.example","timestamp":1764666005,"event":"click","url":"https://zarya.example/po","herald_notification_id":"ntf_1","sg_event_id":"c-1","sg_message_id":"W5RVsNmvQ9CGpTV_D1-0LA.filterdrecv-1.0"},
 {"email":"boris@zarya.example","timestamp":1764666006,"event":"spamreport","herald_notification_id":"ntf_1","sg_event_id":"s-1","sg_message_id":"Zb2.filter"},
 {"email":"vera@zarya.example","timestamp":1764666007,"event":"dropped","reason":"Bounced Address","herald_notification_id":"ntf_1","sg_event_id":"x-1","sg_message_id":"Vc3.filter"},
 {"email":"vera@zarya.example","timestamp":1764666008,"event":"group_unsubscribe","asm_group_id":1,"herald_notification_id":"ntf_1","sg_event_id":"g-1"},
 {"email":"someone@acme.example","timestamp":1764666008,"event":"bounce","type":"bounce","reason":"550","sg_event_id":"z-1","sg_message_id":"Other.filter"},
 {"email":"olga@zarya.example","timestamp":1764666009,"event":"deferred","response":"400 try again","herald_notification_id":"ntf_1","sg_event_id":"f-1","sg_message_id":"W5RVsNmvQ9CGpTV_D1-0LA.filterdrecv-1.0"}
]`

func TestSendGridSignedEventsBecomeReports(t *testing.T) {
	t.Parallel()
	b := setupSendGrid(t)
	status, answer := b.postSigned(t, "/v1/inbound/sendgrid", []byte(sendgridEvents), b.platform)
	require.Equal(t, http.StatusOK, status, answer)

	at := func(s int64) time.Time { return time.Unix(s, 0).UTC() }
	require.Equal(t, []report.Report{
		{Provider: SendGrid, MessageID: "W5RVsNmvQ9CGpTV_D1-0LA", EventID: "d-1", Kind: report.Delivered, Recipient: "olga@zarya.example", Detail: "250 OK", Time: at(1764666001)},
		{Provider: SendGrid, MessageID: "Xq8qkS1RQ0yqWAvXm4lq7A", EventID: "b-1", Kind: report.Bounced, Hard: true, Recipient: "ivan@zarya.example", Detail: "5.1.1 550 5.1.1 The email account does not exist", Time: at(1764666002)},
		{Provider: SendGrid, MessageID: "Ya1", EventID: "b-2", Kind: report.Bounced, Recipient: "anna@zarya.example", Detail: "4.7.0 421 try again later", Time: at(1764666003)},
		{Provider: SendGrid, MessageID: "W5RVsNmvQ9CGpTV_D1-0LA", EventID: "o-1", Kind: report.Opened, Recipient: "olga@zarya.example", Time: at(1764666004)},
		{Provider: SendGrid, MessageID: "W5RVsNmvQ9CGpTV_D1-0LA", EventID: "c-1", Kind: report.Clicked, Recipient: "olga@zarya.example", Detail: "https://zarya.example/po", Time: at(1764666005)},
		{Provider: SendGrid, MessageID: "Zb2", EventID: "s-1", Kind: report.Complained, Recipient: "boris@zarya.example", Time: at(1764666006)},
		{Provider: SendGrid, MessageID: "Vc3", EventID: "x-1", Kind: report.Bounced, Hard: true, Recipient: "vera@zarya.example", Detail: "dropped: Bounced Address", Time: at(1764666007)},
	}, b.stored(t), "processed, deferred, an event without a message id and one of mail Herald did not send make no report")

	// SendGrid posting the batch again (it retries what it thinks failed)
	// stores nothing twice.
	b.clock.Add(time.Minute)
	status, _ = b.postSigned(t, "/v1/inbound/sendgrid", []byte(sendgridEvents), b.platform)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, b.stored(t), 7)
}

func TestSendGridRefusesWhatItDidNotSign(t *testing.T) {
	t.Parallel()
	b := setupSendGrid(t)
	body := []byte(sendgridEvents)
	stamp := strconv.FormatInt(sendgridNow.Unix(), 10)
	sig := b.platform.sign(t, stamp, body)
	tampered := []byte(strings.Replace(sendgridEvents, `"type":"bounce"`, `"type":"blocked"`, 1))
	stale := strconv.FormatInt(sendgridNow.Add(-6*time.Minute).Unix(), 10)
	// A post signed ahead of time would be good for as long as it is
	// ahead, and then for MaxAge more.
	future := strconv.FormatInt(sendgridNow.Add(6*time.Minute).Unix(), 10)

	for name, c := range map[string]struct {
		path        string
		body        []byte
		sig, stamp  string
		status      int
		wantInError string
	}{
		"Unsigned":             {"/v1/inbound/sendgrid", body, "", "", http.StatusUnauthorized, "unsigned"},
		"TamperedBody":         {"/v1/inbound/sendgrid", tampered, sig, stamp, http.StatusForbidden, "bad signature"},
		"OtherTimestamp":       {"/v1/inbound/sendgrid", body, sig, strconv.FormatInt(sendgridNow.Unix()-1, 10), http.StatusForbidden, "bad signature"},
		"WrongKey":             {"/v1/inbound/sendgrid", body, b.tenant.sign(t, stamp, body), stamp, http.StatusForbidden, "bad signature"},
		"Stale":                {"/v1/inbound/sendgrid", body, b.platform.sign(t, stale, body), stale, http.StatusForbidden, "stale"},
		"FromTheFuture":        {"/v1/inbound/sendgrid", body, b.platform.sign(t, future, body), future, http.StatusForbidden, "stale"},
		"NotBase64":            {"/v1/inbound/sendgrid", body, "%%%", stamp, http.StatusForbidden, "bad signature"},
		"NotATime":             {"/v1/inbound/sendgrid", body, sig, "yesterday", http.StatusForbidden, "Unix time"},
		"PlatformKeyForTenant": {"/v1/inbound/sendgrid/acme/sg", body, sig, stamp, http.StatusForbidden, "not verified"},
		"UnknownAccount":       {"/v1/inbound/sendgrid/acme/nope", body, sig, stamp, http.StatusForbidden, "not verified"},
		"UnknownProvider":      {"/v1/inbound/mailgun", body, sig, stamp, http.StatusNotFound, "no provider"},
		"NotEvents":            {"/v1/inbound/sendgrid", []byte(`{"event":"open"}`), b.platform.sign(t, stamp, []byte(`{"event":"open"}`)), stamp, http.StatusBadRequest, "JSON array"},
		"TooLarge":             {"/v1/inbound/sendgrid", make([]byte, 65<<10), sig, stamp, http.StatusRequestEntityTooLarge, "larger"},
	} {
		t.Run(name, func(t *testing.T) {
			status, answer := b.post(t, c.path, c.body, c.sig, c.stamp)
			require.Equal(t, c.status, status, answer)
			require.Contains(t, answer, c.wantInError)
		})
	}
	require.Empty(t, b.stored(t), "nothing refused is kept")
	require.NotContains(t, b.logs.String(), "zarya.example", "refusals are logged without their payload")
	require.Contains(t, b.logs.String(), "provider webhook refused")
}

// A tenant's own account posts to its path, verified with the key its
// vault entry keeps; its reports speak for that tenant only.
func TestSendGridTenantAccount(t *testing.T) {
	t.Parallel()
	b := setupSendGrid(t)
	status, answer := b.postSigned(t, "/v1/inbound/sendgrid/acme/sg", []byte(sendgridEvents), b.tenant)
	require.Equal(t, http.StatusOK, status, answer)
	stored := b.stored(t)
	require.Len(t, stored, 7)
	for _, r := range stored {
		require.Equal(t, "acme", r.Tenant)
		require.Equal(t, "sg", r.Account)
	}
	require.NotContains(t, b.logs.String(), "SG.secret")
}

// Without a key, Herald does not take SendGrid's events at all: to a post
// SendGrid signed, it says where the key goes.
func TestSendGridWithoutAKeyIsNotServed(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATS(t)
	h, err := New(Config{JetStream: n.JS})
	require.NoError(t, err)
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	req := httptest.NewRequest(http.MethodPost, "/v1/inbound/sendgrid", strings.NewReader("[]"))
	req.Header.Set("X-Twilio-Email-Event-Webhook-Signature", newSendGridKey(t).sign(t, stamp, []byte("[]")))
	req.Header.Set("X-Twilio-Email-Event-Webhook-Timestamp", stamp)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Contains(t, rec.Body.String(), "inbound.sendgrid.public_key")

	_, err = New(Config{JetStream: n.JS, SendGridPublicKey: "bm90IGEga2V5"})
	require.ErrorContains(t, err, "inbound.sendgrid.public_key: not a DER public key")
}
