package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
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

// A disabled endpoint is enabled again, then what it missed is found in
// the tenant's outcomes and redelivered: a dry run lists it, skipping
// what cannot be sent again, and names nothing wrongly asked for.
func TestWebhooksEnableAndRedeliver(t *testing.T) {
	n, keyFile := vaultSetup(t)
	ctx := heraldtest.Context(t)
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	var added webhooks.Endpoint
	out, err := herald(t, "webhooks", "add", "--master-key-file", keyFile, "--tenant", "acme", "--url", "https://erp.acme.example/herald", "--json")
	require.NoError(t, err, out)
	require.NoError(t, json.Unmarshal([]byte(out), &added))
	store, err := webhooks.Open(ctx, n.JS, nil)
	require.NoError(t, err)
	_, _, err = store.Disable(ctx, "acme", added.ID, "the endpoint answered 410 Gone", "")
	require.NoError(t, err)

	// One webhook that failed while the endpoint was down, and one sent
	// before Herald kept what webhooks carried.
	l, err := ledger.Open(ctx, n.JS)
	require.NoError(t, err)
	missed := notification.Delivery{ID: notification.ID("acme:k1"), DedupeKey: "acme:k1", Tenant: "acme", Channel: event.ChannelWebhook,
		Priority: notification.PriorityNormal, Recipient: notification.Recipient{Address: added.ID}, Template: notification.FeedTemplate,
		Locale: "en", Payload: json.RawMessage(`{"type":"notification.failed","timestamp":"2026-12-01T08:00:00Z","data":{}}`),
		Event: notification.EventRef{ID: "evt-1", Type: "notification.failed"}, CreatedAt: time.Now()}
	raw, err := json.Marshal(missed)
	require.NoError(t, err)
	old := notification.ID("acme:k0")
	for _, e := range []ledger.Entry{
		{DedupeKey: "acme:k1", NotificationID: missed.ID, Tenant: "acme", Channel: "webhook", State: ledger.Failed, Delivery: raw},
		{DedupeKey: "acme:k0", NotificationID: old, Tenant: "acme", Channel: "webhook", State: ledger.Delivered},
	} {
		require.NoError(t, l.Put(ctx, &e))
		require.NoError(t, notification.PublishStatus(ctx, n.JS, notification.Status{NotificationID: e.NotificationID,
			DedupeKey: e.DedupeKey, Tenant: "acme", Channel: event.ChannelWebhook, State: string(e.State), Time: time.Now()}))
	}

	out, err = herald(t, "webhooks", "redeliver", "--tenant", "acme", "--since", since, "--dry-run", "--id", "rd_x")
	require.NoError(t, err, out)
	require.Contains(t, out, "would redeliver 0 webhook(s) of tenant acme as rd_x")
	require.Regexp(t, `skipped `+missed.ID+` +its endpoint `+added.ID+` is disabled; enable it first`, out)
	require.Regexp(t, `skipped `+old+` +sent before Herald kept what each webhook carried`, out)

	out, err = herald(t, "webhooks", "enable", "--tenant", "acme", "--id", added.ID)
	require.NoError(t, err, out)
	e, err := store.Get(ctx, "acme", added.ID)
	require.NoError(t, err)
	require.Equal(t, webhooks.Active, e.Status)
	require.Empty(t, e.DisabledReason)

	out, err = herald(t, "webhooks", "redeliver", "--tenant", "acme", "--since", since, "--failed", "--dry-run", "--json")
	require.NoError(t, err, out)
	var got webhooks.Redelivered
	// Progress goes to stderr, which herald() merges with stdout.
	require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &got))
	require.True(t, got.DryRun)
	require.Regexp(t, `^rd_[a-z0-9]{26}$`, got.ID, "a redelivery without an id gets one")
	require.Len(t, got.Sent, 1)
	require.Equal(t, webhooks.Resent{Of: missed.ID, NotificationID: notification.ID("acme:redelivery:" + got.ID + ":" + missed.ID),
		Endpoint: added.ID, State: "failed"}, got.Sent[0])
	require.Empty(t, got.Skipped, "the delivered one is not selected")

	for args, want := range map[string]string{
		"--message " + old:                       "cannot be redelivered: sent before Herald kept",
		"--message " + missed.ID + " --failed":   "until and failed-only select from a range",
		"--since yesterday":                      "--since: want a time such as",
		"--since " + since + " --id rd_a.b":      `redelivery id "rd_a.b"`,
		"--since " + since + " --endpoint we_no": "no such endpoint",
	} {
		out, err := herald(t, append([]string{"webhooks", "redeliver", "--tenant", "acme"}, strings.Fields(args)...)...)
		require.ErrorContains(t, err, want, "%s: %s", args, out)
	}
	stream, err := n.JS.Stream(ctx, "NOTIFY")
	require.NoError(t, err)
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "a dry run sends nothing")
}
