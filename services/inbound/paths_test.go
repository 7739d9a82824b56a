package inbound

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/sms/twilio/twiliotest"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
)

// countingVault is the tenants' vault, counting its reads.
type countingVault struct {
	*vault.Store
	reads atomic.Int64
}

func (v *countingVault) Get(ctx context.Context, tenant, name string) (vault.Credential, error) {
	v.reads.Add(1)
	return v.Store.Get(ctx, tenant, name)
}

// pathsBundle is a handler whose tenants' accounts live in a real vault:
// acme has a SendGrid account with a webhook key (sg), one without (sg-bare),
// a Twilio account (tw) and an SES account (ses).
type pathsBundle struct {
	*sesBundle
	vault    *countingVault
	sendgrid sendgridKey
}

const pathsTopic = "arn:aws:sns:eu-west-1:210987654321:acme-ses-events"

func setupPaths(t *testing.T) *pathsBundle {
	t.Helper()
	ctx := heraldtest.Context(t)
	n := heraldtest.StartNATSWithStreams(t)
	raw := make([]byte, vault.KeySize)
	_, _ = rand.Read(raw)
	key, err := vault.ParseKey(raw)
	require.NoError(t, err)
	keys, err := vault.NewKeyring(key)
	require.NoError(t, err)
	store, err := vault.Open(ctx, n.JS, keys)
	require.NoError(t, err)
	b := &pathsBundle{vault: &countingVault{Store: store}, sendgrid: newSendGridKey(t), sesBundle: &sesBundle{nats: n,
		sns: &fakeSNS{certs: map[string][]byte{}}, clock: &clock{now: time.Now().UTC().Truncate(time.Millisecond)},
		logs: &heraldtest.Buffer{}}}
	for _, c := range []vault.Credential{
		{Name: "sg", Type: vault.TypeSendGrid, APIKey: vault.NewSecret("SG.acme"), WebhookPublicKey: b.sendgrid.public},
		{Name: "sg-bare", Type: vault.TypeSendGrid, APIKey: vault.NewSecret("SG.acme")},
		{Name: "tw", Type: vault.TypeTwilio, AccountSID: tenantSID, AuthToken: vault.NewSecret(tenantToken), From: "+15017122661"},
		{Name: "ses", Type: vault.TypeSES, Region: "eu-west-1", AccessKeyID: vault.NewSecret("AKIAACME"),
			SecretAccessKey: vault.NewSecret("acme-secret"), SNSTopics: []string{pathsTopic}},
	} {
		require.NoError(t, store.Put(ctx, "acme", c))
	}
	b.handler, err = New(Config{JetStream: n.JS, Accounts: b.vault, Now: b.clock.Now,
		Logger: slog.New(slog.NewTextHandler(b.logs, nil))})
	require.NoError(t, err)
	FetchSNSWith(b.handler, b.sns.fetch)
	b.sns.serve(testCertURL, certPEM(t, snsKey(), b.clock.Now().Add(-time.Hour), b.clock.Now().Add(30*24*time.Hour)))
	return b
}

// answer is what the handler answers req, byte for byte, and how many
// vault reads answering it took.
func (b *pathsBundle) answer(t *testing.T, req *http.Request) (string, int64) {
	t.Helper()
	before := b.vault.reads.Load()
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	dump, err := httputil.DumpResponse(rec.Result(), true)
	require.NoError(t, err)
	return string(dump), b.vault.reads.Load() - before
}

func (b *pathsBundle) sendgridPost(t *testing.T, path string, sign func(stamp string, body []byte) string, at time.Time) *http.Request {
	t.Helper()
	body := []byte(sendgridEvents)
	req := httptest.NewRequestWithContext(heraldtest.Context(t), http.MethodPost, Path+SendGrid+path, strings.NewReader(sendgridEvents))
	req.Header.Set("Content-Type", "application/json")
	if sign != nil {
		stamp := strconv.FormatInt(at.Unix(), 10)
		req.Header.Set("X-Twilio-Email-Event-Webhook-Signature", sign(stamp, body))
		req.Header.Set("X-Twilio-Email-Event-Webhook-Timestamp", stamp)
	}
	return req
}

