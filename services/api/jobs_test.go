package api_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/streams"
)

const job = `{
  "channel": "email",
  "recipient": {"address": "olga@zarya.example", "name": "Ольга Петрова"},
  "subject": "Your terms",
  "text": "Please find our terms attached.\n",
  "html": "<p>Please find our <b>terms</b> attached.</p>",
  "locale": "ru",
  "priority": "critical",
  "provider": "sendgrid-acme",
  "fallback": "ses",
  "attachments": ["acme/terms/2026.pdf"],
  "reference": "crm-42"
}`

// post sends a job as JSON.
func (b *bundle) post(t *testing.T, key, body string, headers ...string) answer {
	t.Helper()
	return b.do(t, http.MethodPost, "/v1/notifications", key, []byte(body), append([]string{"Content-Type", "application/json"}, headers...)...)
}

// storeDocument puts a document where the renderer would.
func storeDocument(t *testing.T, b *bundle, object string) notification.Document {
	t.Helper()
	ctx := heraldtest.Context(t)
	store, err := documents.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	ref, err := store.Put(ctx, object, "attachment", []byte("%PDF-1.7 "+object))
	require.NoError(t, err)
	return ref
}

// published are the deliveries on NOTIFY, with their Nats-Msg-Id.
func published(t *testing.T, b *bundle) ([]notification.Delivery, []*jetstream.RawStreamMsg) {
	t.Helper()
	msgs := heraldtest.StreamMessages(t, b.nats.JS, "NOTIFY")
	out := make([]notification.Delivery, len(msgs))
	for i, m := range msgs {
		d, err := notification.Decode(m.Data)
		require.NoError(t, err)
		out[i] = d
	}
	return out, msgs
}

// A job goes to NOTIFY as a routed notification does — on its channel,
// priority and tenant's subject, its dedupe key as Nats-Msg-Id — carrying
// what its caller wrote, the provider pair, and its attachment as stored;
// the id answered is the one GET /v1/notifications/{id} reads.
func TestAJobIsPublishedLikeARoutedNotification(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	terms := storeDocument(t, b, "acme/terms/2026.pdf")

	got := b.post(t, acmeSend, job, "Idempotency-Key", "terms-olga")
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	key := notification.JobKey("acme", "terms-olga", "crm-42", "email", "olga@zarya.example")
	id := notification.ID(key)
	require.JSONEq(t, `{"id":"`+id+`","tenant":"acme","stream":"NOTIFY","sequence":1,"duplicate":false}`, got.body)

	deliveries, msgs := published(t, b)
	require.Len(t, deliveries, 1)
	require.Equal(t, "notify.email.critical.acme", msgs[0].Subject)
	require.Equal(t, key, msgs[0].Header.Get(jetstream.MsgIDHeader))
	d := deliveries[0]
	require.Equal(t, id, d.ID)
	require.Equal(t, key, d.DedupeKey)
	require.Equal(t, notification.Recipient{Name: "Ольга Петрова", Address: "olga@zarya.example"}, d.Recipient)
	require.Equal(t, &notification.Message{Subject: "Your terms", Text: "Please find our terms attached.\n",
		HTML: "<p>Please find our <b>terms</b> attached.</p>"}, d.Message)
	require.Equal(t, []string{"sendgrid-acme", "ses"}, d.Providers)
	require.Equal(t, []notification.Document{terms}, d.Attachments)
	require.Equal(t, "ru", d.Locale)
	require.Empty(t, d.Template)
	require.Equal(t, []notification.Accepted{{Tenant: "acme", EventID: "crm-42", Time: acceptedRecords(t, b)[0].Time,
		Notifications: []notification.AcceptedNotification{
			{ID: id, Document: "job", Channel: "email", Recipient: "olga@zarya.example"},
		}}}, acceptedRecords(t, b), "listed as pending, under the caller's reference")

	record(t, b, ledger.Entry{DedupeKey: key, Tenant: "acme", Channel: "email", State: ledger.Delivered,
		Provider: "ses", ProviderMessageID: "ses-1", Tries: 1, Attempts: []ledger.Attempt{{Time: tried, Provider: "ses"}}})
	status := b.do(t, http.MethodGet, "/v1/notifications/"+id, acmeRead, nil)
	require.Equal(t, http.StatusOK, status.status, status.body)
	require.Equal(t, `"delivered"`, jsonField(t, status.body, "state"))
}

