package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/webhook"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
)

// Rotation re-encrypts every tenant's credentials under the new key, after
// which the new key alone opens them; run again, it has nothing to do.
// Not parallel: it sets the environment.
func TestVaultRotate(t *testing.T) {
	n, oldFile := vaultSetup(t)
	ctx := heraldtest.Context(t)
	old, err := vault.ReadKeyFile(oldFile)
	require.NoError(t, err)
	oldText, err := os.ReadFile(oldFile)
	require.NoError(t, err)
	t.Setenv("HERALD_MASTER_KEY", string(oldText))
	for i, tenant := range []string{"acme", "acme", "globex"} {
		_, err := herald(t, "providers", "set", "--tenant", tenant, "--name", fmt.Sprintf("sendgrid-%d", i), "--type", "sendgrid",
			"--api-key-file", secretFile(t, fmt.Sprintf("%s-%d", cliAPIKey, i)))
		require.NoError(t, err)
	}
	newFile := filepath.Join(t.TempDir(), "new.key")
	next, err := vault.GenerateKeyFile(newFile)
	require.NoError(t, err)

	_, err = herald(t, "vault", "rotate", "--new-key-file", oldFile)
	require.EqualError(t, err, "--new-key-file holds the current master key ("+old.ID()+") already: give a new key")

	out, err := herald(t, "vault", "rotate", "--new-key-file", newFile)
	require.NoError(t, err, out)
	require.True(t, strings.HasSuffix(out, "re-encrypted 3 of 3 credentials under key "+next.ID()+" (0 were under it already)\n"+
		"re-encrypted 0 of 0 webhook signing secrets under key "+next.ID()+" (0 were under it already)\n"+
		"every credential and signing secret is sealed under key "+next.ID()+": key ["+old.ID()+"] may go once no service holds it any more\n"), out)

	keys, err := vault.NewKeyring(next)
	require.NoError(t, err)
	store, err := vault.Open(ctx, n.JS, keys)
	require.NoError(t, err)
	for i, tenant := range []string{"acme", "acme", "globex"} {
		c, err := store.Get(ctx, tenant, fmt.Sprintf("sendgrid-%d", i))
		require.NoError(t, err, "the new key alone opens it")
		require.True(t, c.APIKey.Reveal() == fmt.Sprintf("%s-%d", cliAPIKey, i))
	}

	t.Setenv("HERALD_MASTER_KEY", "")
	out, err = herald(t, "vault", "rotate", "--master-key-file", oldFile, "--new-key-file", newFile)
	require.NoError(t, err)
	require.Contains(t, out, "re-encrypted 0 of 3 credentials under key "+next.ID()+" (3 were under it already)\n")
}

