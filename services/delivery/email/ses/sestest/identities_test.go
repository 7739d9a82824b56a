package sestest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// get reads a path without the SDK, to see the wire answer.
func get(t *testing.T, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", signedBy)
	resp, err := heraldtest.HTTPClient(t).Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func decode(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

// CreateEmailIdentity and GetEmailIdentity as SES answers them: the DKIM
// attributes with three tokens, AlreadyExistsException and
// NotFoundException named in X-Amzn-ErrorType.
func TestIdentityWire(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	const identities = "/v2/email/identities"

	resp := post(t, srv.URL()+identities, signedBy, `{"EmailIdentity":"acme.example"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	created := decode(t, resp)
	require.Equal(t, "DOMAIN", created["IdentityType"])
	require.Equal(t, false, created["VerifiedForSendingStatus"])
	dkim := created["DkimAttributes"].(map[string]any)
	require.Equal(t, "PENDING", dkim["Status"])
	require.Len(t, dkim["Tokens"], 3)
	require.Equal(t, srv.DKIMTokens("acme.example")[0], dkim["Tokens"].([]any)[0])

	resp = post(t, srv.URL()+identities, signedBy, `{"EmailIdentity":"acme.example"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "AlreadyExistsException", resp.Header.Get("X-Amzn-ErrorType"))

	srv.VerifyDomain("acme.example")
	resp = get(t, srv.URL()+identities+"/acme.example")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	read := decode(t, resp)
	require.Equal(t, true, read["VerifiedForSendingStatus"])
	require.Equal(t, "SUCCESS", read["VerificationStatus"])
	require.Equal(t, "SUCCESS", read["DkimAttributes"].(map[string]any)["Status"])

	resp = get(t, srv.URL()+identities+"/globex.example")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "NotFoundException", resp.Header.Get("X-Amzn-ErrorType"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.JSONEq(t, `{"message":"Email identity globex.example does not exist."}`, string(body))

	resp = post(t, srv.URL()+identities, "", `{"EmailIdentity":"globex.example"}`)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "unsigned")
	resp = get(t, srv.URL()+identities+"/acme.example/policies")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("X-Amzn-ErrorType"), "UnknownOperation"))
	require.Nil(t, srv.DKIMTokens("globex.example"))
	require.Empty(t, srv.Received(), "no message was sent")
}
