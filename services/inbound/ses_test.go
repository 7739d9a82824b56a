package inbound

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/report"
)

// The SNS topic and URLs the tests' messages name, as SNS names them.
const (
	testTopic        = "arn:aws:sns:us-east-1:123456789012:herald-ses-events"
	testCertURL      = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-test.pem"
	testSubscribeURL = "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=" + testTopic +
		"&Token=2336412f37fb687f5d51e6e2425dacbba9e3fa8b9a3c1d58b2c8e3d1e5d8a6f2"
	testUnsubscribeURL = "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=" + testTopic +
		":c9135db0-26c4-47ec-8998-413945fb5a96"
	// snsTimeLayout is how SNS writes Timestamp.
	snsTimeLayout = "2006-01-02T15:04:05.000Z"
)

// testKeys are SNS's stand-in and an impostor. Made once: a 2048-bit key
// takes a while, and longer under -race.
var testKeys = sync.OnceValue(func() [2]*rsa.PrivateKey {
	var keys [2]*rsa.PrivateKey
	for i := range keys {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		keys[i] = key
	}
	return keys
})

func snsKey() *rsa.PrivateKey      { return testKeys()[0] }
func impostorKey() *rsa.PrivateKey { return testKeys()[1] }

// certPEM is a self-signed certificate of key's, valid from notBefore to
// notAfter, PEM-encoded as SNS serves its own.
func certPEM(t testing.TB, key *rsa.PrivateKey, notBefore, notAfter time.Time) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sns.amazonaws.com"},
		NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// snsEnvelope is a message as SNS posts it to an HTTP(S) subscription.
type snsEnvelope struct {
	Type             string
	MessageId        string
	Token            string `json:",omitempty"`
	TopicArn         string
	Subject          string `json:",omitempty"`
	Message          string
	Timestamp        string
	SignatureVersion string
	Signature        string `json:",omitempty"`
	SigningCertURL   string
	SubscribeURL     string `json:",omitempty"`
	UnsubscribeURL   string `json:",omitempty"`
}

// sign signs e as SNS does: the fields its type signs, each as
// "Name\nValue\n" in SNS's order — a notification's Subject only if it has
// one — hashed as its SignatureVersion says.
func sign(t testing.TB, key *rsa.PrivateKey, e *snsEnvelope) {
	t.Helper()
	var s strings.Builder
	add := func(name, value string) { s.WriteString(name + "\n" + value + "\n") }
	add("Message", e.Message)
	add("MessageId", e.MessageId)
	if e.Type == "Notification" {
		if e.Subject != "" {
			add("Subject", e.Subject)
		}
	} else {
		add("SubscribeURL", e.SubscribeURL)
	}
	add("Timestamp", e.Timestamp)
	if e.Type != "Notification" {
		add("Token", e.Token)
	}
	add("TopicArn", e.TopicArn)
	add("Type", e.Type)

	hash, sum := crypto.SHA256, sha256.Sum256([]byte(s.String()))
	digest := sum[:]
	if e.SignatureVersion == "1" {
		sum1 := sha1.Sum([]byte(s.String()))
		hash, digest = crypto.SHA1, sum1[:]
	}
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, hash, digest)
	require.NoError(t, err)
	e.Signature = base64.StdEncoding.EncodeToString(sig)
}

// fakeSNS serves what Herald fetches from SNS: signing certificates, and
// the answer to a subscription's confirmation.
type fakeSNS struct {
	mu    sync.Mutex
	certs map[string][]byte // PEM by URL
	gets  []string          // every URL asked for, in order
	// confirmErr is what confirming a subscription fails with, if it does.
	confirmErr error
}

func (f *fakeSNS) fetch(_ context.Context, url string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets = append(f.gets, url)
	if cert, ok := f.certs[url]; ok {
		return cert, nil
	}
	if strings.Contains(url, "Action=ConfirmSubscription") {
		if f.confirmErr != nil {
			return nil, f.confirmErr
		}
		return []byte(`<ConfirmSubscriptionResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><ConfirmSubscriptionResult><SubscriptionArn>` +
			testTopic + `:c9135db0-26c4-47ec-8998-413945fb5a96</SubscriptionArn></ConfirmSubscriptionResult></ConfirmSubscriptionResponse>`), nil
	}
	return nil, errors.New("sns answered 404 Not Found")
}

func (f *fakeSNS) serve(url string, cert []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.certs[url] = cert
}

func (f *fakeSNS) fetched() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.gets)
}

type sesBundle struct {
	nats    *heraldtest.NATS
	handler *Handler
	sns     *fakeSNS
	clock   *clock
	logs    *heraldtest.Buffer
}

