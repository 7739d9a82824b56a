package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
)

// Every kind of bad input the recipient routes take is refused with a
// problem naming the field, and leaves nothing written: the record the
// request would have made is not there afterwards.
func TestBadRecipientInputIsRefusedNamingTheFieldNothingWritten(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{Categories: routeCategories})
	b.putSubscribers(t, "u-olga")
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, topicPath("t"), acmeSend, `{}`).status)
	bigData := `{"data":{"a":"` + strings.Repeat("x", 16<<10) + `"}}`
	manyIDs := `{"add":["u-olga"` + strings.Repeat(`,"u-olga"`, 10_000) + `]}`
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		field                    string
		// left is a GET that must still answer 404 (nothing written), or
		// "" when the write would have changed a record that stays as it was.
		left string
	}{
		{"unknown time zone", http.MethodPut, subscriberPath("s1"), `{"timezone":"Mars/Olympus"}`, 422, "timezone: ", subscriberPath("s1")},
		{"unknown locale", http.MethodPut, subscriberPath("s1"), `{"locale":"xx-QQ"}`, 422, "locale: ", subscriberPath("s1")},
		{"malformed email", http.MethodPut, subscriberPath("s1"), `{"email":"olga@"}`, 422, "email: ", subscriberPath("s1")},
		{"phone not E.164", http.MethodPut, subscriberPath("s1"), `{"phone":"8 916 123"}`, 422, "phone: ", subscriberPath("s1")},
		{"whatsapp not E.164", http.MethodPut, subscriberPath("s1"), `{"whatsapp":"olga"}`, 422, "whatsapp: ", subscriberPath("s1")},
		{"control character in a name", http.MethodPut, subscriberPath("s1"), `{"name":"Olga\r\nBcc: x@y"}`, 422, "name: ", subscriberPath("s1")},
		{"control character in the id", http.MethodPut, subscriberPath("s\x1b1"), `{}`, 422, "id: ", subscriberPath("s\x1b1")},
		{"control character in data", http.MethodPut, subscriberPath("s1"), `{"data":{"k":"\u001b[2J"}}`, 422, "data: ", subscriberPath("s1")},
		{"control character in a data key", http.MethodPut, subscriberPath("s1"), `{"data":{"\u0007":1}}`, 422, "data: a key", subscriberPath("s1")},
		{"data over 16 KiB", http.MethodPut, subscriberPath("s1"), bigData, 422, "data: ", subscriberPath("s1")},
		{"an id too long", http.MethodPut, subscriberPath(strings.Repeat("u", 129)), `{}`, 422, "id: ", subscriberPath(strings.Repeat("u", 129))},
		{"a field Herald does not know", http.MethodPut, subscriberPath("s1"), `{"emial":"a@b.example"}`, 422, "emial", subscriberPath("s1")},
		{"patch to an unknown time zone", http.MethodPatch, subscriberPath("u-olga"), `{"timezone":"Local"}`, 422, "timezone: ", ""},
		{"member not a subscriber", http.MethodPut, "/v1/accounts/a1", `{"members":[{"subscriber":"u-olga"},{"subscriber":"u-x"}]}`, 422,
			"members[1].subscriber: ", "/v1/accounts/a1"},
		{"a role that is not one", http.MethodPut, "/v1/accounts/a1", `{"members":[{"subscriber":"u-olga","roles":["sales team"]}]}`, 422,
			"members[0].roles: ", "/v1/accounts/a1"},
		{"control character in an account name", http.MethodPut, "/v1/accounts/a1", `{"name":"Z\u0000","members":[]}`, 422, "name: ", "/v1/accounts/a1"},
		{"control character in a topic name", http.MethodPut, topicPath("t1"), `{"name":"\u001b]0;x"}`, 422, "name: ", topicPath("t1")},
		{"too many ids", http.MethodPost, topicPath("t") + "/subscribers", manyIDs, 422, "add", ""},
		{"an added id not a subscriber", http.MethodPost, topicPath("t") + "/subscribers", `{"add":["u-olga","u-x"]}`, 422, "add[1]: ", ""},
		{"a channel Herald does not have", http.MethodPut, subscriberPath("u-olga") + "/preferences", `{"alerts":{"pigeon":false}}`, 422,
			"categories: ", ""},
		{"a required category off", http.MethodPut, subscriberPath("u-olga") + "/preferences", `{"documents":{"email":false}}`, 422,
			"categories.documents: ", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := b.sendJSON(t, c.method, c.path, acmeSend, c.body)
			require.Equal(t, c.status, got.status, got.body)
			require.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
			require.Contains(t, got.body, c.field)
			if c.left != "" {
				require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, c.left, acmeRead, nil).status, "nothing written")
			}
		})
	}
	require.Empty(t, b.topicMembers(t, "t", 10), "no member added")
	olga := b.do(t, http.MethodGet, subscriberPath("u-olga"), acmeRead, nil)
	require.NotContains(t, olga.body, "timezone", "the refused patch left her as she was")
	require.JSONEq(t, `{}`, jsonField(t, b.do(t, http.MethodGet, subscriberPath("u-olga")+"/preferences", acmeRead, nil).body, "categories"))
}

// An id is at most 128 bytes, however it is spelled: one byte over is
// refused, 128 of a two-byte letter's bytes (64 letters) pass.
func TestAnIDIsBoundedInBytes(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, subscriberPath(strings.Repeat("ж", 64)), acmeSend, `{}`).status)
	over := b.sendJSON(t, http.MethodPut, subscriberPath(strings.Repeat("ж", 64)+"x"), acmeSend, `{}`)
	require.Equal(t, http.StatusUnprocessableEntity, over.status)
	require.Contains(t, over.body, fmt.Sprintf("id: is longer than %d bytes", 128))
}
