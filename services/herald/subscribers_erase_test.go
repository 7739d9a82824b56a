package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/erasure"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/suppression"
)

// herald subscribers erase erases as the API does, with the link secret
// the configuration names, printing the receipt and recording the
// machine's user on the audit stream; her address stays suppressed, listed
// as erased. delete removes a profile only. Not parallel: it sets the
// environment.
func TestSubscribersEraseAndDelete(t *testing.T) {
	n, _ := vaultSetup(t)
	ctx := heraldtest.Context(t)
	dir, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	for _, s := range []recipient.Subscriber{{Tenant: "acme", ID: "u-olga", Email: "olga@zarya.example"}, {Tenant: "acme", ID: "u-ivan", Email: "ivan@zarya.example"}} {
		_, err = dir.Subscribers.Put(ctx, s)
		require.NoError(t, err)
	}
	supp, err := suppression.Open(ctx, n.JS)
	require.NoError(t, err)
	_, err = supp.Add(ctx, suppression.Entry{Tenant: "acme", Address: "olga@zarya.example", Reason: suppression.HardBounce})
	require.NoError(t, err)

	_, err = herald(t, "subscribers", "erase", "u-olga", "--tenant", "acme")
	require.ErrorIs(t, err, erasure.ErrNoSecret, "no link secret configured")
	config := filepath.Join(t.TempDir(), "herald.yaml")
	require.NoError(t, os.WriteFile(config, []byte("documents:\n  link_secret_file: "+secretFile(t, strings.Repeat("z", 32))+"\n"), 0o600))
	t.Setenv("HERALD_CONFIG", config)

	out, err := herald(t, "subscribers", "erase", "u-olga", "--tenant", "acme", "--json")
	require.NoError(t, err, out)
	var r erasure.Receipt
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Equal(t, []any{1, 1, 1, true}, []any{r.Profile, r.Addresses, r.Suppressions, r.Complete})
	_, _, err = dir.Subscribers.Get(ctx, recipient.SubscriberKey("acme", "u-olga"))
	require.ErrorIs(t, err, recipient.ErrNoSubscriber)
	list, err := herald(t, "suppressions", "list", "--tenant", "acme")
	require.NoError(t, err, list)
	require.Regexp(t, `\n\(erased\) +\(all\) +\(all\) +hard_bounce`, list)
	require.NotContains(t, list, "olga@")
	audit := heraldtest.StreamMessages(t, n.JS, "AUDIT")
	require.Len(t, audit, 1)
	var entry erasure.AuditEntry
	require.NoError(t, json.Unmarshal(audit[0].Data, &entry))
	require.Equal(t, cliActor(), entry.Who)

	again, err := herald(t, "subscribers", "erase", "u-olga", "--tenant", "acme")
	require.NoError(t, err, again)
	require.Regexp(t, `^ERASED +COUNT\nprofile +0\n`, again)
	require.NotContains(t, again, "not complete")

	out, err = herald(t, "subscribers", "delete", "u-ivan", "--tenant", "acme")
	require.NoError(t, err, out)
	require.Equal(t, "deleted subscriber \"u-ivan\" of tenant acme (her profile and push devices only)\n", out)
	_, err = herald(t, "subscribers", "delete", "u-ivan", "--tenant", "acme")
	require.ErrorContains(t, err, `tenant acme has no subscriber "u-ivan"`)
}

// herald subscribers erase, given no link secret, uses the one a `herald
// dev` run from the working directory keeps, saying so on stderr in one
// line naming the file, never the secret: the erased address's suppression
// then holds the hash keyed by dev's secret. Without that file it fails as
// before. Not parallel: it changes directory and sets the environment.
func TestSubscribersEraseBesideDevUsesItsLinkKey(t *testing.T) {
	n, _ := vaultSetup(t)
	t.Chdir(t.TempDir())
	ctx := heraldtest.Context(t)
	dir, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	_, err = dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u-olga", Email: "olga@zarya.example"})
	require.NoError(t, err)
	supp, err := suppression.Open(ctx, n.JS)
	require.NoError(t, err)
	_, err = supp.Add(ctx, suppression.Entry{Tenant: "acme", Address: "olga@zarya.example", Reason: suppression.HardBounce})
	require.NoError(t, err)

	out, err := herald(t, "subscribers", "erase", "u-olga", "--tenant", "acme")
	require.ErrorIs(t, err, erasure.ErrNoSecret, out)

	require.NoError(t, os.Mkdir(".herald", 0o755))
	secret := strings.Repeat("d", 64)
	require.NoError(t, os.WriteFile(filepath.Join(".herald", "link.key"), []byte(secret+"\n"), 0o600))
	var stdout, stderr bytes.Buffer
	cmd := rootCommand()
	cmd.SetArgs([]string{"subscribers", "erase", "u-olga", "--tenant", "acme", "--json"})
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	require.NoError(t, cmd.Execute(), stderr.String())
	require.Equal(t, "no documents.link_secret_env: using herald dev's link secret, .herald/link.key\n", stderr.String())
	var r erasure.Receipt
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &r))
	require.Equal(t, []any{1, 1, true}, []any{r.Profile, r.Suppressions, r.Complete})

	eraser, err := erasure.Open(ctx, n.JS, erasure.Config{Secret: []byte(secret)})
	require.NoError(t, err)
	list, err := supp.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, eraser.Hash("olga@zarya.example"), list[0].AddressHash, "keyed by dev's link secret")
}
