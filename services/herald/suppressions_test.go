package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/suppression"
)

// An address suppressed with the CLI is stored as the delivery workers
// read it, listed (newest first) with its source, and removed; a bad
// reason or an address not suppressed is refused in words. Not parallel:
// it sets the environment.
func TestSuppressionsAddListRemove(t *testing.T) {
	n, _ := vaultSetup(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := herald(t, args...)
		require.NoError(t, err, out)
		return out
	}
	require.Equal(t, "[]\n", run("suppressions", "list", "--tenant", "acme", "--json"), "none is an empty list")
	require.Equal(t, "suppressed jane@example.com for tenant acme (manual)\n",
		run("suppressions", "add", "--tenant", "acme", "--address", "Jane@Example.com", "--detail", "asked by phone"))
	run("suppressions", "add", "--tenant", "acme", "--address", "+4915112345678", "--reason", "hard_bounce", "--channel", "sms")
	run("suppressions", "add", "--tenant", "globex", "--address", "ops@globex.example")
	run("suppressions", "add", "--tenant", "globex", "--address", "ops@globex.example", "--reason", "unsubscribed", "--category", "alerts")

	store, err := suppression.Open(heraldtest.Context(t), n.JS)
	require.NoError(t, err)
	e, err := store.Get(heraldtest.Context(t), "acme", "", "jane@example.com", "")
	require.NoError(t, err)
	require.Equal(t, suppression.Entry{Tenant: "acme", Address: "jane@example.com", Reason: "manual", Detail: "asked by phone",
		Source: "cli", CreatedAt: e.CreatedAt}, e)

	list := run("suppressions", "list", "--tenant", "acme")
	require.Regexp(t, `^ADDRESS +CHANNEL +CATEGORY +REASON +SOURCE +SINCE +DETAIL\n`+
		`\+4915112345678 +sms +\(all\) +hard_bounce +cli +\S+Z +-\n`+
		`jane@example.com +\(all\) +\(all\) +manual +cli +\S+Z +asked by phone\n$`, list)
	var listed []suppression.Entry
	require.NoError(t, json.Unmarshal([]byte(run("suppressions", "list", "--tenant", "globex", "--json")), &listed))
	require.Len(t, listed, 2, "the entry for all and the category's")
	require.Equal(t, "ops@globex.example", listed[0].Address)
	require.Equal(t, "removed suppression of ops@globex.example for tenant globex\n",
		run("suppressions", "remove", "--tenant", "globex", "--address", "ops@globex.example", "--category", "alerts"))

	require.Equal(t, "removed suppression of jane@example.com for tenant acme\n",
		run("suppressions", "remove", "--tenant", "acme", "--address", "JANE@example.com"))
	require.NotContains(t, run("suppressions", "list", "--tenant", "acme"), "jane@")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"remove", "--tenant", "acme", "--address", "jane@example.com"}, "address not suppressed"},
		{[]string{"remove", "--tenant", "acme", "--address", "ops@globex.example"}, "address not suppressed"}, // globex's
		{[]string{"add", "--tenant", "acme", "--address", "a@b.example", "--reason", "bounced"},
			`reason: "bounced" is not one of hard_bounce, complaint, manual, unsubscribed`},
		{[]string{"remove", "--tenant", "acme", "--address", "+4915112345678"}, "address not suppressed"}, // the SMS entry's
		{[]string{"add", "--tenant", "acme", "--address", "a@b.example", "--detail", "\x1b]0;owned\a\x1b[2J"},
			"detail: holds a control character (U+001B at byte 0)"},
		{[]string{"add", "--tenant", "acme", "--address", "a@b.example", "--channel", "sms"}, "is not an E.164 phone number"},
	} {
		out, err := herald(t, append([]string{"suppressions"}, c.args...)...)
		require.ErrorContains(t, err, c.want, "%v: %s", c.args, out)
	}
	_, err = store.Get(heraldtest.Context(t), "globex", "", "ops@globex.example", "")
	require.NoError(t, err, "another tenant's is left alone")
}