// setupSES starts NATS with the REPORTS stream and a handler taking SES
// events from testTopic, signed with snsKey's certificate at testCertURL.
func setupSES(t *testing.T, configure ...func(*Config)) *sesBundle {
	t.Helper()
	n := heraldtest.StartNATS(t)
	_, err := n.JS.CreateStream(heraldtest.Context(t), jetstream.StreamConfig{Name: report.Stream, Subjects: []string{"notify.reports.>"}})
	require.NoError(t, err)
	b := &sesBundle{nats: n, sns: &fakeSNS{certs: map[string][]byte{}},
		clock: &clock{now: time.Now().UTC().Truncate(time.Millisecond)}, logs: &heraldtest.Buffer{}}
	cfg := Config{JetStream: n.JS, SESTopics: []string{testTopic}, Now: b.clock.Now,
		Logger: slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, c := range configure {
		c(&cfg)
	}
	b.handler, err = New(cfg)
	require.NoError(t, err)
	FetchSNSWith(b.handler, b.sns.fetch)
	b.sns.serve(testCertURL, certPEM(t, snsKey(), b.clock.Now().Add(-time.Hour), b.clock.Now().Add(30*24*time.Hour)))
	return b
}

// notification is an unsigned SNS notification from testTopic carrying
// message, sent now.
func (b *sesBundle) notification(message string) *snsEnvelope {
	return &snsEnvelope{Type: "Notification", MessageId: newUUID(), TopicArn: testTopic, Message: message,
		Timestamp: b.clock.Now().Format(snsTimeLayout), SignatureVersion: "1", SigningCertURL: testCertURL,
		UnsubscribeURL: testUnsubscribeURL}
}

// confirmation is an unsigned SubscriptionConfirmation or
// UnsubscribeConfirmation from testTopic, sent now.
func (b *sesBundle) confirmation(typ string) *snsEnvelope {
	return &snsEnvelope{Type: typ, MessageId: newUUID(), TopicArn: testTopic,
		Token:     "2336412f37fb687f5d51e6e2425dacbba9e3fa8b9a3c1d58b2c8e3d1e5d8a6f2",
		Message:   "You have chosen to subscribe to the topic " + testTopic + ".\nTo confirm the subscription, visit the SubscribeURL included in this message.",
		Timestamp: b.clock.Now().Format(snsTimeLayout), SignatureVersion: "1", SigningCertURL: testCertURL,
		SubscribeURL: testSubscribeURL}
}

// post sends e to the platform's SES path.
func (b *sesBundle) post(t *testing.T, e *snsEnvelope) *httptest.ResponseRecorder {
	t.Helper()
	return b.postTo(t, Path+SES, e)
}

// postTo sends e to the handler at path.
func (b *sesBundle) postTo(t *testing.T, path string, e *snsEnvelope) *httptest.ResponseRecorder {
	t.Helper()
	return b.postBody(t, path, marshal(t, e))
}

func (b *sesBundle) postBody(t *testing.T, path string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(heraldtest.Context(t), http.MethodPost, path, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "text/plain; charset=UTF-8") // as SNS sends it
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	return rec
}

// stored are the reports the REPORTS stream holds, oldest first.
func (b *sesBundle) stored(t *testing.T) []report.Report {
	t.Helper()
	var out []report.Report
	for _, m := range heraldtest.StreamMessages(t, b.nats.JS, report.Stream) {
		var r report.Report
		require.NoError(t, json.Unmarshal(m.Data, &r))
		out = append(out, r)
	}
	return out
}

func requireStatus(t *testing.T, want int, rec *httptest.ResponseRecorder) {
	t.Helper()
	require.Equal(t, want, rec.Code, "answered %q", rec.Body.String())
}

func marshal(t *testing.T, e *snsEnvelope) []byte {
	t.Helper()
	body, err := json.Marshal(e)
	require.NoError(t, err)
	return body
}

// fixture is testdata/ses/name: an SES event shaped like AWS's examples.
func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "ses", name))
	require.NoError(t, err)
	return string(b)
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// A bounce SNS signed, with either signature version, is stored as one
// report per bounced recipient, each with an event id of its own.
func TestSESBounceIsStoredOncePerRecipient(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"1", "2"} {
		t.Run("SignatureVersion "+version, func(t *testing.T) {
			t.Parallel()
			b := setupSES(t)
			e := b.notification(fixture(t, "event-bounce-permanent.json"))
			e.SignatureVersion = version
			if version == "2" {
				e.Subject = "Amazon SES Email Event Notification" // signed only when present
			}
			sign(t, snsKey(), e)

			requireStatus(t, http.StatusOK, b.post(t, e))

			at, id := mustTime("2017-08-05T00:41:02.669Z"), "EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000000"
			require.Equal(t, []report.Report{
				{Provider: SES, MessageID: id, EventID: e.MessageId + ":olga.petrova@zarya.example", Kind: report.Bounced,
					Hard: true, Recipient: "Olga.Petrova@zarya.example", Detail: "smtp; 550 5.1.1 user unknown", Time: at},
				{Provider: SES, MessageID: id, EventID: e.MessageId + ":ivan@zarya.example", Kind: report.Bounced,
					Hard: true, Recipient: "ivan@zarya.example", Detail: "smtp; 550 5.1.1 <ivan@zarya.example>... User unknown", Time: at},
				{Provider: SES, MessageID: id, EventID: e.MessageId + ":procurement@zarya.example", Kind: report.Bounced,
					Hard: true, Recipient: "procurement@zarya.example", Detail: "Permanent/General", Time: at},
			}, b.stored(t))
		})
	}
}

