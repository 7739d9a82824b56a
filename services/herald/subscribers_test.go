package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/recipient"
)

// A subscriber set with the CLI is the directory's record; `set` again
// changes only the fields given; `get` shows her, another tenant does not
// find her; bad input is refused naming the field. Not parallel: it sets
// the environment.
func TestSubscribersSetGetImport(t *testing.T) {
	n, _ := vaultSetup(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := herald(t, args...)
		require.NoError(t, err, out)
		return out
	}
	require.Equal(t, "created subscriber \"u.olga\" for tenant acme\n", run("subscribers", "set", "u.olga", "--tenant", "acme",
		"--email", "Olga@Zarya.example", "--phone", "+79161234567", "--locale", "ru", "--timezone", "Europe/Moscow", "--data", `{"desk": 4}`))
	require.Equal(t, "updated subscriber \"u.olga\" for tenant acme\n", run("subscribers", "set", "u.olga", "--tenant", "acme",
		"--name", "Olga", "--phone", ""))

	dir, err := recipient.Open(heraldtest.Context(t), n.JS)
	require.NoError(t, err)
	s, _, err := dir.Subscribers.Get(heraldtest.Context(t), recipient.SubscriberKey("acme", "u.olga"))
	require.NoError(t, err)
	require.Equal(t, "Olga", s.Name)
	require.Equal(t, "olga@zarya.example", s.Email, "kept")
	require.Empty(t, s.Phone, "cleared")
	require.JSONEq(t, `{"desk":4}`, string(s.Data))
	trail, err := dir.Subscribers.Changes(heraldtest.Context(t), recipient.SubscriberKey("acme", "u.olga"))
	require.NoError(t, err)
	require.Contains(t, trail[len(trail)-1].Actor, "cli")

	var got recipient.Subscriber
	require.NoError(t, json.Unmarshal([]byte(run("subscribers", "get", "u.olga", "--tenant", "acme", "--json")), &got))
	require.Equal(t, s, got)
	require.Regexp(t, `(?m)^timezone +Europe/Moscow$`, run("subscribers", "get", "u.olga", "--tenant", "acme"))
	_, err = herald(t, "subscribers", "get", "u.olga", "--tenant", "globex")
	require.ErrorIs(t, err, recipient.ErrNoSubscriber)
	_, err = herald(t, "subscribers", "set", "u.olga", "--tenant", "acme", "--timezone", "Mars/Olympus")
	require.ErrorContains(t, err, "timezone: ")
	_, err = herald(t, "subscribers", "set", "u.olga", "--tenant", "acme", "--name", "a\x1b[2Jb")
	require.ErrorContains(t, err, "name: ")

	file := filepath.Join(t.TempDir(), "people.ndjson")
	require.NoError(t, os.WriteFile(file, []byte(`{"id":"u-ivan","email":"ivan@zarya.example"}
{"id":"u-bad","locale":"xx-QQ"}

{"id":"u.olga","name":"Olga P."}
`), 0o600))
	out := run("subscribers", "import", file, "--tenant", "acme")
	require.Contains(t, out, "1 created, 1 updated, 1 refused")
	require.Contains(t, out, `line 2 "u-bad": locale: `)
	_, _, err = dir.Subscribers.Get(heraldtest.Context(t), recipient.SubscriberKey("acme", "u-ivan"))
	require.NoError(t, err)
}

