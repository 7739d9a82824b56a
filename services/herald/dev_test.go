package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// startDev runs `herald dev` as the README's first command does, on free
// ports and a data directory of its own, and returns its banner once
// printed. Not parallel: it sets the environment.
func startDev(t *testing.T) (banner string, data string) {
	t.Helper()
	t.Setenv("HERALD_CONFIG", "")
	t.Setenv("NATS_URL", "")
	t.Setenv("HISTORY_URL", "")
	t.Setenv("HERALD_MASTER_KEY", "")
	t.Setenv("REDIS_URL", heraldtest.RedisURL(t))
	data = t.TempDir()
	var out heraldtest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cmd := rootCommand()
	cmd.SetArgs([]string{"dev", "--data", data, "--nats-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
		"--api-listen", "127.0.0.1:0", "--hook-listen", "127.0.0.1:0", "--shutdown-timeout", "10s"})
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "Ctrl-C stops Herald") }, 30*time.Second,
		20*time.Millisecond, "no banner: %s", &out)
	return out.String(), data
}

// `herald dev`, as the README's first command runs it, runs every service
// — the history service on its SQLite index included — and is ready.
func TestDevRunsEveryService(t *testing.T) {
	banner, _ := startDev(t)
	require.Contains(t, banner, "History   sqlite:")
	readyz := "http://" + regexp.MustCompile(`Ops +http://(\S+)/healthz`).FindStringSubmatch(banner)[1] + "/readyz"
	var ready struct {
		Status string
		Checks map[string]string
	}
	require.Eventually(t, func() bool {
		resp, err := heraldtest.HTTPClient(t).Get(readyz)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&ready))
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, "ok", ready.Checks["history"], "the history service runs, on its index: %v", ready.Checks)
}

// bannerCommand is a herald command the banner prints: the line as printed,
// the NATS_URL it sets (if any) and its arguments.
type bannerCommand struct {
	line, natsURL string
	args          []string
}

// bannerCommands are the herald commands in the banner, in its order.
func bannerCommands(t *testing.T, banner string) []bannerCommand {
	t.Helper()
	var cmds []bannerCommand
	for _, m := range regexp.MustCompile(`(?m)^ +((?:NATS_URL=(\S+) )?go run \./services/herald (.+))$`).FindAllStringSubmatch(banner, -1) {
		cmds = append(cmds, bannerCommand{line: m[1], natsURL: m[2], args: strings.Fields(m[3])})
	}
	return cmds
}

// The banner's commands, pasted as they are in a shell at the repository
// root, work against the dev that printed them: keys for the console and
// the API, a webhook endpoint on dev's sink, the sample order (emails, and
// its status events at the sink), the broken order (dead-lettered, its
// reason naming both faults), the DLQ's list. Not parallel: it changes
// directory and sets the environment.
func TestDevBannerCommandsWorkAsPasted(t *testing.T) {
	banner, data := startDev(t)
	t.Chdir("../..")
	cmds := bannerCommands(t, banner)
	var lines []string
	for _, c := range cmds {
		lines = append(lines, c.line)
	}
	for _, want := range []string{"keys create --admin", "keys create --tenant acme", "webhooks add --tenant acme --url http://127.0.0.1:",
		"publish examples/events/order.created.json", "publish --no-validate examples/events/broken.order.created.json", "dlq list"} {
		require.True(t, strings.Contains(strings.Join(lines, "\n"), "services/herald "+want), "the banner shows %q:\n%s", want, banner)
	}
	var tenantKey string
	for _, c := range cmds {
		if c.natsURL != "" {
			t.Setenv("NATS_URL", c.natsURL)
		}
		out, err := herald(t, c.args...)
		require.NoError(t, err, "%s\n%s", c.line, out)
		if strings.Contains(c.line, "keys create --tenant") {
			tenantKey = regexp.MustCompile(`hk_\S+`).FindString(out)
		}
	}

	console := regexp.MustCompile(`Console +(http://\S+/console/)`).FindStringSubmatch(banner)
	require.NotNil(t, console, banner)
	resp, err := heraldtest.HTTPClient(t).Get(console[1])
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "the console answers where the banner says")

	requireFiles(t, filepath.Join(data, "mail"), "*.eml", 2)
	for _, d := range requireFiles(t, filepath.Join(data, "hooks"), "*.json", 2) {
		require.Regexp(t, `^ntf_[0-9a-f]{64}$`, d.ID)
		require.Regexp(t, `^v1,`, d.Signature)
		var body struct{ Type string }
		require.NoError(t, json.Unmarshal(d.Body, &body))
		require.Equal(t, "notification.delivered", body.Type)
	}

	var entries []struct {
		Tenant string `json:"tenant"`
		Reason string `json:"reason"`
	}
	require.Eventually(t, func() bool {
		out, err := herald(t, "dlq", "list", "--json")
		require.NoError(t, err, out)
		require.NoError(t, json.Unmarshal([]byte(out), &entries))
		return len(entries) > 0
	}, 30*time.Second, 50*time.Millisecond)
	require.Len(t, entries, 1, "the broken order, and only it")
	require.Equal(t, "acme", entries[0].Tenant)
	require.Contains(t, entries[0].Reason, `data.order.totals.net: must be a JSON string such as "183.48", not a number`)
	require.Contains(t, entries[0].Reason, `data.recipients[1].Email: is not a field`)

	api := regexp.MustCompile(`HTTP API +(http://\S+)/v1/`).FindStringSubmatch(banner)
	require.NotNil(t, api, banner)
	requireNotificationsFound(t, api[1], tenantKey)
}