func (b *pathsBundle) twilioPost(t *testing.T, path, token, sig string) *http.Request {
	t.Helper()
	form := callback("undelivered", "30005")
	form.Set("AccountSid", tenantSID)
	if token != "" {
		sig = twiliotest.Signature(token, "http://example.com"+Path+Twilio+path, form)
	}
	req := httptest.NewRequestWithContext(heraldtest.Context(t), http.MethodPost, Path+Twilio+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if sig != "" {
		req.Header.Set("X-Twilio-Signature", sig)
	}
	return req
}

func (b *pathsBundle) sesPost(t *testing.T, path string, change func(*snsEnvelope), signed bool) *http.Request {
	t.Helper()
	e := b.notification(fixture(t, "event-bounce-permanent.json"))
	e.TopicArn = pathsTopic
	change(e)
	if signed {
		sign(t, snsKey(), e)
	}
	req := httptest.NewRequestWithContext(heraldtest.Context(t), http.MethodPost, Path+SES+path, strings.NewReader(string(marshal(t, e))))
	req.Header.Set("Content-Type", "text/plain; charset=UTF-8")
	return req
}

// An anonymous caller learns nothing from a tenant's inbound paths: a
// tenant or an account that does not exist, an account of another
// provider or without a key, and a real account's request that is unsigned,
// badly signed or stale all get the same answer, byte for byte. What needs
// no key to refuse — no signature, a malformed one, a stale timestamp — is
// refused without reading the vault.
func TestTenantPathsAnswerAlikeWhateverExists(t *testing.T) {
	t.Parallel()
	b := setupPaths(t)
	now := b.clock.Now()
	right := func(stamp string, body []byte) string { return b.sendgrid.sign(t, stamp, body) }
	other := newSendGridKey(t)
	wrong := func(stamp string, body []byte) string { return other.sign(t, stamp, body) }
	garbage := func(string, []byte) string { return "bm90IGEgc2lnbmF0dXJl" }
	noSignature := func(e *snsEnvelope) {}
	otherTopic := func(e *snsEnvelope) { e.TopicArn = "arn:aws:sns:eu-west-1:666666666666:acme-ses-events" }
	stale := func(e *snsEnvelope) { e.Timestamp = now.Add(-6 * time.Minute).Format(snsTimeLayout) }

	refusals := []struct {
		name string
		req  *http.Request
		// cheap: refused on sight, before any vault read.
		cheap bool
	}{
		{name: "SendGridUnknownTenant", req: b.sendgridPost(t, "/globex/sg", right, now)},
		{name: "SendGridUnknownAccount", req: b.sendgridPost(t, "/acme/nope", right, now)},
		{name: "SendGridAccountOfAnotherType", req: b.sendgridPost(t, "/acme/tw", right, now)},
		{name: "SendGridAccountWithoutKey", req: b.sendgridPost(t, "/acme/sg-bare", right, now)},
		{name: "SendGridWrongKey", req: b.sendgridPost(t, "/acme/sg", wrong, now)},
		{name: "SendGridUnsigned", req: b.sendgridPost(t, "/acme/sg", nil, now), cheap: true},
		{name: "SendGridMalformedSignature", req: b.sendgridPost(t, "/acme/sg", garbage, now), cheap: true},
		{name: "SendGridStale", req: b.sendgridPost(t, "/acme/sg", right, now.Add(-6*time.Minute)), cheap: true},
		{name: "SendGridFromTheFuture", req: b.sendgridPost(t, "/acme/sg", right, now.Add(6*time.Minute)), cheap: true},
		{name: "TwilioUnknownTenant", req: b.twilioPost(t, "/globex/tw", tenantToken, "")},
		{name: "TwilioAccountOfAnotherType", req: b.twilioPost(t, "/acme/sg", tenantToken, "")},
		{name: "TwilioWrongToken", req: b.twilioPost(t, "/acme/tw", platformToken, "")},
		{name: "TwilioUnsigned", req: b.twilioPost(t, "/acme/tw", "", ""), cheap: true},
		{name: "TwilioMalformedSignature", req: b.twilioPost(t, "/acme/tw", "", "bm90IGEgc2lnbmF0dXJl"), cheap: true},
		{name: "SESUnknownAccount", req: b.sesPost(t, "/acme/nope", noSignature, true)},
		{name: "SESAccountOfAnotherType", req: b.sesPost(t, "/acme/sg", noSignature, true)},
		{name: "SESAnotherTopic", req: b.sesPost(t, "/acme/ses", otherTopic, true)},
		{name: "SESUnsigned", req: b.sesPost(t, "/acme/ses", noSignature, false), cheap: true},
		{name: "SESStale", req: b.sesPost(t, "/acme/ses", stale, true), cheap: true},
	}
	first, _ := b.answer(t, refusals[0].req)
	require.True(t, strings.HasPrefix(first, "HTTP/1.1 403 Forbidden\r\n"), first)
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			answer, reads := b.answer(t, r.req)
			require.Equal(t, first, answer)
			if r.cheap {
				require.Zero(t, reads, "refused without reading the vault")
			}
		})
	}

	// The paths are real: signed requests are taken.
	answer, _ := b.answer(t, b.sendgridPost(t, "/acme/sg", right, now))
	require.True(t, strings.HasPrefix(answer, "HTTP/1.1 200 OK\r\n"), answer)
	answer, _ = b.answer(t, b.twilioPost(t, "/acme/tw", tenantToken, ""))
	require.True(t, strings.HasPrefix(answer, "HTTP/1.1 200 OK\r\n"), answer)
	answer, _ = b.answer(t, b.sesPost(t, "/acme/ses", noSignature, true))
	require.True(t, strings.HasPrefix(answer, "HTTP/1.1 200 OK\r\n"), answer)
	// The log says what the answer does not.
	for _, why := range []string{`tenant \"globex\" has no account`, `is a twilio account, not sendgrid`, "nothing here verifies", "unsigned", "stale"} {
		require.Contains(t, b.logs.String(), why)
	}
}
