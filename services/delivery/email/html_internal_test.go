package email

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/localized"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// Every template a text file defines has its HTML twin in the same
// language, so no email falls back to English HTML under a text in
// Spanish, or goes out as text only, because a file was forgotten.
func TestEveryTextTemplateHasAnHTMLTwin(t *testing.T) {
	t.Parallel()
	c, err := NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	require.ElementsMatch(t, keys(c.templates), keys(c.html), "a language with text has HTML, and no other")
	require.Len(t, c.templates, 3, "en, es, ru")
	for locale, text := range c.templates {
		html := c.html[locale]
		var names []string
		for _, tmpl := range text.Templates() {
			if name, ok := strings.CutSuffix(tmpl.Name(), ".subject"); ok {
				names = append(names, name)
				require.NotNil(t, html.Lookup(name+".html"), "%s defines %s.subject but templates/html/%s.tmpl has no %s.html", locale, name, locale, name)
			}
		}
		require.Subset(t, names, slices.Concat(notification.DocumentTypes, []string{"low_stock", "po_reminder", "po_unconfirmed"}), locale)
	}
}

// A template without HTML in any language still sends: its text alone.
func TestComposeWithoutHTMLIsTextOnly(t *testing.T) {
	t.Parallel()
	c, err := NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	c.html = localized.HTMLTemplates{}
	m, err := c.Compose(notification.Delivery{
		ID: "ntf_2", Tenant: "acme", Template: "low_stock", Locale: "es",
		Recipient: notification.Recipient{Address: "almacen@acme.example"},
		Stock:     &event.Stock{SKU: "MILK-1L", Warehouse: "SEV-01", OnHand: "14"},
	}, Content{})
	require.NoError(t, err)
	require.Empty(t, m.HTML)
	require.Contains(t, m.Text, "El stock de MILK-1L en SEV-01 es bajo: 14 disponibles.")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
