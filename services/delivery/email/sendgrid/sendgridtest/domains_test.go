package sendgridtest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
)

func postTo(t *testing.T, url, auth, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// Authenticating a domain answers 201 with its id and DNS records;
// validating it answers each record's result, with a null reason once
// valid; an unknown id is 404 in SendGrid's error body.
func TestDomainWire(t *testing.T) {
	t.Parallel()
	fake := sendgridtest.New(t, key)
	domains := fake.URL() + "/v3/whitelabel/domains"

	resp, body := postTo(t, domains, "Bearer SG.other", `{"domain":"acme.example","automatic_security":true}`)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)

	resp, body = postTo(t, domains, "Bearer "+key, `{"domain":"acme.example","automatic_security":true}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	require.JSONEq(t, `{"id":1,"user_id":1446226,"subdomain":"em1001","domain":"acme.example","username":"herald-test","ips":[],
		"custom_spf":false,"default":false,"legacy":false,"automatic_security":true,"valid":false,"dns":{
		"mail_cname":{"valid":false,"type":"cname","host":"em1001.acme.example","data":"u1446226.wl001.sendgrid.net"},
		"dkim1":{"valid":false,"type":"cname","host":"s1._domainkey.acme.example","data":"s1.domainkey.u1446226.wl001.sendgrid.net"},
		"dkim2":{"valid":false,"type":"cname","host":"s2._domainkey.acme.example","data":"s2.domainkey.u1446226.wl001.sendgrid.net"}}}`, body)

	fake.VerifyDomain("acme.example")
	resp, body = postTo(t, domains+"/1/validate", "Bearer "+key, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.JSONEq(t, `{"id":1,"valid":true,"validation_results":{"mail_cname":{"valid":true,"reason":null},
		"dkim1":{"valid":true,"reason":null},"dkim2":{"valid":true,"reason":null}}}`, body)

	resp, body = postTo(t, domains+"/7/validate", "Bearer "+key, "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.JSONEq(t, `{"errors":[{"message":"authenticated domain not found","field":null,"help":null}]}`, body)
	require.Equal(t, []sendgridtest.Domain{{ID: 1, Domain: "acme.example", AutomaticSecurity: true, Valid: true}}, fake.Domains())
	require.Empty(t, fake.Received(), "no message was sent")
}
