package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
)

// A PUT of a subscriber, an account or a topic answers 201 Created when
// the tenant had none under the id — never, or no longer — and 200 when it
// replaced one; another tenant's record of the same id is not its own.
func TestAPutSaysWhetherItCreated(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	for path, members := range map[string]string{subscriberPath("u-olga"): "", "/v1/accounts/zarya": `,"members":[]`, topicPath("wh.sevilla"): ""} {
		body := `{"name":"first"` + members + `}`
		first := b.sendJSON(t, http.MethodPut, path, acmeSend, body)
		require.Equal(t, http.StatusCreated, first.status, "%s: %s", path, first.body)
		again := b.sendJSON(t, http.MethodPut, path, acmeSend, `{"name":"second"`+members+`}`)
		require.Equal(t, http.StatusOK, again.status, path)
		require.Contains(t, again.body, `"name":"second"`, path)
		require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, path+"?tenant=globex", adminKey, body).status, "%s: globex's own", path)
		require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, path, acmeSend, nil).status, path)
		require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, path, acmeSend, body).status, "%s: made again", path)
	}
}
