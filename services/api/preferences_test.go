package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/recipient"
)

var routeCategories = []recipient.Category{{Name: "alerts"}, {Name: "documents", Required: true}}

func (b *bundle) preferences(t *testing.T, path string) api.Preferences {
	t.Helper()
	got := b.do(t, http.MethodGet, path, acmeRead, nil)
	require.Equal(t, http.StatusOK, got.status, got.body)
	var p api.Preferences
	require.NoError(t, json.Unmarshal([]byte(got.body), &p))
	return p
}

// A subscriber's choices replace what she chose before, lie over the
// tenant's defaults, and never switch off a category a route requires:
// that is refused naming it, nothing written.
func TestPreferencesAreSetOverTheDefaultsAndKeepRequiredOnes(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{Categories: routeCategories})
	b.putSubscribers(t, "u.olga")
	require.Equal(t, http.StatusNotFound, b.sendJSON(t, http.MethodPut, subscriberPath("u-ghost")+"/preferences", acmeSend, `{}`).status)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, subscriberPath("u-ghost")+"/preferences", acmeRead, nil).status)

	defaults := b.sendJSON(t, http.MethodPut, "/v1/preferences/defaults", acmeSend, `{"alerts":{"whatsapp":false}}`)
	require.Equal(t, http.StatusOK, defaults.status, defaults.body)
	put := b.sendJSON(t, http.MethodPut, subscriberPath("u.olga")+"/preferences", acmeSend, `{"alerts":{"sms":false,"email":true}}`)
	require.Equal(t, http.StatusOK, put.status, put.body)
	put = b.sendJSON(t, http.MethodPut, subscriberPath("u.olga")+"/preferences", acmeSend, `{"alerts":{"sms":false}}`)
	require.Equal(t, http.StatusOK, put.status, put.body)

	p := b.preferences(t, subscriberPath("u.olga")+"/preferences")
	require.Equal(t, recipient.Choices{"alerts": {"sms": false}}, p.Categories, "replaced, not merged")
	require.Equal(t, recipient.Choices{"alerts": {"whatsapp": false}}, p.Defaults)
	require.Equal(t, []string{"documents"}, p.Required)
	require.Equal(t, map[string]bool{"email": true, "sms": false, "whatsapp": false, "webhook": true, "inbox": true, "push": true}, toStrings(p.Effective["alerts"]))
	require.True(t, p.Effective["documents"]["sms"], "named by the routes, chosen by nobody: on")

	off := b.sendJSON(t, http.MethodPut, subscriberPath("u.olga")+"/preferences", acmeSend, `{"alerts":{"sms":true},"documents":{"email":false}}`)
	require.Equal(t, http.StatusUnprocessableEntity, off.status, off.body)
	require.Contains(t, off.body, "categories.documents: is required and cannot be switched off")
	offDefault := b.sendJSON(t, http.MethodPut, "/v1/preferences/defaults", acmeSend, `{"documents":{"sms":false}}`)
	require.Equal(t, http.StatusUnprocessableEntity, offDefault.status, offDefault.body)
	require.Equal(t, recipient.Choices{"alerts": {"sms": false}}, b.preferences(t, subscriberPath("u.olga")+"/preferences").Categories,
		"nothing written")

	d := b.preferences(t, "/v1/preferences/defaults")
	require.Equal(t, recipient.Choices{"alerts": {"whatsapp": false}}, d.Categories)
	require.Empty(t, d.Subscriber)
	require.False(t, d.Effective["alerts"]["whatsapp"])
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, subscriberPath("u.olga")+"/preferences?tenant=acme", adminKey, nil).status)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, subscriberPath("u.olga")+"/preferences", globexRead, nil).status)
}

func toStrings[V any](m map[event.Channel]V) map[string]V {
	out := map[string]V{}
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}
