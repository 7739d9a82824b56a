package notification_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/notification"
)

// FuzzDecode: whatever arrives on notify.> — Herald's own deliveries, or a
// hand-made message — decoding never panics; what it accepts carries every
// field a worker needs; and it survives a round trip unchanged, so a
// delivery republished by the DLQ or the sweep is the one first planned.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":"ntf_1","dedupe_key":"acme:PO-1:1:purchase_order:email:a@b.example","tenant":"acme","channel":"email","recipient":{"address":"a@b.example"},"template":"purchase_order"}`))
	f.Add([]byte(`{"id":"ntf_2","dedupe_key":"acme:job:job-ab:email:a@b.example","tenant":"acme","channel":"email","recipient":{"address":"a@b.example"},"message":{"subject":"Hi","text":"Hello","html":"<p>Hello</p>"},"providers":["ses","smtp"]}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		d, err := notification.Decode(payload)
		if err != nil {
			if d.ID != "" || d.Tenant != "" {
				t.Fatalf("refused, yet returned a delivery: %+v", d)
			}
			return
		}
		required := map[string]string{
			"id": d.ID, "dedupe_key": d.DedupeKey, "tenant": d.Tenant, "channel": string(d.Channel),
			"recipient.address": d.Recipient.Address, "template": d.Template,
		}
		if d.Message != nil { // a job: its own content instead of a template
			delete(required, "template")
			required["message.subject"], required["message.text"] = d.Message.Subject, d.Message.Text
		}
		for field, v := range required {
			if v == "" {
				t.Fatalf("accepted without %s: %s", field, payload)
			}
		}
		first, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("an accepted delivery does not encode: %v", err)
		}
		again, err := notification.Decode(first)
		if err != nil {
			t.Fatalf("an accepted delivery, encoded, is refused: %v\n%s", err, first)
		}
		second, err := json.Marshal(again)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("the round trip changed the delivery:\n%s\n%s", first, second)
		}
	})
}

// A job's key never equals a routed notification's: the segment where an
// order key has its revision number is "job-…" in a job's.
func TestJobKeyIsNotAnOrderKey(t *testing.T) {
	t.Parallel()
	job := notification.JobKey("acme", "k1", "", "email", "a@b.example")
	order := notification.Key{Tenant: "acme", Subject: "job", Document: "job", Channel: "email", Recipient: "a@b.example"}
	require.NotEqual(t, order.String(), job)
	require.True(t, strings.HasPrefix(job, "acme:job:job-"), job)
	require.NotEqual(t, job, notification.JobKey("acme", "k1", "ref-2", "email", "a@b.example"), "the reference is part of a job's key")
}