// requireNotificationsFound posts the revised order to the API with a key
// of acme, and finds each notification its 202 names, once routed.
func requireNotificationsFound(t *testing.T, api, key string) {
	t.Helper()
	order, err := os.ReadFile("examples/events/order.updated.json")
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(heraldtest.Context(t), http.MethodPost, api+"/v1/events", bytes.NewReader(order))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := heraldtest.HTTPClient(t).Do(req)
	require.NoError(t, err)
	var accepted struct{ Notifications []string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&accepted))
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.Len(t, accepted.Notifications, 2, "one email per recipient")
	for _, id := range accepted.Notifications {
		require.Eventually(t, func() bool {
			req, err := http.NewRequestWithContext(heraldtest.Context(t), http.MethodGet, api+"/v1/notifications/"+id, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := heraldtest.HTTPClient(t).Do(req)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			return resp.StatusCode == http.StatusOK
		}, 30*time.Second, 50*time.Millisecond, "notification %s", id)
	}
}

// requireFiles waits for n files matching pattern in dir — dev's sinks
// write them as deliveries arrive — and reads them as webhook deliveries
// when they are .json.
func requireFiles(t *testing.T, dir, pattern string, n int) []app.Delivery {
	t.Helper()
	var files []string
	require.Eventually(t, func() bool {
		var err error
		files, err = filepath.Glob(filepath.Join(dir, pattern))
		require.NoError(t, err)
		return len(files) >= n
	}, 30*time.Second, 50*time.Millisecond, "in %s", dir)
	require.Len(t, files, n)
	var out []app.Delivery
	for _, f := range files {
		if filepath.Ext(f) != ".json" {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var d app.Delivery
		require.NoError(t, json.Unmarshal(b, &d), "%s", b)
		out = append(out, d)
	}
	return out
}

// The banner's commands carry NATS_URL and --master-key-file only when the
// CLI, run from the same directory, would not find this dev by itself: the
// README's `go run ./services/herald dev` prints them bare.
func TestDevCommandsNeedNoSettingsUnderDefaults(t *testing.T) {
	t.Parallel()
	here, err := filepath.Abs(".herald/master.key")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, natsURL, masterKey string
		wantHerald, wantKeyFlag  string
	}{
		{"defaults", "nats://127.0.0.1:4222", here, "go run ./services/herald", ""},
		{"a key configured", "nats://127.0.0.1:4222", "", "go run ./services/herald", ""},
		{"another port", "nats://127.0.0.1:4333", here, "NATS_URL=nats://127.0.0.1:4333 go run ./services/herald", ""},
		{"another data directory", "nats://127.0.0.1:4222", "/tmp/devtry/master.key", "go run ./services/herald", " --master-key-file /tmp/devtry/master.key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			herald, keyFlag := devCLI(tc.natsURL, tc.masterKey, "nats://127.0.0.1:4222")
			require.Equal(t, tc.wantHerald, herald)
			require.Equal(t, tc.wantKeyFlag, keyFlag)
		})
	}
}
