package email_test

import (
	"strconv"
	"testing"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/notification"
)

// BenchmarkCompose is what composing one email costs the delivery path:
// the text part and the HTML part, with the PDF attached.
func BenchmarkCompose(b *testing.B) {
	c, d, content := benchCompose(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Compose(d, content); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkComposeDocument is what composing one document's emails costs:
// Herald's templates rendered once, then its five recipients' messages.
func BenchmarkComposeDocument(b *testing.B) {
	c, d, content := benchCompose(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		d.Order.ID = "PO-" + strconv.Itoa(n) // a document not rendered before
		for r := range 5 {
			d.Recipient.Name = "Buyer " + strconv.Itoa(r)
			if _, err := c.Compose(d, content); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchCompose is a composer and a purchase order to compose, its PDF
// attached.
func benchCompose(b *testing.B) (*email.Composer, notification.Delivery, email.Content) {
	b.Helper()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	if err != nil {
		b.Fatal(err)
	}
	content := email.Content{Attachments: []email.Attachment{{Filename: "PO-2026-0042.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.3")}}}
	return c, purchaseOrder("es", 2), content
}
