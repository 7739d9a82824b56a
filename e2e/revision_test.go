package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A second event for the same order and revision — here an order.updated
// that adds a contact without a new revision — is routed while the first
// one's render request is still remembered by DOCS. The new contact gets
// the document once; the contact already mailed is not mailed again: NOTIFY
// drops the repeat inside its duplicate window, the delivery ledger after it.
func TestARecipientAddedToARevisionGetsItsEmailOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		window time.Duration // NOTIFY's (and ORDERS') duplicate window; 0 keeps production's
		stops  string        // what stops the second email to the first contact
	}{
		{name: "inside NOTIFY's duplicate window", stops: "NOTIFY"},
		{name: "after NOTIFY's duplicate window", window: time.Second, stops: "ledger"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startPipeline(t)
			if tt.window > 0 {
				shrinkDuplicateWindows(t, p, tt.window)
			}
			p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", func(m map[string]any) {
				data := m["data"].(map[string]any)
				data["recipients"] = data["recipients"].([]any)[:1] // Olga only
			}))
			p.settle(t)
			require.Len(t, byRecipient(p.mail(t))["olga@zarya.example"], 1)

			if tt.window > 0 {
				// Olga's delivery was stored before the pipeline settled, so
				// the window counted from now has certainly passed for it.
				past := time.Now().Add(tt.window)
				require.Eventually(t, func() bool { return time.Now().After(past) }, 10*time.Second, 50*time.Millisecond,
					"NOTIFY's duplicate window has passed")
			}
			// Same order, same revision, one more contact.
			p.publish(t, "orders.updated", "evt-2026-11-30-0001-contact", sample(t, "order.created.json", func(m map[string]any) {
				m["id"], m["type"] = "evt-2026-11-30-0001-contact", "order.updated"
			}))
			p.settle(t)

			got := byRecipient(p.mail(t))
			require.Len(t, got["compras@frutasdelsur.example"], 1, "the added contact gets the document")
			require.Len(t, got["olga@zarya.example"], 1, "the first contact is not mailed again")
			require.Len(t, got, 2)
			require.Equal(t, got["olga@zarya.example"][0].Attachments, got["compras@frutasdelsur.example"][0].Attachments,
				"the revision's document, as first stored")

			_, metrics := p.get(t, "/metrics")
			require.Regexp(t, `herald_documents_total\{outcome="rendered",tenant="acme",type="purchase_order"\} 1`, metrics)
			require.Regexp(t, `herald_documents_total\{outcome="reused",tenant="acme",type="purchase_order"\} 1`, metrics)
			ledger := `herald_deliveries_total\{channel="email",outcome="duplicate",provider="[a-z]+",tenant="acme"\} 1`
			if tt.stops == "ledger" {
				require.Regexp(t, ledger, metrics, "the repeat reached NOTIFY; the ledger stopped it")
			} else {
				require.NotRegexp(t, ledger, metrics, "NOTIFY dropped the repeat")
			}
		})
	}
}
