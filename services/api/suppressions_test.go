package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
)

// An address suppressed through the API is listed, newest first, then
// lifted; lifting it again finds nothing.
func TestSuppressionsAreAddedListedAndLifted(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	added := b.sendJSON(t, http.MethodPost, "/v1/suppressions", acmeSend, `{"address":" Jane@Example.com ","detail":"asked by phone"}`)
	require.Equal(t, http.StatusCreated, added.status, added.body)
	var e api.Suppression
	require.NoError(t, json.Unmarshal([]byte(added.body), &e))
	require.Equal(t, api.Suppression{Tenant: "acme", Address: "jane@example.com", Reason: "manual", Detail: "asked by phone",
		Source: "api", CreatedAt: e.CreatedAt}, e, "the reason defaults to manual; the address is normalized")
	require.False(t, e.CreatedAt.IsZero())
	later := b.sendJSON(t, http.MethodPost, "/v1/suppressions", acmeSend, `{"address":"+4915112345678","reason":"hard_bounce","channel":"sms"}`)
	require.Equal(t, http.StatusCreated, later.status, later.body)
	require.Contains(t, later.body, `"channel":"sms"`)

	list := b.do(t, http.MethodGet, "/v1/suppressions", acmeRead, nil)
	require.Equal(t, http.StatusOK, list.status, list.body)
	var got struct{ Suppressions []api.Suppression }
	require.NoError(t, json.Unmarshal([]byte(list.body), &got))
	require.Len(t, got.Suppressions, 2)
	require.Equal(t, "+4915112345678", got.Suppressions[0].Address, "newest first")
	require.Equal(t, e, got.Suppressions[1])

	lifted := b.do(t, http.MethodDelete, "/v1/suppressions/"+url.PathEscape("JANE@example.com"), acmeSend, nil)
	require.Equal(t, http.StatusNoContent, lifted.status, lifted.body)
	again := b.do(t, http.MethodDelete, "/v1/suppressions/jane@example.com", acmeSend, nil)
	require.Equal(t, http.StatusNotFound, again.status, again.body)
	require.Equal(t, "application/problem+json", again.header.Get("Content-Type"))
	require.Contains(t, again.body, "jane@example.com is not suppressed")
	require.NotContains(t, b.do(t, http.MethodGet, "/v1/suppressions", acmeRead, nil).body, "jane@")
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodDelete, "/v1/suppressions/"+url.PathEscape("+4915112345678"), acmeSend, nil).status,
		"the SMS entry is not the one for every channel")
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/v1/suppressions/"+url.PathEscape("+4915112345678")+"?channel=sms", acmeSend, nil).status)
}

// A tenant's key sees and lifts its own tenant's suppressions only; an
// admin key names the tenant, as for webhook endpoints.
func TestSuppressionsAreTheTenantsOwn(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	added := b.sendJSON(t, http.MethodPost, "/v1/suppressions?tenant=globex", adminKey, `{"address":"ops@globex.example","reason":"complaint"}`)
	require.Equal(t, http.StatusCreated, added.status, added.body)
	require.Contains(t, added.body, `"tenant":"globex"`)

	require.JSONEq(t, `{"suppressions":[]}`, b.do(t, http.MethodGet, "/v1/suppressions", acmeRead, nil).body)
	require.Equal(t, http.StatusForbidden, b.do(t, http.MethodGet, "/v1/suppressions?tenant=globex", acmeRead, nil).status)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodDelete, "/v1/suppressions/ops@globex.example", acmeSend, nil).status,
		"looked for among acme's")
	require.Equal(t, http.StatusForbidden, b.do(t, http.MethodDelete, "/v1/suppressions/ops@globex.example?tenant=globex", acmeSend, nil).status)
	require.Equal(t, http.StatusForbidden, b.sendJSON(t, http.MethodPost, "/v1/suppressions?tenant=globex", acmeSend, `{"address":"x@y.example"}`).status)
	require.Equal(t, http.StatusUnprocessableEntity, b.do(t, http.MethodGet, "/v1/suppressions", adminKey, nil).status,
		"an admin key names the tenant")

	list := b.do(t, http.MethodGet, "/v1/suppressions", globexRead, nil)
	require.Contains(t, list.body, `"address":"ops@globex.example"`)
	require.Equal(t, list.body, b.do(t, http.MethodGet, "/v1/suppressions?tenant=globex", adminKey, nil).body)
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/v1/suppressions/ops@globex.example", globexSend, nil).status)
}

// What the store refuses is answered with its words, which name the
// field, and nothing is stored.
func TestSuppressionsAreRefusedWithTheReason(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	for body, says := range map[string]string{
		`{"address":"jane@example.com","reason":"bounced"}`: `reason: \"bounced\" is not one of hard_bounce, complaint, manual`,
		`{"address":"  "}`:                                           "address: required",
		`{"address":"jane@example.com\u001b[2J"}`:                    `address: \"jane@example.com\\x1b[2j\" is neither`,
		`{"address":"jane"}`:                                         "is neither an email address nor an E.164 phone number",
		`{"address":"+34600111222","channel":"email"}`:               "is not an email address (channel email)",
		`{"address":"jane@example.com","channel":"sms"}`:             "is not an E.164 phone number such as +34600111222 (channel sms)",
		`{"address":"jane@example.com","channel":"fax"}`:             `channel: \"fax\" is not one of email, sms, whatsapp`,
		`{"address":"jane@example.com","detail":"\u001b]0;x\u0007"}`: "detail: holds a control character (U+001B at byte 0)",
		`{"address":"jane@example.com","detail":"a\u0000b"}`:         "detail: holds a control character (U+0000 at byte 1)",
	} {
		got := b.sendJSON(t, http.MethodPost, "/v1/suppressions", acmeSend, body)
		require.Equal(t, http.StatusUnprocessableEntity, got.status, "%s: %s", body, got.body)
		require.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
		require.Contains(t, got.body, says, body)
	}
	require.JSONEq(t, `{"suppressions":[]}`, b.do(t, http.MethodGet, "/v1/suppressions", acmeRead, nil).body, "nothing was stored")
	require.Equal(t, http.StatusForbidden, b.sendJSON(t, http.MethodPost, "/v1/suppressions", acmeRead, `{"address":"a@b.example"}`).status,
		"adding needs the send scope")
}