// Accounts and topics are set, shown, listed and removed; a member that
// is not a subscriber is refused by name.
func TestAccountsAndTopics(t *testing.T) {
	vaultSetup(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := herald(t, args...)
		require.NoError(t, err, out)
		return out
	}
	run("subscribers", "set", "u-olga", "--tenant", "acme", "--email", "olga@zarya.example")
	run("subscribers", "set", "u:ivan", "--tenant", "acme", "--email", "ivan@zarya.example")
	_, err := herald(t, "accounts", "set", "zarya", "--tenant", "acme", "--member", "u-ghost:sales")
	require.ErrorContains(t, err, `members[0].subscriber: "u-ghost" is not a subscriber`)
	require.Equal(t, "stored account \"zarya\" for tenant acme with 2 members\n", run("accounts", "set", "zarya", "--tenant", "acme",
		"--name", "Zarya LLC", "--member", "u-olga:sales,accounts_payable", "--member", "u:ivan:"))
	var a recipient.Account
	require.NoError(t, json.Unmarshal([]byte(run("accounts", "get", "zarya", "--tenant", "acme", "--json")), &a))
	require.Equal(t, []recipient.Member{{Subscriber: "u-olga", Roles: []string{"sales", "accounts_payable"}}, {Subscriber: "u:ivan"}}, a.Members)
	require.Regexp(t, `(?m)^zarya +Zarya LLC +2$`, run("accounts", "list", "--tenant", "acme"))
	require.Equal(t, "[]\n", run("accounts", "list", "--tenant", "globex", "--json"))
	run("accounts", "delete", "zarya", "--tenant", "acme")
	_, err = herald(t, "accounts", "get", "zarya", "--tenant", "acme")
	require.ErrorIs(t, err, recipient.ErrNoAccount)

	run("topics", "set", "wh.sevilla", "--tenant", "acme", "--name", "Sevilla")
	require.Equal(t, "topic \"wh.sevilla\" of tenant acme: 2 added, 0 removed, 2 members\n",
		run("topics", "add", "wh.sevilla", "u-olga", "u:ivan", "--tenant", "acme"))
	_, err = herald(t, "topics", "add", "wh.sevilla", "u-olga", "u-ghost", "--tenant", "acme")
	require.ErrorContains(t, err, `add[1]: "u-ghost" is not a subscriber`)
	require.Equal(t, "topic \"wh.sevilla\" of tenant acme: 0 added, 1 removed, 1 members\n",
		run("topics", "remove", "wh.sevilla", "u:ivan", "--tenant", "acme"))
	require.Regexp(t, `^SUBSCRIBER +ADDED\nu-olga +\S+Z\n$`, run("topics", "members", "wh.sevilla", "--tenant", "acme"))
	require.Regexp(t, `(?m)^wh.sevilla +Sevilla$`, run("topics", "list", "--tenant", "acme"))
	run("topics", "delete", "wh.sevilla", "--tenant", "acme")
	_, err = herald(t, "topics", "members", "wh.sevilla", "--tenant", "acme")
	require.ErrorIs(t, err, recipient.ErrNoTopic)
}

// Preferences set with the CLI are laid over those kept (or replace them
// with --replace), and a category the routes require is not switched
// off: the default routes mark documents required.
func TestPreferencesSetAndGet(t *testing.T) {
	vaultSetup(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := herald(t, args...)
		require.NoError(t, err, out)
		return out
	}
	run("subscribers", "set", "u-olga", "--tenant", "acme", "--email", "olga@zarya.example")
	run("preferences", "set", "alerts.sms=false", "--tenant", "acme", "--subscriber", "u-olga")
	require.Equal(t, "preferences of \"u-olga\", tenant acme: alerts.email=false, alerts.sms=false\n",
		run("preferences", "set", "alerts.email=false", "--tenant", "acme", "--subscriber", "u-olga"))
	run("preferences", "set", "alerts.whatsapp=false", "--tenant", "acme")
	_, err := herald(t, "preferences", "set", "documents.email=false", "--tenant", "acme", "--subscriber", "u-olga")
	require.ErrorContains(t, err, "categories.documents: is required")
	_, err = herald(t, "preferences", "set", "alerts.sms", "--tenant", "acme")
	require.ErrorContains(t, err, "want CATEGORY.CHANNEL=true or =false")
	require.Equal(t, "chosen:   alerts.email=false, alerts.sms=false\ndefaults: alerts.whatsapp=false\nrequired: documents\n",
		run("preferences", "get", "--tenant", "acme", "--subscriber", "u-olga"))
	run("preferences", "set", "alerts.sms=true", "--replace", "--tenant", "acme", "--subscriber", "u-olga")
	require.JSONEq(t, `{"categories":{"alerts":{"sms":true}},"defaults":{"alerts":{"whatsapp":false}},"required":["documents"]}`,
		run("preferences", "get", "--tenant", "acme", "--subscriber", "u-olga", "--json"))
}
