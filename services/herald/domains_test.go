package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/domains/dnstest"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// A domain added with the CLI is registered with the configured provider
// (SES, played by its fake) and stored as the api reads it. The platform's
// SES account is every tenant's, so Herald first asks its own proof — a
// TXT record for this tenant, looked up on the configured DNS server —
// then prints SES's records to publish; status asks again; list shows the
// last word; remove forgets it here only. Another tenant adding the same
// domain is told only to publish its own proof. Not parallel: it sets the
// environment.
func TestDomainsAddStatusListRemove(t *testing.T) {
	n, _ := vaultSetup(t)
	ses, dns := sestest.New(t), dnstest.New(t)
	config := filepath.Join(t.TempDir(), "herald.yaml")
	require.NoError(t, os.WriteFile(config, fmt.Appendf(nil, `email:
  providers:
    - {type: ses, region: eu-west-1, endpoint: %q, access_key_id_env: CLI_SES_ID, secret_access_key_env: CLI_SES_SECRET}
  dns_resolver: %s
`, ses.URL(), dns.Addr()), 0o600))
	t.Setenv("HERALD_CONFIG", config)
	t.Setenv("CLI_SES_ID", "AKIDEXAMPLE")
	t.Setenv("CLI_SES_SECRET", "cli-ses-secret")
	run := func(args ...string) string {
		t.Helper()
		out, err := herald(t, args...)
		require.NoError(t, err, out)
		return out
	}
	store, err := domains.Open(heraldtest.Context(t), n.JS)
	require.NoError(t, err)
	proof := func(tenant string) domains.Record {
		t.Helper()
		e, err := store.Get(heraldtest.Context(t), tenant, "acme.example")
		require.NoError(t, err)
		return domains.ProofRecord(e)
	}
	unproven := func(tenant string) string {
		return `^acme\.example \(tenant ` + tenant + `, ses\): pending — Herald has not found the TXT record _herald\.acme\.example yet: ` +
			`publish it, then check again; the provider's records follow once Herald finds it\n` +
			`TYPE +NAME +VALUE\nTXT +_herald\.acme\.example +` + regexp.QuoteMeta(proof(tenant).Value) + `\n$`
	}

	require.Equal(t, "[]\n", run("domains", "list", "--tenant", "acme", "--json"), "none is an empty list")
	added := run("domains", "add", "--tenant", "acme", "--domain", "ACME.example")
	require.Regexp(t, unproven("acme"), added)
	require.Zero(t, ses.Calls(), "SES is not asked before Herald finds the proof")
	dns.PublishTXT(proof("acme").Name, proof("acme").Value)

	checked := run("domains", "status", "--tenant", "acme", "--domain", "acme.example")
	tokens := ses.DKIMTokens("acme.example")
	require.Len(t, tokens, 3)
	table := `TYPE +NAME +VALUE\nTXT +_herald\.acme\.example +` + regexp.QuoteMeta(proof("acme").Value) + `\n`
	for _, tok := range tokens {
		table += `CNAME +` + tok + `\._domainkey\.acme\.example +` + tok + `\.dkim\.amazonses\.com\n`
	}
	require.Regexp(t, `^acme\.example \(tenant acme, ses\): pending — SES has not found the DKIM records yet \(PENDING\)\n`+table+`$`, checked)
	e, err := store.Get(heraldtest.Context(t), "acme", "acme.example")
	require.NoError(t, err)
	require.Equal(t, "ses", e.Provider)
	require.Equal(t, domains.Pending, e.Status)

	ses.VerifyDomain("acme.example")
	require.Regexp(t, `^acme\.example \(tenant acme, ses\): verified\n`+table+`$`, run("domains", "status", "--tenant", "acme", "--domain", "acme.example"))
	require.Regexp(t, `^DOMAIN +PROVIDER +STATUS +CHECKED +DETAIL\nacme\.example +ses +verified +\S+Z +-\n$`,
		run("domains", "list", "--tenant", "acme"))
	var listed []domains.Entry
	require.NoError(t, json.Unmarshal([]byte(run("domains", "list", "--tenant", "acme", "--json")), &listed))
	require.Len(t, listed, 1)
	require.Equal(t, domains.Verified, listed[0].Status)
	require.Equal(t, "[]\n", run("domains", "list", "--tenant", "globex", "--json"), "another tenant's are not listed")

	// globex adds acme's verified domain: it is told to prove it, as for
	// any domain, and SES is not asked.
	calls := ses.Calls()
	for _, command := range []string{"add", "status"} {
		out := run("domains", command, "--tenant", "globex", "--domain", "acme.example")
		require.Regexp(t, unproven("globex"), out, command)
	}
	require.NotEqual(t, proof("acme"), proof("globex"))
	require.Equal(t, calls, ses.Calls())

	require.Equal(t, "forgot acme.example for tenant acme; ses keeps it registered until it is removed there\n",
		run("domains", "remove", "--tenant", "acme", "--domain", "acme.example"))
	require.Equal(t, "[]\n", run("domains", "list", "--tenant", "acme", "--json"))
	require.NotNil(t, ses.DKIMTokens("acme.example"), "SES keeps it")

	calls = ses.Calls()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--tenant", "acme", "--domain", "acme.example"}, "acme.example: domains: no such sending domain"},
		{[]string{"remove", "--tenant", "acme", "--domain", "acme.example"}, "acme.example: domains: no such sending domain"},
		{[]string{"add", "--tenant", "acme", "--domain", "localhost"}, `domain: "localhost" is not a domain name such as mail.example.com (it has no dot)`},
	} {
		out, err := herald(t, append([]string{"domains"}, c.args...)...)
		require.ErrorContains(t, err, c.want, "%v: %s", c.args, out)
	}
	require.Equal(t, calls, ses.Calls(), "SES was not asked")

	// A provider's refusal is printed in its words. Added again, the
	// domain has a new proof to publish: forgetting it forgot the old one.
	run("domains", "add", "--tenant", "acme", "--domain", "acme.example")
	dns.PublishTXT(proof("acme").Name, proof("acme").Value)
	ses.Faults(func(int) sestest.Fault { return sestest.Unauthorized })
	out, err := herald(t, "domains", "status", "--tenant", "acme", "--domain", "acme.example")
	require.ErrorContains(t, err, "ses: permanent: authentication rejected: HTTP 401: UnrecognizedClientException", out)
	require.NotContains(t, err.Error(), "cli-ses-secret")
}
