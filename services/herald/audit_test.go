package main

import (
	"encoding/json"
	"os/user"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/suppression"
)

// Whoever runs a resource command is named in the audit trail of what it
// writes: "cli:" and the machine's user. `changes` prints the trail, as a
// table or JSON. Not parallel: it sets the environment.
func TestAResourceCommandsWriteNamesTheCommandLineAndChangesListsIt(t *testing.T) {
	n, _ := vaultSetup(t)
	u, err := user.Current()
	require.NoError(t, err)
	who := "cli:" + u.Username
	run := func(args ...string) string {
		t.Helper()
		out, err := herald(t, args...)
		require.NoError(t, err, out)
		return out
	}
	run("suppressions", "add", "--tenant", "acme", "--address", "jane@example.com")
	run("suppressions", "remove", "--tenant", "acme", "--address", "jane@example.com")

	ctx := heraldtest.Context(t)
	store, err := suppression.Open(ctx, n.JS)
	require.NoError(t, err)
	stored, err := store.Records().Changes(ctx, suppression.Suppressions.Key(suppression.Entry{Tenant: "acme", Address: "jane@example.com"}))
	require.NoError(t, err)
	require.Len(t, stored, 2)
	require.Equal(t, []string{who, who}, []string{stored[0].Actor, stored[1].Actor})

	var listed []change
	require.NoError(t, json.Unmarshal([]byte(run("suppressions", "changes", "--tenant", "acme", "--address", "Jane@Example.com", "--json")), &listed))
	require.Len(t, listed, 2)
	require.Equal(t, change{Revision: stored[0].Revision, Operation: "write", Actor: who, Time: stored[0].Time.UTC()}, listed[0])
	require.Equal(t, change{Revision: stored[1].Revision, Operation: "delete", Actor: who, Time: stored[1].Time.UTC()}, listed[1])
	require.Regexp(t, `^REVISION +TIME +OPERATION +BY\n`+
		`\d+ +\S+Z +write +`+who+`\n`+
		`\d+ +\S+Z +delete +`+who+`\n$`, run("suppressions", "changes", "--tenant", "acme", "--address", "jane@example.com"))
}

// `changes` reads the trail at the key the resource's own rule makes of
// the tenant and what the flags name: another tenant's record is not
// reached by naming it, nor by typing its KV key.
func TestChangesReachesOnlyTheTenantsOwnRecord(t *testing.T) {
	n, _ := vaultSetup(t)
	ctx := heraldtest.Context(t)
	out, err := herald(t, "suppressions", "add", "--tenant", "globex", "--address", "ops@globex.example")
	require.NoError(t, err, out)
	rawSuppression := suppression.Suppressions.Key(suppression.Entry{Tenant: "globex", Address: "ops@globex.example"})
	sending, err := domains.Open(ctx, n.JS)
	require.NoError(t, err)
	_, err = sending.Put(ctx, domains.Entry{Tenant: "globex", Domain: "globex.example", Provider: "ses", Status: "pending"})
	require.NoError(t, err)
	rawDomain := domains.Domains.Key(domains.Entry{Tenant: "globex", Domain: "globex.example"})

	for _, args := range [][]string{
		{"suppressions", "changes", "--tenant", "acme", "--address", "ops@globex.example"},
		{"suppressions", "changes", "--tenant", "acme", "--address", rawSuppression},
		{"domains", "changes", "--tenant", "acme", "--domain", "globex.example"},
		{"domains", "changes", "--tenant", "acme", "--domain", rawDomain},
	} {
		out, err := herald(t, args...)
		require.Error(t, err, "%v: %s", args, out)
		require.NotContains(t, out, "cli:", "%v", args)
	}
	out, err = herald(t, "domains", "changes", "--tenant", "globex", "--domain", "Globex.Example", "--json")
	require.NoError(t, err, out)
	require.Contains(t, out, `"operation":"write"`, "the domain's own tenant sees it")
}
