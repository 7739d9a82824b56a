package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
)

// putSubscribers stores subscribers under ids for acme.
func (b *bundle) putSubscribers(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		put := b.sendJSON(t, http.MethodPut, subscriberPath(id), acmeSend, `{"email":"x@zarya.example"}`)
		require.Equal(t, http.StatusCreated, put.status, put.body)
	}
}

// An account's members are the tenant's subscribers in roles: one that is
// not is refused by name and nothing written; accounts are listed a page
// at a time and removed.
func TestAnAccountIsStoredListedAndRemoved(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	b.putSubscribers(t, "u-olga", "u.ivan")
	ghost := b.sendJSON(t, http.MethodPut, "/v1/accounts/zarya", acmeSend,
		`{"name":"Zarya","members":[{"subscriber":"u-olga","roles":["sales"]},{"subscriber":"u-ghost"}]}`)
	require.Equal(t, http.StatusUnprocessableEntity, ghost.status, ghost.body)
	require.Contains(t, ghost.body, `members[1].subscriber: \"u-ghost\" is not a subscriber`)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/accounts/zarya", acmeRead, nil).status, "nothing written")

	put := b.sendJSON(t, http.MethodPut, "/v1/accounts/zarya", acmeSend,
		`{"name":"Zarya","members":[{"subscriber":"u-olga","roles":["Sales","accounts_payable"]},{"subscriber":"u.ivan"}]}`)
	require.Equal(t, http.StatusCreated, put.status, put.body)
	var a api.Account
	require.NoError(t, json.Unmarshal([]byte(b.do(t, http.MethodGet, "/v1/accounts/zarya", acmeRead, nil).body), &a))
	require.Equal(t, []api.AccountMember{{Subscriber: "u-olga", Roles: []string{"sales", "accounts_payable"}}, {Subscriber: "u.ivan"}}, a.Members)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/accounts/zarya", globexRead, nil).status)

	for i := range 4 {
		require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, fmt.Sprintf("/v1/accounts/a%d", i), acmeSend, `{"members":[]}`).status)
	}
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5)
		got := b.do(t, http.MethodGet, "/v1/accounts?limit=2&cursor="+url.QueryEscape(cursor), acmeRead, nil)
		require.Equal(t, http.StatusOK, got.status, got.body)
		var page struct {
			Accounts   []api.Account
			NextCursor string `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal([]byte(got.body), &page))
		require.LessOrEqual(t, len(page.Accounts), 2)
		for _, a := range page.Accounts {
			seen = append(seen, a.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	require.ElementsMatch(t, []string{"zarya", "a0", "a1", "a2", "a3"}, seen, "every account once")
	require.JSONEq(t, `{"accounts":[]}`, b.do(t, http.MethodGet, "/v1/accounts", globexRead, nil).body)
	bad := b.do(t, http.MethodGet, "/v1/accounts?cursor="+url.QueryEscape("globex.*"), acmeRead, nil)
	require.Equal(t, http.StatusUnprocessableEntity, bad.status)
	require.Contains(t, bad.body, "cursor: ")

	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/v1/accounts/zarya", acmeSend, nil).status)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/accounts/zarya", acmeRead, nil).status)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, subscriberPath("u-olga"), acmeRead, nil).status, "its members stay")
}