// SNS sends a message again when it is not answered in time: the reports
// are stored once.
func TestSESRedeliveryIsStoredOnce(t *testing.T) {
	t.Parallel()
	b := setupSES(t)
	e := b.notification(fixture(t, "event-bounce-permanent.json"))
	sign(t, snsKey(), e)

	requireStatus(t, http.StatusOK, b.post(t, e))
	requireStatus(t, http.StatusOK, b.post(t, e))

	s, err := b.nats.JS.Stream(heraldtest.Context(t), report.Stream)
	require.NoError(t, err)
	info, err := s.Info(heraldtest.Context(t))
	require.NoError(t, err)
	require.Equal(t, uint64(3), info.State.Msgs, "three recipients, each once")
}

// Each kind of SES event, published or notified, arrives as SES reports it.
func TestSESEventsAreStoredAsReports(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture string
		want    []report.Report // EventID without the SNS message id
	}{
		{"event-bounce-transient.json", []report.Report{{Kind: report.Bounced, Hard: false, Recipient: "ivan@zarya.example",
			EventID: ":ivan@zarya.example", Detail: "Transient/MailboxFull", Time: mustTime("2017-08-05T00:41:02.669Z"),
			MessageID: "EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000001"}}},
		{"event-complaint.json", []report.Report{{Kind: report.Complained, Recipient: "olga@zarya.example",
			EventID: ":olga@zarya.example", Detail: "abuse", Time: mustTime("2017-08-05T00:41:02.669Z"),
			MessageID: "EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000002"}}},
		{"event-delivery.json", []report.Report{
			{Kind: report.Delivered, Recipient: "olga@zarya.example", EventID: ":olga@zarya.example",
				Detail: "250 2.6.0 Message received", Time: mustTime("2016-10-19T23:21:04.133Z"),
				MessageID: "EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000003"},
			{Kind: report.Delivered, Recipient: "ivan@zarya.example", EventID: ":ivan@zarya.example",
				Detail: "250 2.6.0 Message received", Time: mustTime("2016-10-19T23:21:04.133Z"),
				MessageID: "EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000003"}}},
		{"notification-bounce.json", []report.Report{{Kind: report.Bounced, Hard: true, Recipient: "jane@zarya.example",
			EventID: ":jane@zarya.example", Detail: "smtp; 550 5.1.1 <jane@zarya.example>... User",
			Time: mustTime("2016-01-27T14:59:38.237Z"), MessageID: "00000138111222aa-33322211-cccc-cccc-cccc-ddddaaaa0680-000000"}}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			b := setupSES(t)
			e := b.notification(fixture(t, tc.fixture))
			sign(t, snsKey(), e)

			requireStatus(t, http.StatusOK, b.post(t, e))

			for i := range tc.want {
				tc.want[i].Provider, tc.want[i].EventID = SES, e.MessageId+tc.want[i].EventID
			}
			require.Equal(t, tc.want, b.stored(t))
		})
	}
}

