package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/recipient"
)

// indexFor is an index at HISTORY_URL holding n subscribers of acme
// (u-000…, every other one at buyer1@zarya.example) and one of globex,
// as the history service writes them; closed, as another process's.
func indexFor(t *testing.T, n int) {
	t.Helper()
	url := "sqlite:" + filepath.Join(t.TempDir(), "history.db")
	t.Setenv("HISTORY_URL", url)
	t.Setenv("HERALD_CONFIG", "")
	index, err := history.Open(heraldtest.Context(t), url)
	require.NoError(t, err)
	changes := []history.SubscriberChange{{Subscriber: history.Subscriber{Tenant: "globex", ID: "u-000",
		Email: "buyer1@zarya.example", Revision: 1}}}
	for i := range n {
		changes = append(changes, history.SubscriberChange{Subscriber: history.Subscriber{Tenant: "acme",
			ID: fmt.Sprintf("u-%03d", i), Name: fmt.Sprintf("Buyer %d", i), Email: fmt.Sprintf("buyer%d@zarya.example", i%2),
			Phone: fmt.Sprintf("+3460011%04d", i), Locale: "es", Timezone: "Europe/Madrid",
			UpdatedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Revision: uint64(i + 2)}})
	}
	require.NoError(t, index.ApplySubscribers(heraldtest.Context(t), changes))
	require.NoError(t, index.Close())
}

// The CLI lists a tenant's subscribers from the index, past one page,
// searched by email in any case or by number; none is []. Not parallel:
// it sets the environment.
func TestSubscribersList(t *testing.T) {
	indexFor(t, 150)
	run := func(args ...string) string {
		t.Helper()
		out, err := herald(t, append([]string{"subscribers", "list"}, args...)...)
		require.NoError(t, err, out)
		return out
	}
	var all []recipient.Subscriber
	require.NoError(t, json.Unmarshal([]byte(run("--tenant", "acme", "--json", "--limit", "1000")), &all))
	require.Len(t, all, 150, "past a page of the index")
	require.Equal(t, recipient.Subscriber{Tenant: "acme", ID: "u-149", Name: "Buyer 149", Email: "buyer1@zarya.example",
		Phone: "+34600110149", Locale: "es", Timezone: "Europe/Madrid", UpdatedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}, all[149])

	var found []recipient.Subscriber
	require.NoError(t, json.Unmarshal([]byte(run("--tenant", "acme", "--email", "BUYER1@Zarya.example", "--json")), &found))
	require.Len(t, found, 75)
	require.Equal(t, []string{"u-001", "u-003", "u-005"}, []string{found[0].ID, found[1].ID, found[2].ID})

	require.Regexp(t, `^ID +NAME +EMAIL +PHONE +WHATSAPP +LOCALE +TIMEZONE +UPDATED\n`+
		`u-007 +Buyer 7 +buyer1@zarya.example +\+34600110007 +- +es +Europe/Madrid +2026-11-30T09:00:00Z\n$`,
		run("--tenant", "acme", "--phone", "+34600110007"))
	require.Contains(t, run("--tenant", "acme", "--limit", "2"), "(the first 2; --limit shows more)")
	require.Equal(t, "[]\n", run("--tenant", "initech", "--json"), "none is an empty list")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tenant", "acme", "--email", "buyer1"}, "email: not an email address"},
		{[]string{"--tenant", "acme", "--phone", "600110007"}, "phone: not an E.164 phone number"},
		{[]string{"--tenant", "acme", "--limit", "0"}, "--limit: 0 is not a positive number"},
		{[]string{"--email", "buyer1@zarya.example"}, `required flag(s) "tenant" not set`},
	} {
		out, err := herald(t, append([]string{"subscribers", "list"}, c.args...)...)
		require.ErrorContains(t, err, c.want, "%v: %s", c.args, out)
	}

	t.Setenv("HISTORY_URL", "")
	_, err := herald(t, "subscribers", "list", "--tenant", "acme")
	require.ErrorContains(t, err, "set history.url or HISTORY_URL")
}