// The rules of /v1/events: the same key and body replay the first answer
// and send nothing; the same key with another body is refused. Without a
// key the body is the key — the same job, however it is spaced, once.
func TestAJobIsSentOncePerIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	storeDocument(t, b, "acme/terms/2026.pdf")

	first := b.post(t, acmeSend, job, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusAccepted, first.status, first.body)
	again := b.post(t, acmeSend, job, "Idempotency-Key", "k1")
	require.Equal(t, first.status, again.status)
	require.Equal(t, first.body, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))

	other := string(edit(t, []byte(job), `"Your terms"`, `"Our terms"`))
	reused := b.post(t, acmeSend, other, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusUnprocessableEntity, reused.status, reused.body)
	require.Contains(t, reused.body, "Idempotency-Key was used with another request")

	plain := b.post(t, acmeSend, other)
	require.Equal(t, http.StatusAccepted, plain.status, plain.body)
	var compact json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(other), &compact))
	respaced := b.post(t, acmeSend, string(must(json.Marshal(compact))))
	require.Equal(t, plain.body, respaced.body)
	require.Equal(t, "true", respaced.header.Get("Idempotent-Replayed"))

	deliveries, _ := published(t, b)
	require.Len(t, deliveries, 2, "one notification per key")
	require.NotEqual(t, deliveries[0].ID, deliveries[1].ID)
	records := acceptedRecords(t, b)
	require.Len(t, records, 2, "each recorded once")
	for i, a := range records {
		require.Len(t, a.Notifications, 1)
		require.Equal(t, deliveries[i].ID, a.Notifications[0].ID)
	}
}

// acceptedRecords are the Accepted records in STATUS.
func acceptedRecords(t *testing.T, b *bundle) []notification.Accepted {
	t.Helper()
	var out []notification.Accepted
	for _, m := range heraldtest.StreamMessages(t, b.nats.JS, "STATUS") {
		require.Equal(t, "notify.accepted.acme", m.Subject)
		var a notification.Accepted
		require.NoError(t, json.Unmarshal(m.Data, &a))
		require.False(t, a.Time.IsZero())
		out = append(out, a)
	}
	return out
}