// A message SNS did not sign — altered, signed by someone else, from a
// topic Herald was not given, or old — is refused, and nothing of it is
// stored or logged.
func TestSESRefusesWhatSNSDidNotSign(t *testing.T) {
	t.Parallel()
	b := setupSES(t)
	for _, tc := range []struct {
		name   string
		before func(e *snsEnvelope) // before signing
		key    *rsa.PrivateKey
		after  func(e *snsEnvelope) // after signing
		status int
	}{
		{name: "message altered", status: http.StatusForbidden,
			after: func(e *snsEnvelope) { e.Message = strings.Replace(e.Message, "Permanent", "Transient", 1) }},
		{name: "message id altered", status: http.StatusForbidden,
			after: func(e *snsEnvelope) { e.MessageId = newUUID() }},
		{name: "subject added", status: http.StatusForbidden,
			after: func(e *snsEnvelope) { e.Subject = "Amazon SES Email Event Notification" }},
		{name: "signed with another key", status: http.StatusForbidden, key: impostorKey()},
		{name: "signature version changed", status: http.StatusForbidden,
			after: func(e *snsEnvelope) { e.SignatureVersion = "2" }},
		{name: "signature version unknown", status: http.StatusForbidden,
			before: func(e *snsEnvelope) { e.SignatureVersion = "3" }},
		{name: "signature not base64", status: http.StatusForbidden,
			after: func(e *snsEnvelope) { e.Signature = "not base64!" }},
		{name: "no signature", status: http.StatusUnauthorized,
			after: func(e *snsEnvelope) { e.Signature = "" }},
		{name: "another topic", status: http.StatusForbidden,
			before: func(e *snsEnvelope) { e.TopicArn = "arn:aws:sns:us-east-1:666666666666:herald-ses-events" }},
		{name: "signed too long ago", status: http.StatusForbidden,
			before: func(e *snsEnvelope) { e.Timestamp = b.clock.Now().Add(-6 * time.Minute).Format(snsTimeLayout) }},
		{name: "signed in the future", status: http.StatusForbidden,
			before: func(e *snsEnvelope) { e.Timestamp = b.clock.Now().Add(6 * time.Minute).Format(snsTimeLayout) }},
		{name: "timestamp not a time", status: http.StatusBadRequest,
			before: func(e *snsEnvelope) { e.Timestamp = "yesterday" }},
		{name: "type unknown", status: http.StatusBadRequest,
			before: func(e *snsEnvelope) { e.Type = "Notice" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := b.notification(fixture(t, "event-bounce-permanent.json"))
			if tc.before != nil {
				tc.before(e)
			}
			sign(t, cmpKey(tc.key), e)
			if tc.after != nil {
				tc.after(e)
			}
			requireStatus(t, tc.status, b.post(t, e))
		})
	}
	t.Run("not JSON", func(t *testing.T) {
		requireStatus(t, http.StatusUnauthorized, b.postBody(t, Path+SES, []byte("Type=Notification&Message=hello")))
	})

	require.Empty(t, b.stored(t))
	require.Contains(t, b.logs.String(), "provider webhook refused")
	require.NotContains(t, b.logs.String(), "zarya.example", "a refusal's log names no one the message is about")
	require.NotContains(t, b.logs.String(), "Purchase order")
}

func cmpKey(key *rsa.PrivateKey) *rsa.PrivateKey {
	if key != nil {
		return key
	}
	return snsKey()
}

// The certificate is fetched from SNS's own hosts only: a message naming
// another is refused before anything is fetched — whatever it names would
// serve its sender's certificate.
func TestSESFetchesCertificatesFromSNSOnly(t *testing.T) {
	t.Parallel()
	b := setupSES(t)
	for _, url := range []string{
		"https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService-test.pem",
		"http://sns.us-east-1.amazonaws.com/SimpleNotificationService-test.pem",
		"https://evil.example/SimpleNotificationService-test.pem",
		"https://evil.example/sns.us-east-1.amazonaws.com/SimpleNotificationService-test.pem",
		"https://evil.example#@sns.us-east-1.amazonaws.com/SimpleNotificationService-test.pem",
		"https://sns.us-east-1.amazonaws.com@evil.example/SimpleNotificationService-test.pem",
		"https://evil.example@sns.us-east-1.amazonaws.com/SimpleNotificationService-test.pem",
		"https://sns.us-east-1.amazonaws.com:8443/SimpleNotificationService-test.pem",
		"https://sns.us-east-1.amazonaws.com/SimpleNotificationService-test.txt",
		"https://sns.us-east-1.amazonaws.com/redirect?to=https://evil.example/x.pem",
		"https://sns.us-east-1.amazonaws.com.cn.evil.example/SimpleNotificationService-test.pem",
		"https://sns.amazonaws.com/SimpleNotificationService-test.pem",
		"https://sqs.us-east-1.amazonaws.com/SimpleNotificationService-test.pem",
		"https://sns.us-east-1.amazonaws.com%2eevil.example/SimpleNotificationService-test.pem",
		"//sns.us-east-1.amazonaws.com/SimpleNotificationService-test.pem",
		"",
	} {
		t.Run(url, func(t *testing.T) {
			e := b.notification(fixture(t, "event-bounce-permanent.json"))
			e.SigningCertURL = url
			sign(t, snsKey(), e)
			requireStatus(t, http.StatusForbidden, b.post(t, e))
		})
	}
	require.Empty(t, b.sns.fetched(), "nothing fetched")
	require.Empty(t, b.stored(t))

	t.Run("SNS in China", func(t *testing.T) {
		china := "https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-test.pem"
		b.sns.serve(china, certPEM(t, snsKey(), b.clock.Now().Add(-time.Hour), b.clock.Now().Add(time.Hour)))
		e := b.notification(fixture(t, "event-complaint.json"))
		e.SigningCertURL = china
		sign(t, snsKey(), e)
		requireStatus(t, http.StatusOK, b.post(t, e))
		require.Equal(t, []string{china}, b.sns.fetched())
	})
}

