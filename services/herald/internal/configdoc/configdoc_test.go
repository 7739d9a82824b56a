package configdoc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/herald/internal/configdoc"
)

func TestConfigurationPageIsCurrent(t *testing.T) {
	t.Parallel()
	page, err := configdoc.Herald.Page(".")
	require.NoError(t, err)
	committed, err := os.ReadFile(filepath.Join("..", "..", "..", "..", filepath.FromSlash(configdoc.Herald.File)))
	require.NoError(t, err)
	got, want := strings.Split(string(committed), "\n"), strings.Split(string(page), "\n")
	for i := range max(len(got), len(want)) {
		require.Equal(t, line(want, i), line(got, i),
			"docs/CONFIGURATION.md line %d differs from the config structs' doc comments: run `%s`", i+1, configdoc.RegenerateCommand)
	}
}

// line is lines[i], or "" past the end.
func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

func TestEveryKeyIsDocumented(t *testing.T) {
	t.Parallel()
	keys, err := configdoc.Herald.Keys(".")
	require.NoError(t, err, "add a doc comment to each field named, then run `%s`", configdoc.RegenerateCommand)
	byPath := map[string]configdoc.Key{}
	for _, k := range keys {
		byPath[k.Path] = k
	}
	// Keys declared in other packages, reached through lists, maps and
	// inlined structs, with what overrides them and the defaults an
	// embedding struct changes.
	for path, want := range map[string]configdoc.Key{
		"nats.url":                              {Type: "string", Default: "nats://127.0.0.1:4222", Env: "NATS_URL"},
		"http.listen":                           {Type: "string", Default: "127.0.0.1:8080", Flag: "http-listen"},
		"outbox.url":                            {Type: "string", Env: "OUTBOX_URL", Flag: "postgres"},
		"redis.tls.ca_file":                     {Type: "string", Default: "the system's roots"},
		"router.routes[].priority":              {Type: "string", Default: "normal"},
		"email.providers[].port":                {Type: "integer", Default: "587"},
		"webhooks.max_tries":                    {Type: "integer", Default: "15"},
		"email.max_tries":                       {Type: "integer", Default: "10"},
		"whatsapp.templates.<name>.content_sid": {Type: "string"},
		"dlq.sweep.interval":                    {Type: "duration", Default: "5 minutes"},
		"plans.<name>.monthly_quota":            {Type: "map of channel to integer"},
		"scheduling.weights":                    {Type: "map of priority to integer", Default: "critical 6, normal 3, low 1"},
		"vault.previous_key_files":              {Type: "list of strings", Default: "none"},
	} {
		got, ok := byPath[path]
		require.True(t, ok, "no key %s", path)
		require.Equal(t, want, configdoc.Key{Type: got.Type, Default: got.Default, Env: got.Env, Flag: got.Flag}, path)
	}
	require.NotContains(t, byPath, "services", "yaml:\"-\" fields are not keys")
	require.Equal(t, "email.providers[]", byPath["sms.providers"].SameAs)
}

func TestUndocumentedKeyIsNamed(t *testing.T) {
	t.Parallel()
	spec := configdoc.Spec{Package: "app", Type: "Config", Main: "cmd", Overrides: "loadConfig", Var: "cfg"}
	_, err := spec.Page(filepath.Join("testdata", "undocumented"))
	require.ErrorIs(t, err, configdoc.ErrUndocumented)
	require.ErrorContains(t, err, ": server.timeout —")
	require.NotContains(t, err.Error(), "server.listen")
}

// The page's first example is a file Herald starts with: it loads
// strictly (no misspelt key) and validates.
func TestExampleLoads(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "herald.yaml")
	require.NoError(t, os.WriteFile(path, []byte(configdoc.Example), 0o600))
	cfg, err := app.Load(path)
	require.NoError(t, err)
	require.NoError(t, cfg.WithDefaults().Validate())
	require.Equal(t, "Acme Orders <orders@acme.example>", cfg.Email.From)
}
