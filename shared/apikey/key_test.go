package apikey_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// A key as Create makes them; its secret is 52 characters, the last of
// which carries one bit of the secret and four unused bits.
const good = "hk_k7q2m4xvrpta_" + "3tgd5kwzqh2mxjcv7ynrbfape6ulos4wdgiq3zk5tmvhejcnrxbq"

func TestParseIsStrict(t *testing.T) {
	t.Parallel()
	id, err := apikey.Parse(good)
	require.NoError(t, err)
	require.Equal(t, "k7q2m4xvrpta", id)

	secret := good[len("hk_k7q2m4xvrpta_"):]
	for name, s := range map[string]string{
		"empty":                     "",
		"no prefix":                 strings.TrimPrefix(good, "hk_"),
		"other prefix":              "sk_" + strings.TrimPrefix(good, "hk_"),
		"upper case":                strings.ToUpper(good),
		"id too short":              "hk_k7q2m4xvrpt_" + secret,
		"id too long":               "hk_k7q2m4xvrptaa_" + secret,
		"id outside the alphabet":   "hk_k7q2m4xvrpt0_" + secret,
		"secret too short":          good[:len(good)-1],
		"secret too long":           good + "a",
		"secret outside alphabet":   good[:len(good)-2] + "1" + good[len(good)-1:],
		"unused bits set":           good[:len(good)-1] + "r", // 'q' and 'r' differ in an unused bit only
		"separator missing":         "hk_k7q2m4xvrpta" + secret + "a",
		"padded":                    good[:len(good)-4] + "====",
		"space around":              " " + good,
		"another separator in":      "hk_k7q2m4xvrpta_" + secret[:20] + "_" + secret[21:],
		"the id alone":              "hk_k7q2m4xvrpta",
		"a bearer header, whole":    "Bearer " + good,
		"the secret without its id": "hk__" + secret,
	} {
		_, err := apikey.Parse(s)
		require.ErrorIs(t, err, apikey.ErrInvalid, name)
	}
}

func TestScopes(t *testing.T) {
	t.Parallel()
	sendOnly := apikey.Key{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send}}
	require.True(t, sendOnly.Allows(apikey.Send))
	require.False(t, sendOnly.Allows(apikey.Read))
	require.False(t, sendOnly.Allows(apikey.Admin))
	require.True(t, sendOnly.Reaches("acme"))
	require.False(t, sendOnly.Reaches("globex"))
	require.False(t, sendOnly.Reaches(""))

	admin := apikey.Key{Scopes: []apikey.Scope{apikey.Admin}}
	for _, s := range []apikey.Scope{apikey.Send, apikey.Read, apikey.Admin} {
		require.True(t, admin.Allows(s), s)
	}
	require.True(t, admin.Reaches("acme"))
	require.True(t, admin.Reaches("globex"))

	scopes, err := apikey.ParseScopes("send, read")
	require.NoError(t, err)
	require.Equal(t, []apikey.Scope{apikey.Send, apikey.Read}, scopes)
	_, err = apikey.ParseScopes("send,write")
	require.ErrorIs(t, err, apikey.ErrBadSpec)
	require.ErrorContains(t, err, `unknown scope "write"`)
}

func ExampleParse() {
	id, err := apikey.Parse("hk_k7q2m4xvrpta_3tgd5kwzqh2mxjcv7ynrbfape6ulos4wdgiq3zk5tmvhejcnrxbq")
	fmt.Println(id, err)
	_, err = apikey.Parse("Bearer hk_k7q2m4xvrpta_3tgd5kwzqh2mxjcv7ynrbfape6ulos4wdgiq3zk5tmvhejcnrxbq")
	fmt.Println(err)
	// Output:
	// k7q2m4xvrpta <nil>
	// apikey: not an API key
}