// A certificate is fetched once and kept for a day at most.
func TestSESCertificateIsFetchedOnce(t *testing.T) {
	t.Parallel()
	b := setupSES(t)
	post := func() {
		e := b.notification(fixture(t, "event-delivery.json"))
		sign(t, snsKey(), e)
		requireStatus(t, http.StatusOK, b.post(t, e))
	}
	post()
	post()
	require.Equal(t, []string{testCertURL}, b.sns.fetched())

	b.clock.Add(25 * time.Hour)
	post()
	require.Equal(t, []string{testCertURL, testCertURL}, b.sns.fetched(), "fetched again after a day")
}

// A certificate that cannot be fetched is 503, for SNS to send the message
// again; one that is not a valid certificate now is 403.
func TestSESCertificateProblems(t *testing.T) {
	t.Parallel()
	b := setupSES(t)
	now := b.clock.Now()
	for _, tc := range []struct {
		name   string
		cert   []byte // nil: not served
		status int
	}{
		{"unreachable", nil, http.StatusServiceUnavailable},
		{"expired", certPEM(t, snsKey(), now.Add(-48*time.Hour), now.Add(-time.Minute)), http.StatusForbidden},
		{"not yet valid", certPEM(t, snsKey(), now.Add(time.Minute), now.Add(48*time.Hour)), http.StatusForbidden},
		{"not PEM", []byte("<Error><Code>NoSuchKey</Code></Error>"), http.StatusForbidden},
		{"not a certificate", []byte("-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n"), http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-" + strings.ReplaceAll(tc.name, " ", "-") + ".pem"
			if tc.cert != nil {
				b.sns.serve(url, tc.cert)
			}
			e := b.notification(fixture(t, "event-delivery.json"))
			e.SigningCertURL = url
			sign(t, snsKey(), e)
			requireStatus(t, tc.status, b.post(t, e))
		})
	}
	require.Empty(t, b.stored(t))
}

// A subscription SNS asks to confirm is confirmed — only once its
// confirmation is verified, and only at SNS.
func TestSESConfirmsSubscriptions(t *testing.T) {
	t.Parallel()
	t.Run("signed", func(t *testing.T) {
		t.Parallel()
		b := setupSES(t)
		e := b.confirmation("SubscriptionConfirmation")
		e.SignatureVersion = "2"
		sign(t, snsKey(), e)

		requireStatus(t, http.StatusOK, b.post(t, e))

		require.Equal(t, []string{testCertURL, testSubscribeURL}, b.sns.fetched())
		require.Contains(t, b.logs.String(), `msg="SNS subscription confirmed" topic=`+testTopic)
		require.Empty(t, b.stored(t))
	})
	for _, tc := range []struct {
		name   string
		after  func(*snsEnvelope)
		status int
	}{
		{"token altered", func(e *snsEnvelope) { e.Token += "0" }, http.StatusForbidden},
		{"subscribe URL altered", func(e *snsEnvelope) {
			e.SubscribeURL = strings.Replace(e.SubscribeURL, "us-east-1", "eu-west-1", 1)
		}, http.StatusForbidden},
		{"no signature", func(e *snsEnvelope) { e.Signature = "" }, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupSES(t)
			e := b.confirmation("SubscriptionConfirmation")
			sign(t, snsKey(), e)
			tc.after(e)

			requireStatus(t, tc.status, b.post(t, e))

			for _, url := range b.sns.fetched() {
				require.NotContains(t, url, "Action=ConfirmSubscription", "not confirmed")
			}
			require.NotContains(t, b.logs.String(), "SNS subscription confirmed")
		})
	}
	t.Run("subscribe URL not SNS's", func(t *testing.T) {
		t.Parallel()
		b := setupSES(t)
		e := b.confirmation("SubscriptionConfirmation")
		e.SubscribeURL = "https://evil.example/?Action=ConfirmSubscription"
		sign(t, snsKey(), e)

		requireStatus(t, http.StatusForbidden, b.post(t, e))
		require.Equal(t, []string{testCertURL}, b.sns.fetched())
	})
	t.Run("SNS unavailable", func(t *testing.T) {
		t.Parallel()
		b := setupSES(t)
		b.sns.confirmErr = errors.New("sns.us-east-1.amazonaws.com answered 500 Internal Server Error")
		e := b.confirmation("SubscriptionConfirmation")
		sign(t, snsKey(), e)

		requireStatus(t, http.StatusServiceUnavailable, b.post(t, e))
		require.NotContains(t, b.logs.String(), "SNS subscription confirmed")
	})
}

