package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
)

// Test secrets, each long enough for its preview to show its last 4.
const (
	cliAPIKey    = "SG.cli-test-api-key-0123456789-abcdef"
	cliAWSSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYCLITESTKEY"
	cliPassword  = "a long smtp password for the cli"
	cliToken     = "tok3nCLItestZZZZ0000000000000beef"
)

// vaultSetup starts a server with the streams for the CLI, and makes a
// master key file.
func vaultSetup(t *testing.T) (n *heraldtest.NATS, keyFile string) {
	t.Helper()
	n = heraldtest.StartNATSWithStreams(t)
	t.Setenv("NATS_URL", n.Server.URL())
	t.Setenv("HERALD_CONFIG", "")
	t.Setenv("HERALD_MASTER_KEY", "")
	keyFile = filepath.Join(t.TempDir(), "master.key")
	_, err := vault.GenerateKeyFile(keyFile)
	require.NoError(t, err)
	return n, keyFile
}

// secretFile writes a secret as an editor would: with a newline after it.
func secretFile(t *testing.T, secret string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(path, []byte(secret+"\n"), 0o600))
	return path
}

// requireNoSecret fails when out shows any of the test secrets, without
// printing out (which would print the secret).
func requireNoSecret(t *testing.T, out string) {
	t.Helper()
	for _, s := range []string{cliAPIKey, cliAWSSecret, cliPassword, cliToken} {
		require.False(t, strings.Contains(out, s[:8]), "a secret is shown")
	}
}

// Stored with the CLI, a credential comes back from the store as the file
// held it (less its newline); the CLI shows its masked preview only.
// Not parallel: it sets the environment.
func TestProvidersSetListRemove(t *testing.T) {
	n, keyFile := vaultSetup(t)
	ctx := heraldtest.Context(t)
	var shown strings.Builder
	run := func(args ...string) string {
		t.Helper()
		out, err := herald(t, args...)
		require.NoError(t, err, out)
		shown.WriteString(out)
		return out
	}

	out := run("providers", "set", "--master-key-file", keyFile, "--tenant", "acme", "--name", "sendgrid-acme", "--type", "sendgrid",
		"--api-key-file", secretFile(t, cliAPIKey))
	key, err := vault.ReadKeyFile(keyFile)
	require.NoError(t, err)
	require.Equal(t, "stored sendgrid provider sendgrid-acme for tenant acme (secret ****cdef, sealed under key "+key.ID()+")\n", out)
	run("providers", "set", "--master-key-file", keyFile, "--tenant", "acme", "--name", "ses-eu", "--type", "ses",
		"--region", "eu-west-1", "--access-key-id", "AKIACLITEST", "--secret-access-key-file", secretFile(t, cliAWSSecret))
	run("providers", "set", "--master-key-file", keyFile, "--tenant", "acme", "--name", "relay", "--type", "smtp",
		"--host", "smtp.acme.example", "--port", "2525", "--username", "herald", "--password-file", secretFile(t, cliPassword), "--tls", "implicit")
	run("providers", "set", "--master-key-file", keyFile, "--tenant", "acme", "--name", "twilio-acme", "--type", "twilio",
		"--account-sid", "AC0123456789abcdef0123456789abcdef", "--auth-token-file", secretFile(t, cliToken), "--from", "+15017122661")

	keys, err := vault.NewKeyring(key)
	require.NoError(t, err)
	store, err := vault.Open(ctx, n.JS, keys)
	require.NoError(t, err)
	sg, err := store.Get(ctx, "acme", "sendgrid-acme")
	require.NoError(t, err)
	require.True(t, sg.APIKey.Reveal() == cliAPIKey, "the key as the file held it, less its newline")
	ses, err := store.Get(ctx, "acme", "ses-eu")
	require.NoError(t, err)
	require.True(t, ses.SecretAccessKey.Reveal() == cliAWSSecret && ses.AccessKeyID.Reveal() == "AKIACLITEST" && ses.Region == "eu-west-1")
	relay, err := store.Get(ctx, "acme", "relay")
	require.NoError(t, err)
	require.True(t, relay.Password.Reveal() == cliPassword)
	require.Equal(t, [...]any{"smtp.acme.example", 2525, "herald", "implicit"}, [...]any{relay.Host, relay.Port, relay.Username, relay.TLS})
	tw, err := store.Get(ctx, "acme", "twilio-acme")
	require.NoError(t, err)
	require.True(t, tw.AuthToken.Reveal() == cliToken)
	require.Equal(t, [...]string{"AC0123456789abcdef0123456789abcdef", "+15017122661"}, [...]string{tw.AccountSID, tw.From})

	out = run("providers", "list", "--tenant", "acme")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 6, out)
	require.Regexp(t, `^NAME +TYPE +SETTINGS +SECRET +KEY +UPDATED$`, lines[0])
	require.Regexp(t, `^relay +smtp +host=smtp.acme.example:2525 username=herald tls=implicit +\*\*\*\* cli +`+key.ID(), lines[1])
	require.Regexp(t, `^sendgrid-acme +sendgrid +- +\*\*\*\*cdef +`+key.ID(), lines[2])
	require.Regexp(t, `^ses-eu +ses +region=eu-west-1 +\*\*\*\*TKEY +`+key.ID(), lines[3])
	require.Regexp(t, `^twilio-acme +twilio +account=AC0123456789abcdef0123456789abcdef from=\+15017122661 +\*\*\*\*beef +`+key.ID(), lines[4])
	require.Equal(t, "4 providers", lines[5])

	var listed []vault.Info
	require.NoError(t, json.Unmarshal([]byte(run("providers", "list", "--tenant", "acme", "--json")), &listed))
	require.Len(t, listed, 4)
	require.Equal(t, "****cdef", listed[1].Preview)
	require.Equal(t, "[]\n", run("providers", "list", "--tenant", "globex", "--json"), "none is an empty list")

	require.Equal(t, "removed provider ses-eu of tenant acme\n", run("providers", "remove", "--tenant", "acme", "--name", "ses-eu"))
	_, err = herald(t, "providers", "remove", "--tenant", "acme", "--name", "ses-eu")
	require.EqualError(t, err, `tenant acme has no provider named "ses-eu"`)
	require.Contains(t, run("providers", "list", "--tenant", "acme"), "\n3 providers\n")
	requireNoSecret(t, shown.String())
}

