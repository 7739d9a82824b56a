package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/recipient"
)

// A subscriber's push devices are set, listed masked, and removed from the
// command line; a device of nobody is refused.
func TestSubscriberDevices(t *testing.T) {
	vaultSetup(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := herald(t, args...)
		require.NoError(t, err, out)
		return out
	}
	const token = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"
	run("subscribers", "set", "u-olga", "--tenant", "acme", "--email", "olga@zarya.example")
	require.Equal(t, "added device \"iphone\" (apns …61bb78ad) of subscriber \"u-olga\", tenant acme\n",
		run("subscribers", "devices", "set", "u-olga", "iphone", "--tenant", "acme", "--kind", "apns", "--token", token, "--locale", "ru"))
	require.Contains(t, run("subscribers", "devices", "set", "u-olga", "iphone", "--tenant", "acme", "--kind", "apns", "--token", token),
		"replaced device")
	_, err := herald(t, "subscribers", "devices", "set", "u-ghost", "iphone", "--tenant", "acme", "--kind", "apns", "--token", token)
	require.ErrorIs(t, err, recipient.ErrNoSubscriber)
	_, err = herald(t, "subscribers", "devices", "set", "u-olga", "pixel", "--tenant", "acme", "--kind", "fcm")
	require.ErrorContains(t, err, "token: required for a fcm device")

	table := run("subscribers", "devices", "list", "u-olga", "--tenant", "acme")
	require.Regexp(t, `^ID +KIND +ADDRESS +LOCALE +UPDATED\niphone +apns +…61bb78ad +- +\S+Z\n$`, table)
	var listed []map[string]any
	require.NoError(t, json.Unmarshal([]byte(run("subscribers", "devices", "list", "u-olga", "--tenant", "acme", "--json")), &listed))
	require.Len(t, listed, 1)
	require.Equal(t, "…61bb78ad", listed[0]["address"])
	require.NotContains(t, table+run("subscribers", "devices", "list", "u-olga", "--tenant", "acme", "--json"), token)

	run("subscribers", "devices", "remove", "u-olga", "iphone", "--tenant", "acme")
	_, err = herald(t, "subscribers", "devices", "remove", "u-olga", "iphone", "--tenant", "acme")
	require.ErrorIs(t, err, recipient.ErrNoDevice)
}