// An unsubscribe confirmation is taken and noted: subscribing again is for
// whoever unsubscribed to decide.
func TestSESUnsubscribeConfirmationIsNotFollowed(t *testing.T) {
	t.Parallel()
	b := setupSES(t)
	e := b.confirmation("UnsubscribeConfirmation")
	e.Message = "You have chosen to deactivate subscription " + testTopic + ":c9135db0-26c4-47ec-8998-413945fb5a96.\nTo cancel this operation and restore the subscription, visit the SubscribeURL included in this message."
	sign(t, snsKey(), e)

	requireStatus(t, http.StatusOK, b.post(t, e))

	require.Equal(t, []string{testCertURL}, b.sns.fetched(), "SubscribeURL not visited")
	require.Contains(t, b.logs.String(), "SNS subscription ended")
	require.Empty(t, b.stored(t))
}

// A verified notification that is not an SES event Herald can read is
// 400, naming what it lacks; SES events without reports are taken and
// dropped.
func TestSESNotificationsThatAreNotReports(t *testing.T) {
	t.Parallel()
	b := setupSES(t)
	for _, tc := range []struct {
		name, message string
		status        int
		reason        string
	}{
		{"not JSON", "Hello from SNS", http.StatusBadRequest, "not SES JSON"},
		{"not an SES event", `{"order":"PO-1"}`, http.StatusBadRequest, "neither eventType nor notificationType"},
		{"no mail.messageId", `{"eventType":"Bounce","bounce":{"bounceType":"Permanent","bounceSubType":"General",` +
			`"bouncedRecipients":[{"emailAddress":"olga@zarya.example"}]},"mail":{"destination":["olga@zarya.example"]}}`,
			http.StatusBadRequest, "mail.messageId"},
		{"a send", fixture(t, "event-send.json"), http.StatusOK, ""},
		{"another sender's bounce, through the same configuration set", strings.Replace(fixture(t, "event-bounce-permanent.json"),
			`"herald_notification_id"`, `"their_own_tag"`, 1), http.StatusOK, ""},
		{"SES testing the topic", fixture(t, "notification-subscription-succeeded.json"), http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := b.notification(tc.message)
			sign(t, snsKey(), e)
			rec := b.post(t, e)
			requireStatus(t, tc.status, rec)
			require.Contains(t, rec.Body.String(), tc.reason)
		})
	}
	require.Empty(t, b.stored(t))
	require.Contains(t, b.logs.String(), "type=AmazonSnsSubscriptionSucceeded")
}

// A tenant's SES account takes events from its own topics only, and its
// reports say whose they are.
func TestSESTenantAccount(t *testing.T) {
	t.Parallel()
	const tenantTopic = "arn:aws:sns:eu-west-1:210987654321:acme-ses-events"
	b := setupSES(t, func(c *Config) {
		c.Accounts = fakeAccounts{"acme/ses-eu": {Name: "ses-eu", Type: SES, SNSTopics: []string{tenantTopic}}}
	})
	path := Path + SES + "/acme/ses-eu"

	platform := b.notification(fixture(t, "event-complaint.json"))
	sign(t, snsKey(), platform)
	rec := b.postTo(t, path, platform)
	requireStatus(t, http.StatusForbidden, rec)
	require.Contains(t, b.logs.String(), "not one of tenant acme's account ses-eu's topics")

	own := b.notification(fixture(t, "event-complaint.json"))
	own.TopicArn = tenantTopic
	sign(t, snsKey(), own)
	requireStatus(t, http.StatusOK, b.postTo(t, path, own))

	stored := b.stored(t)
	require.Len(t, stored, 1)
	require.Equal(t, "acme", stored[0].Tenant)
	require.Equal(t, "ses-eu", stored[0].Account)
	require.Equal(t, report.Complained, stored[0].Kind)
}

// Requests verified at once share the certificate cache safely (run with
// -race).
func TestSESConcurrentRequests(t *testing.T) {
	t.Parallel()
	b := setupSES(t)
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		e := b.notification(fixture(t, "event-delivery.json"))
		sign(t, snsKey(), e)
		body := marshal(t, e)
		wg.Go(func() { codes[i] = b.postBody(t, Path+SES, body).Code })
	}
	wg.Wait()
	for _, code := range codes {
		require.Equal(t, http.StatusOK, code)
	}
	require.Len(t, b.stored(t), 16, "eight deliveries to two recipients")
}