// A job stored but not recorded as accepted is still answered 202 — it
// will be sent — and the failure is logged: the notification is listed
// only once a worker claims it.
func TestAJobNotRecordedAsAcceptedIsStillSentAndLogged(t *testing.T) {
	t.Parallel()
	logs := &heraldtest.Buffer{}
	b := setup(t, api.Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	storeDocument(t, b, "acme/terms/2026.pdf")
	require.NoError(t, b.nats.JS.DeleteStream(heraldtest.Context(t), "STATUS"))

	got := b.post(t, acmeSend, job, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	deliveries, _ := published(t, b)
	require.Len(t, deliveries, 1)
	require.Contains(t, logs.String(), "recording an accepted notification failed")
	require.Contains(t, logs.String(), "notification_id="+deliveries[0].ID)
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// What cannot be sent is refused before anything is published or
// recorded: a channel not delivered yet, a fallback without a provider, an
// attachment that is another tenant's — answered exactly as one that does
// not exist — a member the schema lacks, a missing text. Another tenant
// is refused (403); an admin key names the tenant.
func TestAJobThatCannotBeSentIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{AttachMaxBytes: 30})
	storeDocument(t, b, "acme/terms/2026.pdf")          // 28 bytes
	storeDocument(t, b, "acme/catalogue-2026-full.pdf") // 37 bytes
	storeDocument(t, b, "globex/payroll.pdf")

	for _, tt := range []struct {
		name, key, old, new string
		status              int
		says                string
	}{
		{"sms", acmeSend, `"channel": "email"`, `"channel": "sms"`, 422, "channel sms is not available yet; only email is delivered today"},
		{"fallback alone", acmeSend, `"provider": "sendgrid-acme",`, ``, 422, "a fallback needs a provider to fall back from"},
		{"fallback is the provider", acmeSend, `"fallback": "ses"`, `"fallback": "sendgrid-acme"`, 422, "the fallback is the provider itself"},
		{"another tenant's attachment", acmeSend, `"acme/terms/2026.pdf"`, `"globex/payroll.pdf"`, 422, "no stored document of the tenant has this name"},
		{"too large to attach", acmeSend, `"acme/terms/2026.pdf"`, `"acme/catalogue-2026-full.pdf"`, 422, "is 37 bytes, more than documents.attach_max_bytes (30)"},
		{"no such attachment", acmeSend, `"acme/terms/2026.pdf"`, `"acme/terms/2025.pdf"`, 422, "no stored document of the tenant has this name"},
		{"unknown member", acmeSend, `"locale": "ru",`, `"locale": "ru", "cc": "boss@zarya.example",`, 422, "unexpected property"},
		{"no text", acmeSend, `"text": "Please find our terms attached.\n",`, ``, 422, "expected required property text to be present"},
		{"another tenant", acmeSend, `"channel": "email",`, `"channel": "email", "tenant": "globex",`, 403, `the notification's tenant \"globex\" is not the API key's`},
		{"admin without tenant", adminKey, `"channel"`, `"channel"`, 422, "required with an admin key"},
		{"a header in the subject", acmeSend, `"Your terms"`, `"Your terms\r\nBcc: all@zarya.example"`, 422, "holds a control character (U+000D at byte 10)"},
		{"an escape in the name", acmeSend, `"Ольга Петрова"`, `"Ольга\u001b[2J"`, 422, "body.recipient.name"},
		{"a NUL in the text", acmeSend, `"Please find our terms attached.\n"`, `"Please\u0000"`, 422, "body.text"},
		{"a C1 control in the reference", acmeSend, `"crm-42"`, `"crm-42\u009b"`, 422, "body.reference"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := b.post(t, tt.key, string(edit(t, []byte(job), tt.old, tt.new)), "Idempotency-Key", "refused-"+tt.name)
			require.Equal(t, tt.status, got.status, got.body)
			require.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
			require.Contains(t, got.body, tt.says)
		})
	}
	deliveries, _ := published(t, b)
	require.Empty(t, deliveries)

	// Nothing was recorded either: the first key, fixed, goes through.
	fixed := b.post(t, acmeSend, job, "Idempotency-Key", "refused-no such attachment")
	require.Equal(t, http.StatusAccepted, fixed.status, fixed.body)
	require.Empty(t, fixed.header.Get("Idempotent-Replayed"))
}

// A provider name is not checked here: the tenant's chain is resolved by
// the delivery worker at send time, which fails the notification naming a
// provider the chain lacks. An admin key sends for the tenant it names.
func TestAnUnknownProviderIsTheWorkersToRefuse(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	storeDocument(t, b, "acme/terms/2026.pdf")
	body := string(edit(t, []byte(job), `"channel": "email",`, `"channel": "email", "tenant": "acme",`))
	body = string(edit(t, []byte(body), `"sendgrid-acme"`, `"nowhere"`))

	got := b.post(t, adminKey, body)
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	deliveries, _ := published(t, b)
	require.Len(t, deliveries, 1)
	require.Equal(t, []string{"nowhere", "ses"}, deliveries[0].Providers)
	require.Equal(t, "acme", deliveries[0].Tenant)
}

// A publish JetStream does not store answers 503 and gives the key back:
// the retry sends.
func TestAJobNATSDidNotStoreIsA503(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	ctx := heraldtest.Context(t)
	storeDocument(t, b, "acme/terms/2026.pdf")
	require.NoError(t, b.nats.JS.DeleteStream(ctx, "NOTIFY"))

	got := b.post(t, acmeSend, job, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
	require.Equal(t, "5", got.header.Get("Retry-After"))

	report, err := streams.Apply(ctx, b.nats.JS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	got = b.post(t, acmeSend, job, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	require.Empty(t, got.header.Get("Idempotent-Replayed"))
	deliveries, _ := published(t, b)
	require.Len(t, deliveries, 1)
}
