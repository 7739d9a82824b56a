package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// A key is answered in full once, when it is made; afterwards only what
// is kept of it, never its secret.
func TestAKeyIsShownOnceAndRevoked(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	heraldtest.RegisterTenants(t, b.nats.JS, "acme")
	created := b.sendJSON(t, http.MethodPost, "/v1/keys", adminKey, `{"tenant":"acme","name":"billing backend","scopes":["read"]}`)
	require.Equal(t, http.StatusCreated, created.status, created.body)
	var key struct {
		Key    string   `json:"key"`
		ID     string   `json:"id"`
		Tenant string   `json:"tenant"`
		Scopes []string `json:"scopes"`
	}
	require.NoError(t, json.Unmarshal([]byte(created.body), &key))
	id, err := apikey.Parse(key.Key)
	require.NoError(t, err)
	require.Equal(t, id, key.ID)
	require.Equal(t, "acme", key.Tenant)
	require.Equal(t, []string{"read"}, key.Scopes)
	secret := key.Key[strings.LastIndex(key.Key, "_")+1:]

	list := b.do(t, http.MethodGet, "/v1/keys?tenant=acme", adminKey, nil)
	require.Equal(t, http.StatusOK, list.status, list.body)
	require.Contains(t, list.body, `"id":"`+id+`"`)
	require.NotContains(t, list.body, secret)
	require.JSONEq(t, `{"keys":[]}`, b.do(t, http.MethodGet, "/v1/keys?tenant=globex", adminKey, nil).body)

	revoked := b.do(t, http.MethodDelete, "/v1/keys/"+id, adminKey, nil)
	require.Equal(t, http.StatusNoContent, revoked.status, revoked.body)
	list = b.do(t, http.MethodGet, "/v1/keys", adminKey, nil)
	require.Contains(t, list.body, `"revoked":`)
	require.NotContains(t, list.body, secret)
}

func TestKeysAreRefusedWithTheReason(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	heraldtest.RegisterTenants(t, b.nats.JS, "acme")
	for name, c := range map[string]struct {
		body   string
		status int
		says   string
	}{
		"an unregistered tenant":  {`{"tenant":"initech"}`, http.StatusUnprocessableEntity, `tenant \"initech\" is not registered`},
		"no tenant":               {`{"name":"x"}`, http.StatusUnprocessableEntity, "tenant: required"},
		"an admin key's tenant":   {`{"admin":true,"tenant":"acme"}`, http.StatusUnprocessableEntity, "an admin key belongs to no tenant"},
		"a tenant key with admin": {`{"tenant":"acme","scopes":["admin"]}`, http.StatusUnprocessableEntity, "cannot have the admin scope"},
		"an unknown scope":        {`{"tenant":"acme","scopes":["write"]}`, http.StatusUnprocessableEntity, `unknown scope \"write\"`},
	} {
		got := b.sendJSON(t, http.MethodPost, "/v1/keys", adminKey, c.body)
		require.Equal(t, c.status, got.status, "%s: %s", name, got.body)
		require.Contains(t, got.body, c.says, name)
	}
	require.JSONEq(t, `{"keys":[]}`, b.do(t, http.MethodGet, "/v1/keys", adminKey, nil).body, "no key was made")
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodDelete, "/v1/keys/abcdefghijkl", adminKey, nil).status)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodDelete, "/v1/keys/not-an-id", adminKey, nil).status)
	require.Equal(t, http.StatusUnprocessableEntity, b.do(t, http.MethodGet, "/v1/keys?tenant=a.b", adminKey, nil).status)
}
