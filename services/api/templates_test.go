package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/heraldtest"
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

// The review's preview: 157 bytes that loop 50⁴ times, writing the buyer
// each time (118 MB, answered 200 after seconds). Bounded, it is refused
// at once with a problem saying which bound it ran past, and nothing of
// what it wrote comes back.
func TestARunawayPreviewIsRefusedNamingTheBound(t *testing.T) {
	t.Parallel()
	b := setup(t, withTemplates(t))
	body := `{"name":"purchase_order","locale":"en","subject":"Order","text":"` +
		`{{range 50}}{{range 50}}{{range 50}}{{range 50}}{{$.Order.Buyer}}{{end}}{{end}}{{end}}{{end}}"}`
	got := b.sendJSON(t, http.MethodPost, "/v1/templates/preview", acmeRead, body)
	require.Equal(t, http.StatusUnprocessableEntity, got.status, "%.200s", got.body)
	require.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
	var problem struct{ Detail string }
	require.NoError(t, json.Unmarshal([]byte(got.body), &problem))
	require.Equal(t, "the template does not render: rendering en/purchase_order.body: template exceeded its work bound (20000 steps)", problem.Detail)
	require.Less(t, len(got.body), 1<<10, "none of what it wrote")
}

// Previewing renders a template, as setting one does: both count against
// the tenant's plan's rate, as publishing does.
func TestPreviewingCountsAgainstTheRateLimit(t *testing.T) {
	t.Parallel()
	cfg := withTemplates(t)
	cfg.Registry, cfg.Limiter = plans{"acme": "free"}, redisLimiter(t, heraldtest.RedisURL(t))
	b := setup(t, cfg)
	preview := `{"name":"purchase_order","locale":"en"}`
	for i := range 4 {
		got := b.sendJSON(t, http.MethodPost, "/v1/templates/preview", acmeRead, preview)
		require.Equal(t, http.StatusOK, got.status, "preview %d: %s", i+1, got.body)
		require.Equal(t, `"free";q=5;w=60`, got.header.Get("RateLimit-Policy"))
	}
	put := b.sendJSON(t, http.MethodPut, "/v1/templates/purchase_order/en", acmeSend, `{"subject":"Order {{.Order.ID}}","text":"Hello."}`)
	require.Equal(t, http.StatusOK, put.status, put.body)
	got := b.sendJSON(t, http.MethodPost, "/v1/templates/preview", acmeRead, preview)
	require.Equal(t, http.StatusTooManyRequests, got.status, got.body)
	require.Contains(t, got.body, "rate limit exceeded: plan free allows 5 requests a minute (burst 5)")
	require.Equal(t, http.StatusTooManyRequests, b.do(t, http.MethodPost, "/v1/events", acmeSend, sampleOrder(t)).status,
		"the same allowance as publishing")
}
