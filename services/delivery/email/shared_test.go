package email_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// Herald renders its templates once per document and puts each
// recipient's name and unsubscribe link into that rendering: the message
// must be byte for byte what rendering for the recipient alone makes — for
// every template and language, names that are markup, quotes, pluses,
// newlines or empty, with and without a link and a download link.
func TestSharedRenderingsAreWhatRenderingWouldBe(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	names := []string{"Olga Petrova", "", `<script>alert("x")</script>`, "O'Brien & Sons +1", "Ivan\n\n\nIvanov  ",
		"Ольга «Заря»", "\x00nul", "HeraldRecipientName", "https://herald.invalid/unsubscribe-8d2f41"}
	links := []string{"", "https://herald.example.com/v1/unsubscribe/eyJ0IjoiYWNtZSJ9.c2ln", `https://h.example/u?a=1&b="2"`}
	prefs := []string{"", "https://herald.example.com/p/YWNtZQp1LW9sZ2E.c2lnbmF0dXJl", `https://h.example/p?a=1&b="2"`,
		"https://herald.invalid/preferences-8d2f41"}
	for _, template := range shippedTemplates {
		for _, locale := range []string{"en", "es", "ru", "es-MX", "de"} {
			for _, link := range links {
				for _, linked := range []bool{false, true} {
					for _, name := range names {
						d := templated(template, locale, 2, name)
						content := email.Content{Unsubscribe: link, Attachments: []email.Attachment{{Filename: "x.pdf"}}}
						if linked {
							content = email.Content{Unsubscribe: link, Link: "https://herald.example.com/v1/documents/x?sig=a&b",
								LinkExpires: time.Date(2026, 12, 9, 0, 0, 0, 0, time.UTC)}
						}
						// A subscriber's preference link, with or without the unsubscribe link, and
						// one with characters to escape.
						content.Preferences = prefs[(len(name)+len(link))%len(prefs)]
						requireSharedIsAlone(t, c, d, content)
					}
				}
			}
		}
	}
}

// Each recipient's name and link are put in without searching the
// rendering again, tidying the text again or running html/template,
// unless they need it: a name with space at an edge or across lines is
// tidied, a name or link with characters to escape escaped, as rendering
// for the recipient alone would — and a link that holds the name's
// placeholder is left as written.
func TestSharedRenderingsTidyAndEscapeOnlyWhatNeedsIt(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	names := []string{"Olga", " Olga", "Olga ", "Olga\t", "Olga\u00a0", "\u2003Olga Petrova", "Olga\r", "Olga\nPetrova", "Olga\n\n\nPetrova", "Olga \nPetrova", "\n", " ",
		"Olga\tPetrova", "Olga\u0085", "\xffOlga\xfe", "Olga+1", "%41"}
	links := []string{"https://herald.example.com/v1/unsubscribe/eyJ0.c2ln ", " https://h.example/u", "https://h.example/u/%41",
		"https://h.example/u/%4", "HTTPS://H.EXAMPLE/U", "javascript:alert(1)", "https://h.example/u?a=b+c", "https://h.example/u\n",
		"https://h.example/u/HeraldRecipientName8d2f41", "https://h.example/ü"}
	for _, template := range shippedTemplates {
		for _, locale := range []string{"en", "es", "ru"} {
			for _, link := range links {
				for _, name := range names {
					d := templated(template, locale, 1, name)
					content := email.Content{Unsubscribe: link}
					requireSharedIsAlone(t, c, d, content)
					// The same values as the preference link, alone and beside an
					// unsubscribe link.
					requireSharedIsAlone(t, c, d, email.Content{Preferences: link})
					requireSharedIsAlone(t, c, d, email.Content{Unsubscribe: "https://herald.example.com/v1/unsubscribe/x.y", Preferences: link})
				}
			}
		}
	}
}

// templated is a delivery of Herald's template to name, in locale: the
// purchase order at revision, as the template's document (a workflow's
// template keeps the purchase order) — or, for low_stock, a stock alert.
func templated(template, locale string, revision int, name string) notification.Delivery {
	d := purchaseOrder(locale, revision)
	d.Template, d.Recipient.Name = template, name
	switch {
	case template == "low_stock":
		d.Document, d.Order = nil, nil
		d.Stock = &event.Stock{SKU: "MILK-1L", Warehouse: "SEV-01", OnHand: "12", ReorderPoint: "40", Unit: "pcs"}
	case !slices.Contains(workflowTemplates, template):
		d.Document = &notification.Document{Type: template}
	}
	return d
}

// requireSharedIsAlone checks that composing d from a shared rendering
// makes the message rendering it alone makes, but for its date.
func requireSharedIsAlone(t *testing.T, c *email.Composer, d notification.Delivery, content email.Content) {
	t.Helper()
	shared, err := c.Compose(d, content)
	require.NoError(t, err)
	alone, err := c.ComposeAlone(d, content)
	require.NoError(t, err)
	shared.Date, alone.Date = time.Time{}, time.Time{}
	require.Equal(t, alone, shared, "%s %s name %q link %q preferences %q", d.Template, d.Locale, d.Recipient.Name, content.Unsubscribe, content.Preferences)
}
