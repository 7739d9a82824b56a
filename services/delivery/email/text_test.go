package email_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

var update = flag.Bool("update", false, "rewrite testdata/text/ from what Compose renders now")

// shippedLocales are the languages templates/ has a file for.
var shippedLocales = []string{"en", "es", "ru"}

// workflowTemplates are the steps of the purchase order's workflow: a
// reminder to the supplier, a word to the buyer; each about the purchase
// order, its document.
var workflowTemplates = []string{"po_reminder", "po_unconfirmed"}

// shippedTemplates are the notification templates every shipped locale
// defines: one per business document, the stock alert, and the workflow's.
var shippedTemplates = slices.Concat(notification.DocumentTypes, []string{"low_stock"}, workflowTemplates)

// textCase is one delivery whose text part is pinned in testdata/text/.
type textCase struct {
	name    string
	d       notification.Delivery
	content email.Content
}

// textCases cover every template in every locale: a document attached at
// revision 1 and linked at revision 2 (the workflow's templates with the
// purchase order), and the stock alert to a recipient without a name.
func textCases() []textCase {
	pdf := email.Content{Attachments: []email.Attachment{{Filename: "doc.pdf", ContentType: "application/pdf", Data: []byte("%PDF")}}}
	link := email.Content{Link: "https://herald.example/v1/documents/acme/PO-2026-0042/doc-r2.pdf?expires=1796634000&signature=abc", LinkExpires: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)}
	var out []textCase
	for _, locale := range shippedLocales {
		for _, doc := range notification.DocumentTypes {
			out = append(out,
				textCase{doc + "." + locale + ".r1-attached", document(doc, locale, 1), pdf},
				textCase{doc + "." + locale + ".r2-linked", document(doc, locale, 2), link})
		}
		for _, name := range workflowTemplates {
			out = append(out,
				textCase{name + "." + locale + ".r1-attached", workflowStep(name, locale, 1), pdf},
				textCase{name + "." + locale + ".r2-linked", workflowStep(name, locale, 2), link})
		}
		out = append(out, textCase{"low_stock." + locale, lowStock(locale), email.Content{}})
	}
	return out
}

// document is purchaseOrder's order as the document doc.
func document(doc, locale string, revision int) notification.Delivery {
	d := purchaseOrder(locale, revision)
	d.Template, d.Document = doc, &notification.Document{Type: doc}
	return d
}

// workflowStep is purchaseOrder's order in the workflow's template name:
// po_unconfirmed goes to the buyer.
func workflowStep(name, locale string, revision int) notification.Delivery {
	d := purchaseOrder(locale, revision)
	d.Template = name
	if name == "po_unconfirmed" {
		d.Recipient = notification.Recipient{Name: "Carmen Ruiz", Role: "buyer", Address: "compras@frutas.example"}
	}
	return d
}

func lowStock(locale string) notification.Delivery {
	return notification.Delivery{
		ID: "ntf_2", Tenant: "acme", Template: "low_stock", Locale: locale,
		Recipient: notification.Recipient{Address: "almacen@acme.example"},
		Stock:     &event.Stock{SKU: "MILK-1L", Description: "Leche entera 1 L", Warehouse: "SEV-01", OnHand: "14", ReorderPoint: "50", Unit: "ud"},
	}
}

// The text part of every shipped template is pinned byte for byte: what
// readers of the text part got before the HTML part existed, they still get.
// Run with -update only when a text template changes on purpose.
func TestComposeTextIsPinned(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	for _, tc := range textCases() {
		m, err := c.Compose(tc.d, tc.content)
		require.NoError(t, err, tc.name)
		got := "Subject: " + m.Subject + "\n\n" + m.Text
		path := filepath.Join("testdata", "text", tc.name+".txt")
		if *update {
			require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, string(want), got, tc.name)
	}
}
