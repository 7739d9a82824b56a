package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/apikey"
)

// An event whose supplier party names only an account, posted a moment
// after the account and its member were stored through the API, is
// answered the ids of the notifications the router then makes — the
// member's among them, as for the buyer written inline — and GET
// /v1/notifications/{id} finds each, the member's addressed to her.
func TestAnEventNamingAnAccountAnswersItsMembersNotifications(t *testing.T) {
	t.Parallel()
	p := startPipeline(t)
	keys := openKeys(t, p)
	send, _ := p.createKey(t, keys, apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send}})
	read, _ := p.createKey(t, keys, apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Read}})
	put := func(path, body string) {
		t.Helper()
		a := p.call(t, http.MethodPut, path, send, []byte(body), http.Header{"Content-Type": {"application/json"}})
		require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	}
	put("/v1/subscribers/u-olga", `{"name":"Ольга Петрова","email":"olga@zarya.example","locale":"ru"}`)
	put("/v1/accounts/zarya", `{"name":"Zarya","members":[{"subscriber":"u-olga","roles":["sales"]}]}`)

	order := sample(t, "order.created.json", func(m map[string]any) {
		data := m["data"].(map[string]any)
		data["order"].(map[string]any)["supplier"].(map[string]any)["account"] = "zarya"
		data["recipients"] = data["recipients"].([]any)[1:] // the buyer only
	})
	posted := p.postEvent(t, send, "po-2026-0042-zarya", order)
	require.Equal(t, http.StatusAccepted, posted.status, "%s", posted.body)
	var accepted struct{ Notifications []string }
	require.NoError(t, json.Unmarshal(posted.body, &accepted))
	require.Len(t, accepted.Notifications, 2, "the buyer's and the account's member's: %s", posted.body)

	var recipients []string
	for _, id := range accepted.Notifications {
		var n struct{ Recipient string }
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			a := p.call(t, http.MethodGet, "/v1/notifications/"+id, read, nil, nil)
			require.Equal(c, http.StatusOK, a.status, "%s: %s", id, a.body)
			require.NoError(c, json.Unmarshal(a.body, &n))
		}, 30*time.Second, 50*time.Millisecond)
		recipients = append(recipients, n.Recipient)
	}
	require.ElementsMatch(t, []string{"olga@zarya.example", "compras@frutasdelsur.example"}, recipients)
}