// Secrets come from files only; what cannot be stored is refused before
// anything is, with errors that say which flag to use and quote no secret.
// Not parallel: it sets the environment.
func TestProvidersSetRefuses(t *testing.T) {
	_, keyFile := vaultSetup(t)
	apiKeyFile := secretFile(t, cliAPIKey)
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	for _, c := range []struct {
		args []string
		want string
		name string
	}{
		{[]string{"--type", "sendgrid", "--api-key", cliAPIKey}, "unknown flag: --api-key", ""},
		{[]string{"--type", "smtp", "--host", "h", "--username", "u", "--password", cliPassword}, "unknown flag: --password", ""},
		{[]string{"--type", "sendgrid"}, "api_key: is required for sendgrid\n(ses takes", ""},
		{[]string{"--type", "sendgrid", "--api-key-file", empty}, "--api-key-file: " + empty + " is empty", ""},
		{[]string{"--type", "sendgrid", "--api-key-file", apiKeyFile, "--region", "eu-west-1"}, "region: is not used by sendgrid", ""},
		{[]string{"--type", "mailgun", "--api-key-file", apiKeyFile}, `type: "mailgun" is not a provider type`, ""},
		{[]string{"--type", "sendgrid", "--api-key-file", apiKeyFile}, `name: "sendgrid" is the platform's provider of that type`, "sendgrid"},
		{[]string{"--type", "twilio", "--account-sid", "AC0123456789abcdef0123456789abcdef", "--auth-token-file", apiKeyFile, "--from", "+15017122661"},
			`name: "textdir" is the platform's provider of that type`, "textdir"},
		{[]string{"--type", "twilio", "--auth-token-file", apiKeyFile}, "from, messaging_service_sid: one is required for twilio", ""},
	} {
		args := append([]string{"providers", "set", "--master-key-file", keyFile, "--tenant", "acme", "--name", "p"}, c.args...)
		if c.name != "" {
			args = append(args, "--name", c.name)
		}
		out, err := herald(t, args...)
		require.ErrorContains(t, err, c.want)
		requireNoSecret(t, out+err.Error())
	}

	_, err := herald(t, "providers", "set", "--tenant", "acme", "--name", "p", "--type", "sendgrid", "--api-key-file", apiKeyFile)
	require.EqualError(t, err, "vault.master_key_env: HERALD_MASTER_KEY is not set: vault: no master key: set HERALD_MASTER_KEY (base64 of 32 bytes) or --master-key-file")
	out, err := herald(t, "providers", "list", "--tenant", "acme")
	require.NoError(t, err, "listing needs no key")
	require.Equal(t, "NAME  TYPE  SETTINGS  SECRET  KEY  UPDATED\n0 providers\n", out, "nothing was stored")
}
