package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/delivery/email"
)

func withTemplates(t *testing.T) api.Config {
	t.Helper()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	return api.Config{Templates: c}
}

// A tenant sets its own template — refused while it does not render,
// naming the part — previews it, lists it, and goes back to Herald's.
func TestTemplatesAreCheckedStoredPreviewedAndRemoved(t *testing.T) {
	t.Parallel()
	b := setup(t, withTemplates(t))
	broken := b.sendJSON(t, http.MethodPut, "/v1/templates/purchase_order/es", acmeSend,
		`{"subject":"Pedido {{.Order.ID","text":"Hola."}`)
	require.Equal(t, http.StatusUnprocessableEntity, broken.status, broken.body)
	require.Contains(t, broken.body, "the template does not render: subject, text:")
	unknown := b.sendJSON(t, http.MethodPut, "/v1/templates/quote/es", acmeSend, `{"subject":"Presupuesto","text":"Hola."}`)
	require.Equal(t, http.StatusUnprocessableEntity, unknown.status, unknown.body)
	require.Contains(t, unknown.body, `\"quote\" is not a template Herald has`)
	for body, says := range map[string]string{
		`{"subject":"Pedido\r\nBcc: all@zarya.example","text":"Hola."}`: "subject: holds a control character (U+000D at byte 6)",
		`{"subject":"Pedido\u001b]0;pwned\u0007","text":"Hola."}`:       "subject: holds a control character (U+001B at byte 6)",
		`{"subject":"Pedido","text":"Hola.\u001b[2J"}`:                  "text: holds a control character (U+001B at byte 5)",
		`{"subject":"Pedido","text":"Hola.","html":"<p>\u0000</p>"}`:    "html: holds a control character (U+0000 at byte 3)",
	} {
		refused := b.sendJSON(t, http.MethodPut, "/v1/templates/purchase_order/es", acmeSend, body)
		require.Equal(t, http.StatusUnprocessableEntity, refused.status, refused.body)
		require.Contains(t, refused.body, says)
	}
	laidOut := b.sendJSON(t, http.MethodPost, "/v1/templates/preview", acmeRead,
		`{"name":"purchase_order","locale":"es","subject":"Pedido","text":"Hola,\r\n\tOlga.\n","html":"<p>\n\tHola\n</p>"}`)
	require.Equal(t, http.StatusOK, laidOut.status, "a body's tabs and line breaks are its layout: %s", laidOut.body)

	// Tried before it is stored.
	tried := b.sendJSON(t, http.MethodPost, "/v1/templates/preview", acmeRead,
		`{"name":"purchase_order","locale":"es","subject":"ACME {{.Order.ID}}","text":"Hola {{.Recipient.Name}}.","html":"<p>{{.Order.Buyer}}</p>"}`)
	require.Equal(t, http.StatusOK, tried.status, tried.body)
	var p api.Preview
	require.NoError(t, json.Unmarshal([]byte(tried.body), &p))
	require.Equal(t, api.Preview{Subject: "ACME PO-2026-0042", Text: "Hola Olga Petrova.\n", HTML: "<p>Frutas del Sur S.L.</p>", Source: "request"}, p)

	put := b.sendJSON(t, http.MethodPut, "/v1/templates/purchase_order/ES", acmeSend, `{"subject":"ACME {{.Order.ID}}","text":"Hola."}`)
	require.Equal(t, http.StatusOK, put.status, put.body)
	require.Contains(t, put.body, `"locale":"es"`)
	stored := b.sendJSON(t, http.MethodPost, "/v1/templates/preview", acmeRead, `{"name":"purchase_order","locale":"es"}`)
	require.Contains(t, stored.body, `"source":"tenant"`)
	require.Contains(t, stored.body, `"subject":"ACME PO-2026-0042"`)
	herald := b.sendJSON(t, http.MethodPost, "/v1/templates/preview", acmeRead, `{"name":"purchase_order","locale":"ru"}`)
	require.Contains(t, herald.body, `"source":"herald"`)
	require.Contains(t, herald.body, "Заказ на закупку")

	list := b.do(t, http.MethodGet, "/v1/templates", acmeRead, nil)
	require.Contains(t, list.body, `"name":"purchase_order"`)
	require.JSONEq(t, `{"templates":[]}`, b.do(t, http.MethodGet, "/v1/templates?tenant=globex", adminKey, nil).body, "another tenant's are its own")
	require.Equal(t, http.StatusForbidden, b.do(t, http.MethodGet, "/v1/templates?tenant=globex", acmeRead, nil).status)

	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/v1/templates/purchase_order/es", acmeSend, nil).status)
	gone := b.do(t, http.MethodGet, "/v1/templates/purchase_order/es", acmeRead, nil)
	require.Equal(t, http.StatusNotFound, gone.status)
	require.Contains(t, gone.body, "Herald's own is used")
}

func TestTemplatesNeedARenderer(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	require.Equal(t, http.StatusServiceUnavailable, b.do(t, http.MethodGet, "/v1/templates", acmeRead, nil).status)
}