// roundTrip answers a client's requests in-process.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func answer(r *http.Request, status int, body string, header http.Header) *http.Response {
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: header, Request: r,
		Body: io.NopCloser(strings.NewReader(body))}
}

// Without the tests' fetch, certificates and confirmations are fetched
// over HTTP: SNS's answers other than 2xx, a redirect (which would lead off
// SNS's hosts), and an oversized answer are failures to reach SNS.
func TestSESFetchesOverHTTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		confirm func(r *http.Request) *http.Response
		status  int
	}{
		{"confirmed", func(r *http.Request) *http.Response { return answer(r, 200, "<ConfirmSubscriptionResponse/>", nil) }, http.StatusOK},
		{"SNS failing", func(r *http.Request) *http.Response { return answer(r, 500, "<Error/>", nil) }, http.StatusServiceUnavailable},
		{"redirected", func(r *http.Request) *http.Response {
			return answer(r, 302, "", http.Header{"Location": {"https://evil.example/confirm"}})
		}, http.StatusServiceUnavailable},
		{"answer too large", func(r *http.Request) *http.Response {
			return answer(r, 200, strings.Repeat("x", maxCertBytes+1), nil)
		}, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var hosts []string
			var cert []byte
			client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				hosts = append(hosts, r.URL.Host)
				mu.Unlock()
				if r.URL.String() == testCertURL {
					return answer(r, 200, string(cert), nil), nil
				}
				return tc.confirm(r), nil
			})}
			b := setupSES(t, func(c *Config) { c.HTTPClient = client })
			b.handler.sns.fetch = nil // over HTTP
			cert = certPEM(t, snsKey(), b.clock.Now().Add(-time.Hour), b.clock.Now().Add(time.Hour))
			e := b.confirmation("SubscriptionConfirmation")
			sign(t, snsKey(), e)

			requireStatus(t, tc.status, b.post(t, e))

			mu.Lock()
			defer mu.Unlock()
			require.NotContains(t, hosts, "evil.example", "the redirect not followed")
		})
	}
}

