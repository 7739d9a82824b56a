package main

import (
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
	require.Equal(t, "deleted subscriber \"u-ivan\" of tenant acme (her profile only)\n", out)
	_, err = herald(t, "subscribers", "delete", "u-ivan", "--tenant", "acme")
	require.ErrorContains(t, err, `tenant acme has no subscriber "u-ivan"`)
}
