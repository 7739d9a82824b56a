package notification_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/heraldhq/herald/shared/notification"
)

// FuzzDecode: whatever arrives on notify.> — Herald's own deliveries, or a
// hand-made message — decoding never panics; what it accepts carries every
// field a worker needs; and it survives a round trip unchanged, so a
// delivery republished by the DLQ or the sweep is the one first planned.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":"ntf_1","dedupe_key":"acme:PO-1:1:purchase_order:email:a@b.example","tenant":"acme","channel":"email","recipient":{"address":"a@b.example"},"template":"purchase_order"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		d, err := notification.Decode(payload)
		if err != nil {
			if d.ID != "" || d.Tenant != "" {
				t.Fatalf("refused, yet returned a delivery: %+v", d)
			}
			return
		}
		for field, v := range map[string]string{
			"id": d.ID, "dedupe_key": d.DedupeKey, "tenant": d.Tenant, "channel": string(d.Channel),
			"recipient.address": d.Recipient.Address, "template": d.Template,
		} {
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