// Each SES event becomes the reports Herald keeps of it; the rest become
// none.
func TestSESEventReports(t *testing.T) {
	t.Parallel()
	const snsID = "b3f7e3c2-5a29-5a3e-9c8e-3c1b0f2c1e7a"
	snsTime := mustTime("2024-05-01T12:00:00.000Z")
	r := func(kind report.Kind, hard bool, messageID, recipient, detail, at string) report.Report {
		id := snsID
		if recipient != "" {
			id += ":" + strings.ToLower(recipient)
		}
		return report.Report{MessageID: messageID, EventID: id, Kind: kind, Hard: hard, Recipient: recipient,
			Detail: detail, Time: mustTime(at)}
	}
	const (
		permanent = "EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000000"
		example   = "EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-0000"
	)
	for _, tc := range []struct {
		name, message string
		want          []report.Report
	}{
		{"permanent bounce", fixture(t, "event-bounce-permanent.json"), []report.Report{
			r(report.Bounced, true, permanent, "Olga.Petrova@zarya.example", "smtp; 550 5.1.1 user unknown", "2017-08-05T00:41:02.669Z"),
			r(report.Bounced, true, permanent, "ivan@zarya.example", "smtp; 550 5.1.1 <ivan@zarya.example>... User unknown", "2017-08-05T00:41:02.669Z"),
			r(report.Bounced, true, permanent, "procurement@zarya.example", "Permanent/General", "2017-08-05T00:41:02.669Z"),
		}},
		{"transient bounce", fixture(t, "event-bounce-transient.json"), []report.Report{
			r(report.Bounced, false, example+"01", "ivan@zarya.example", "Transient/MailboxFull", "2017-08-05T00:41:02.669Z"),
		}},
		{"undetermined bounce, without a timestamp", `{"eventType":"Bounce","bounce":{"bounceType":"Undetermined","bounceSubType":"Undetermined",` +
			`"bouncedRecipients":[{"emailAddress":"olga@zarya.example"}]},"mail":{"messageId":"m-1","destination":["olga@zarya.example"]}}`,
			[]report.Report{r(report.Bounced, false, "m-1", "olga@zarya.example", "Undetermined/Undetermined", "2024-05-01T12:00:00.000Z")}},
		{"complaint", fixture(t, "event-complaint.json"), []report.Report{
			r(report.Complained, false, example+"02", "olga@zarya.example", "abuse", "2017-08-05T00:41:02.669Z"),
		}},
		{"delivery", fixture(t, "event-delivery.json"), []report.Report{
			r(report.Delivered, false, example+"03", "olga@zarya.example", "250 2.6.0 Message received", "2016-10-19T23:21:04.133Z"),
			r(report.Delivered, false, example+"03", "ivan@zarya.example", "250 2.6.0 Message received", "2016-10-19T23:21:04.133Z"),
		}},
		{"open, one recipient", fixture(t, "event-open.json"), []report.Report{
			r(report.Opened, false, example+"04", "olga@zarya.example", "", "2017-08-09T22:00:19.652Z"),
		}},
		{"click, two recipients", fixture(t, "event-click.json"), []report.Report{
			r(report.Clicked, false, example+"05", "", "https://acme.example/orders/PO-5?utm_source=herald", "2017-08-09T23:51:25.570Z"),
		}},
		{"subscription", fixture(t, "event-subscription.json"), []report.Report{
			r(report.Unsubscribed, false, example+"06", "olga@zarya.example", "", "2022-01-12T01:00:17.910Z"),
		}},
		{"send", fixture(t, "event-send.json"), nil},
		{"reject", fixture(t, "event-reject.json"), nil},
		{"rendering failure", fixture(t, "event-rendering-failure.json"), nil},
		{"delivery delay", fixture(t, "event-delivery-delay.json"), nil},
		{"a type SES added since", `{"eventType":"Teleport","mail":{"messageId":"m-1"}}`, nil},
		{"classic bounce", fixture(t, "notification-bounce.json"), []report.Report{
			r(report.Bounced, true, "00000138111222aa-33322211-cccc-cccc-cccc-ddddaaaa0680-000000", "jane@zarya.example",
				"smtp; 550 5.1.1 <jane@zarya.example>... User", "2016-01-27T14:59:38.237Z"),
		}},
		{"classic complaint, without a feedback type", fixture(t, "notification-complaint.json"), []report.Report{
			r(report.Complained, false, "000001378603177f-7a5433e7-8edb-42ae-af10-f0181f34d6ee-000000", "richard@zarya.example",
				"", "2016-01-27T14:59:38.237Z"),
		}},
		{"classic delivery", fixture(t, "notification-delivery.json"), []report.Report{
			r(report.Delivered, false, "0000014644fe5ef6-9a483358-9170-4cb4-a269-f5dcdf415321-000000", "jane@zarya.example",
				"250 ok:  Message 64111812 accepted", "2016-01-27T14:59:38.237Z"),
		}},
		{"classic: SES testing the topic", fixture(t, "notification-subscription-succeeded.json"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := readSESEvent(tc.message)
			require.NoError(t, err)
			got, err := e.reports(snsID, snsTime)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			for _, rep := range got {
				rep.Provider = SES
				require.NoError(t, rep.Check())
			}
		})
	}
}

// An SES event missing what its reports need is refused, naming the field.
func TestSESEventReportsRefuseIncompleteEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ message, field string }{
		{`{"eventType":"Delivery","delivery":{"recipients":["olga@zarya.example"]},"mail":{}}`, "mail.messageId"},
		{`{"eventType":"Bounce","mail":{"messageId":"m-1"}}`, "bounce.bouncedRecipients"},
		{`{"eventType":"Bounce","bounce":{"bounceType":"Permanent","bouncedRecipients":[{"status":"5.1.1"}]},"mail":{"messageId":"m-1"}}`,
			"bounce.bouncedRecipients[0] has no emailAddress"},
		{`{"notificationType":"Complaint","mail":{"messageId":"m-1"}}`, "complaint.complainedRecipients"},
		{`{"eventType":"Delivery","delivery":{"recipients":[]},"mail":{"messageId":"m-1"}}`, "delivery.recipients"},
	} {
		e, err := readSESEvent(tc.message)
		require.NoError(t, err)
		_, err = e.reports("sns-1", time.Now())
		var refused *Refused
		require.ErrorAs(t, err, &refused)
		require.Equal(t, http.StatusBadRequest, refused.Status)
		require.Contains(t, refused.Reason, tc.field)
	}
}

// The certificates kept are bounded: beyond maxCerts, the one that expires
// first makes room.
func TestSNSCertificatesKeptAreBounded(t *testing.T) {
	t.Parallel()
	v := newSNSVerifier(http.DefaultClient)
	now := time.Now()
	for i := range maxCerts + 1 {
		v.keep(strings.Repeat("x", i+1), snsCert{cert: &x509.Certificate{}, expires: now.Add(time.Duration(maxCerts+1-i) * time.Hour)})
	}
	require.Len(t, v.certs, maxCerts)
	require.Contains(t, v.certs, "x", "the first kept expires last")
	require.NotContains(t, v.certs, strings.Repeat("x", maxCerts), "the one expiring first made room")
}
