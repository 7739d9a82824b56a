package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/quota"
)

// herald tenants usage reads the month's counters against the plan: the
// free plan's 100 emails, and none on sms.
func TestTenantsUsage(t *testing.T) {
	n := heraldtest.StartNATSWithStreams(t)
	t.Setenv("NATS_URL", n.Server.URL())
	t.Setenv("HERALD_CONFIG", "")
	_, err := herald(t, "tenants", "create", "zarya", "--plan", "free")
	require.NoError(t, err)

	ctx := heraldtest.Context(t)
	counter := quota.New(n.JS)
	email := quota.Key{Tenant: "zarya", Channel: "email", Month: "2026-12"}
	_, err = counter.Add(ctx, email.Subject(), 97, "")
	require.NoError(t, err)
	_, err = counter.Add(ctx, email.RefusedSubject(), 2, "")
	require.NoError(t, err)
	_, err = counter.Add(ctx, "quota.zarya.sms.2026-12", 3, "")
	require.NoError(t, err)

	out, err := herald(t, "tenants", "usage", "zarya", "--month", "2026-12")
	require.NoError(t, err)
	require.Equal(t, strings.Join([]string{
		"tenant zarya, plan free, 2026-12 (UTC)",
		"CHANNEL   USED  QUOTA  LEFT  REFUSED",
		"email     97    100    3     2",
		"sms       3     -      -     0",
		"whatsapp  0     -      -     0",
		"webhook   0     100    100   0",
		"inbox     0     -      -     0",
		"push      0     -      -     0",
		""}, "\n"), out)

	u := heraldJSON[usage](t, "tenants", "usage", "zarya", "--month", "2026-12")
	require.EqualValues(t, 97, u.Channels[0].Used)
	require.EqualValues(t, 100, *u.Channels[0].Quota)
	require.Nil(t, u.Channels[1].Quota)

	_, err = herald(t, "tenants", "usage", "zarya", "--month", "december")
	require.ErrorContains(t, err, `--month: "december" is not a month such as 2026-12`)
}
