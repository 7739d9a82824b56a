package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
)

// An endpoint added with the CLI is stored with a sealed secret, shown
// once; list never shows it; rotate gives a new one that signs beside the
// old; rm removes the endpoint. Not parallel: it sets the environment.
func TestWebhooksAddListRotateRemove(t *testing.T) {
	n, keyFile := vaultSetup(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := herald(t, args...)
		require.NoError(t, err, out)
		return out
	}
	var added struct {
		webhooks.Endpoint
		Secret string `json:"secret"`
	}
	require.NoError(t, json.Unmarshal([]byte(run("webhooks", "add", "--master-key-file", keyFile, "--tenant", "acme",
		"--url", "https://erp.acme.example/herald", "--events", "notification.failed", "--json")), &added))
	require.Regexp(t, `^we_[a-z0-9]{26}$`, added.ID)
	require.Equal(t, []string{"notification.failed"}, added.Events)
	require.True(t, strings.HasPrefix(added.Secret, "whsec_"))

	list := run("webhooks", "list", "--tenant", "acme")
	require.Regexp(t, `(?m)^`+added.ID+` +https://erp.acme.example/herald +notification.failed +active +-$`, list)
	require.NotContains(t, list, added.Secret[6:16])

	out := run("webhooks", "rotate", "--master-key-file", keyFile, "--tenant", "acme", "--id", added.ID)
	rotated := regexp.MustCompile(`whsec_\S+`).FindString(out)
	require.NotEmpty(t, rotated)
	require.NotEqual(t, added.Secret, rotated)

	key, err := vault.ReadKeyFile(keyFile)
	require.NoError(t, err)
	keys, err := vault.NewKeyring(key)
	require.NoError(t, err)
	store, err := webhooks.Open(heraldtest.Context(t), n.JS, keys)
	require.NoError(t, err)
	e, err := store.Get(heraldtest.Context(t), "acme", added.ID)
	require.NoError(t, err)
	secrets, err := store.Secrets("acme", e)
	require.NoError(t, err)
	want := make([][]byte, 2)
	for i, s := range []string{rotated, added.Secret} {
		want[i], err = webhooks.ParseSecret(s)
		require.NoError(t, err)
	}
	require.Equal(t, want, secrets, "the new secret signs, and the old one until its grace ends")

	require.Equal(t, "removed endpoint "+added.ID+" of tenant acme\n", run("webhooks", "rm", "--tenant", "acme", "--id", added.ID))
	require.Equal(t, "[]\n", run("webhooks", "list", "--tenant", "acme", "--json"), "none is an empty list")
}