// Rotation re-encrypts webhook signing secrets too — an endpoint's current
// one and a rotated-out one still in its grace, while one past its grace is
// dropped — so that with the old key gone the webhooks Herald signs still
// verify, by the Standard Webhooks library, under the secrets the tenant
// was shown. Not parallel: it sets the environment.
func TestVaultRotateResealsWebhookSigningSecrets(t *testing.T) {
	n, oldFile := vaultSetup(t)
	ctx := heraldtest.Context(t)
	old, err := vault.ReadKeyFile(oldFile)
	require.NoError(t, err)
	add := func(tenant string) (id, secret string) {
		t.Helper()
		out, err := herald(t, "webhooks", "add", "--master-key-file", oldFile, "--tenant", tenant, "--url", "https://erp."+tenant+".example/hook", "--json")
		require.NoError(t, err)
		var added struct {
			ID     string `json:"id"`
			Secret string `json:"secret"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &added))
		return added.ID, added.Secret
	}
	rotate := func(tenant, id, grace string) string {
		t.Helper()
		out, err := herald(t, "webhooks", "rotate", "--master-key-file", oldFile, "--tenant", tenant, "--id", id, "--grace", grace)
		require.NoError(t, err)
		return regexp.MustCompile(`whsec_\S+`).FindString(out)
	}
	acme, acmeFirst := add("acme")
	acmeSecond := rotate("acme", acme, "24h") // both sign for a day
	globex, globexFirst := add("globex")
	globexSecond := rotate("globex", globex, "0s") // the first signs no more

	newFile := filepath.Join(t.TempDir(), "new.key")
	next, err := vault.GenerateKeyFile(newFile)
	require.NoError(t, err)
	out, err := herald(t, "vault", "rotate", "--master-key-file", oldFile, "--new-key-file", newFile)
	require.NoError(t, err, "%s", out)
	require.Contains(t, out, "re-encrypted 3 of 3 webhook signing secrets under key "+next.ID()+" (0 were under it already; 1 past their grace period removed)\n")
	require.Contains(t, out, "key ["+old.ID()+"] may go")
	for _, s := range []string{acmeFirst, acmeSecond, globexFirst, globexSecond} {
		require.False(t, strings.Contains(out, s[len("whsec_"):]), "a signing secret is shown")
	}

	// The old key is gone: only the new one opens the secrets.
	keys, err := vault.NewKeyring(next)
	require.NoError(t, err)
	store, err := webhooks.Open(ctx, n.JS, keys)
	require.NoError(t, err)
	verifies := func(tenant, id string, shown ...string) {
		t.Helper()
		e, err := store.Get(ctx, tenant, id)
		require.NoError(t, err)
		secrets, err := store.Secrets(tenant, e)
		require.NoError(t, err, "the new key alone opens every secret that still signs")
		body := []byte(`{"type":"notification.delivered","timestamp":"2026-11-30T09:00:00Z","data":{}}`)
		now := time.Now()
		header := http.Header{"Webhook-Id": {"msg_1"}, "Webhook-Timestamp": {strconv.FormatInt(now.Unix(), 10)},
			"Webhook-Signature": {webhook.Sign("msg_1", now, body, secrets...)}}
		for _, s := range shown {
			wh, err := standardwebhooks.NewWebhook(s)
			require.NoError(t, err)
			require.NoError(t, wh.Verify(body, header), "a secret the tenant holds verifies what Herald signs")
		}
		require.Equal(t, len(shown), len(secrets), "and no other secret signs")
	}
	verifies("acme", acme, acmeSecond, acmeFirst)
	verifies("globex", globex, globexSecond)

	out, err = herald(t, "vault", "rotate", "--master-key-file", oldFile, "--new-key-file", newFile)
	require.NoError(t, err)
	require.Contains(t, out, "re-encrypted 0 of 3 webhook signing secrets under key "+next.ID()+" (3 were under it already)\n", "run again, it has nothing to do")
}

// A credential sealed under a key the rotation was not given stays as it
// is, and the rotation says so instead of declaring the old key free to go.
// Not parallel: it sets the environment.
func TestVaultRotateKeepsWhatItCannotOpen(t *testing.T) {
	_, oldFile := vaultSetup(t)
	lostFile := filepath.Join(t.TempDir(), "lost.key")
	lost, err := vault.GenerateKeyFile(lostFile)
	require.NoError(t, err)
	for _, key := range []string{oldFile, lostFile} {
		_, err := herald(t, "providers", "set", "--master-key-file", key, "--tenant", "acme", "--name", filepath.Base(key)[:4],
			"--type", "sendgrid", "--api-key-file", secretFile(t, cliAPIKey))
		require.NoError(t, err)
	}
	newFile := filepath.Join(t.TempDir(), "new.key")
	_, err = vault.GenerateKeyFile(newFile)
	require.NoError(t, err)

	out, err := herald(t, "vault", "rotate", "--master-key-file", oldFile, "--new-key-file", newFile)
	require.ErrorContains(t, err, "acme.lost: vault: sealed under a key this keyring does not hold: key "+lost.ID())
	require.ErrorContains(t, err, "keep it, and run the rotation again")
	require.Contains(t, out, "re-encrypted 1 of 2 credentials")
	require.NotContains(t, out, "may go")

	out, err = herald(t, "vault", "rotate", "--master-key-file", oldFile, "--previous-key-file", lostFile, "--new-key-file", newFile)
	require.NoError(t, err)
	require.Contains(t, out, "re-encrypted 1 of 2 credentials")
	require.Contains(t, out, "may go")
}

// After a rotation the retired key reads nothing Herald keeps: no message
// of any stream — no revision of any key of any bucket — holds a ciphertext
// it reads. Not a credential replaced before the rotation, not a signing
// secret of an endpoint's earlier revision, not the secret of an endpoint
// removed before it. Not parallel: it sets the environment.
func TestVaultRotateLeavesNothingTheOldKeyReads(t *testing.T) {
	n, oldFile := vaultSetup(t)
	oldText, err := os.ReadFile(oldFile)
	require.NoError(t, err)
	t.Setenv("HERALD_MASTER_KEY", string(oldText))
	run := func(args ...string) string {
		t.Helper()
		out, err := herald(t, args...)
		require.NoError(t, err, "%s", out)
		return out
	}
	for i, tenant := range []string{"acme", "acme", "globex"} {
		run("providers", "set", "--tenant", tenant, "--name", "sendgrid-own", "--type", "sendgrid",
			"--api-key-file", secretFile(t, fmt.Sprintf("%s-%d", cliAPIKey, i)))
	}
	added := func(tenant, url string) string {
		t.Helper()
		var e webhooks.Endpoint
		require.NoError(t, json.Unmarshal([]byte(run("webhooks", "add", "--tenant", tenant, "--url", url, "--json")), &e))
		return e.ID
	}
	kept := added("acme", "https://erp.acme.example/hook")
	run("webhooks", "rotate", "--tenant", "acme", "--id", kept, "--grace", "24h")
	removed := added("acme", "https://old.acme.example/hook")
	run("webhooks", "enable", "--tenant", "acme", "--id", removed) // one more revision
	run("webhooks", "rm", "--tenant", "acme", "--id", removed)
	added("globex", "https://erp.globex.example/hook")
	// What a Herald before this rule left behind: a tenant's last endpoint
	// removed by a plain update, and a key deleted by hand (nats kv del),
	// their secrets still in earlier revisions.
	ctx := heraldtest.Context(t)
	kv, err := n.JS.KeyValue(ctx, webhooks.Bucket)
	require.NoError(t, err)
	acme, err := kv.Get(ctx, "acme")
	require.NoError(t, err)
	for _, tenant := range []string{"initech", "umbrella"} {
		_, err := kv.Put(ctx, tenant, acme.Value())
		require.NoError(t, err)
	}
	_, err = kv.Put(ctx, "initech", []byte(`{"endpoints":[]}`))
	require.NoError(t, err)
	require.NoError(t, kv.Delete(ctx, "umbrella"))

	oldKey, newKey := rawKey(t, oldFile), filepath.Join(t.TempDir(), "new.key")
	_, err = vault.GenerateKeyFile(newKey)
	require.NoError(t, err)
	readByOld := func() map[string]int {
		read := map[string]int{}
		for _, s := range heraldtest.SealedInStreams(t, n.JS) {
			if _, ok := heraldtest.Reads(t, oldKey, s); ok {
				read[s.Stream]++
			}
		}
		return read
	}
	before := readByOld()
	require.Greater(t, before["KV_credentials"], 0, "the scan reads the credentials")
	require.Greater(t, before["KV_webhook_endpoints"], 0, "and the endpoints'")

	run("vault", "rotate", "--new-key-file", newKey)

	require.Empty(t, readByOld(), "the old key reads these streams' ciphertexts, by stream")
	byNew := map[string]int{}
	for _, s := range heraldtest.SealedInStreams(t, n.JS) {
		if _, ok := heraldtest.Reads(t, rawKey(t, newKey), s); ok {
			byNew[s.Stream]++
		}
	}
	require.Equal(t, map[string]int{"KV_credentials": 2, "KV_webhook_endpoints": 3}, byNew,
		"the new key reads the two credentials and the three secrets that still sign, each once")
}

// rawKey is the 32 bytes of a key file GenerateKeyFile wrote.
func rawKey(t *testing.T, path string) []byte {
	t.Helper()
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(text)))
	require.NoError(t, err)
	return raw
}

// A command that needs the master key and is given none uses the key of a
// `herald dev` run from the same directory, saying so on stderr in one line
// that names the file, never the key; without that file it fails as before,
// naming the variable to set. Not parallel: it changes directory.
func TestCommandsBesideDevUseItsMasterKey(t *testing.T) {
	n, _ := vaultSetup(t)
	t.Chdir(t.TempDir())
	add := func() (stdout, stderr string, err error) {
		var out, errOut bytes.Buffer
		cmd := rootCommand()
		cmd.SetArgs([]string{"webhooks", "add", "--tenant", "acme", "--url", "https://erp.acme.example/herald"})
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		err = cmd.Execute()
		return out.String(), errOut.String(), err
	}

	_, stderr, err := add()
	require.ErrorIs(t, err, vault.ErrNoKey)
	require.ErrorContains(t, err, "set HERALD_MASTER_KEY (base64 of 32 bytes) or --master-key-file")
	require.Empty(t, stderr)

	require.NoError(t, os.Mkdir(".herald", 0o755))
	key, err := vault.GenerateKeyFile(filepath.Join(".herald", "master.key"))
	require.NoError(t, err)
	stdout, stderr, err := add()
	require.NoError(t, err, stderr)
	require.Contains(t, stdout, "added endpoint we_")
	require.Equal(t, "no HERALD_MASTER_KEY or --master-key-file: using herald dev's master key, .herald/master.key\n", stderr)

	keys, err := vault.NewKeyring(key)
	require.NoError(t, err)
	store, err := webhooks.Open(heraldtest.Context(t), n.JS, keys)
	require.NoError(t, err)
	list, err := store.List(heraldtest.Context(t), "acme")
	require.NoError(t, err)
	require.Len(t, list, 1)
	_, err = store.Secrets("acme", list[0])
	require.NoError(t, err, "the secret is sealed under dev's key")
}
