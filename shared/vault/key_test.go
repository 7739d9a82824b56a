package vault_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// newKey is a random key, with its raw bytes for the test to encode.
func newKey(t *testing.T) (vault.Key, []byte) {
	t.Helper()
	raw := make([]byte, vault.KeySize)
	_, _ = rand.Read(raw)
	k, err := vault.ParseKey(raw)
	require.NoError(t, err)
	return k, raw
}

// keyring holds keys, the first current.
func keyring(t *testing.T, keys ...vault.Key) *vault.Keyring {
	t.Helper()
	r, err := vault.NewKeyring(keys[0], keys[1:]...)
	require.NoError(t, err)
	return r
}

// The same key in any accepted encoding is the same key: the same id.
func TestParseKeyTakesRawAndBase64(t *testing.T) {
	t.Parallel()
	k, raw := newKey(t)
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{8}$`), k.ID())
	for name, text := range map[string]string{
		"standard, with newline": base64.StdEncoding.EncodeToString(raw) + "\n",
		"URL, unpadded":          base64.RawURLEncoding.EncodeToString(raw),
	} {
		again, err := vault.ParseKey([]byte(text))
		require.NoError(t, err, name)
		require.Equal(t, k.ID(), again.ID(), name)
	}
	other, _ := newKey(t)
	require.NotEqual(t, k.ID(), other.ID())
	require.False(t, strings.Contains(hex.EncodeToString(raw), k.ID()), "the id is no part of the key")
}

func TestParseKeyRefusesOtherSizesWithoutQuotingThem(t *testing.T) {
	t.Parallel()
	short := base64.StdEncoding.EncodeToString([]byte("sixteen byte key"))
	for _, in := range []string{short, "not base64 at all, and long enough to be mistaken", string(make([]byte, 31))} {
		_, err := vault.ParseKey([]byte(in))
		require.ErrorContains(t, err, "a master key is base64 of 32 bytes, or 32 raw bytes")
		require.NotContains(t, err.Error(), in)
	}
}

func TestLoadKey(t *testing.T) {
	t.Parallel()
	k, raw := newKey(t)
	env := map[string]string{"HERALD_MASTER_KEY": base64.StdEncoding.EncodeToString(raw), "BAD_KEY": "c2VjcmV0LWJ1dC1zaG9ydA=="}
	getenv := func(name string) string { return env[name] }

	got, err := vault.LoadKey(vault.Config{}, getenv)
	require.NoError(t, err, "HERALD_MASTER_KEY by default")
	require.Equal(t, k.ID(), got.ID())

	_, err = vault.LoadKey(vault.Config{MasterKeyEnv: "UNSET"}, getenv)
	require.ErrorIs(t, err, vault.ErrNoKey)
	require.ErrorContains(t, err, "vault.master_key_env: UNSET is not set")

	_, err = vault.LoadKey(vault.Config{MasterKeyEnv: "BAD_KEY"}, getenv)
	require.ErrorContains(t, err, "vault.master_key_env: BAD_KEY: vault: a master key is base64")
	require.NotContains(t, err.Error(), env["BAD_KEY"])

	file := filepath.Join(t.TempDir(), "master.key")
	fromFile, err := vault.GenerateKeyFile(file)
	require.NoError(t, err)
	got, err = vault.LoadKey(vault.Config{MasterKeyFile: file}, getenv)
	require.NoError(t, err)
	require.Equal(t, fromFile.ID(), got.ID(), "the file wins over the variable")

	_, err = vault.LoadKey(vault.Config{MasterKeyFile: file + ".missing"}, getenv)
	require.ErrorContains(t, err, "vault.master_key_file: open ")
	require.NotErrorIs(t, err, vault.ErrNoKey, "a file named but missing is a mistake, not an absence")
}

func TestLoadKeyringHoldsThePreviousKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	current, err := vault.GenerateKeyFile(filepath.Join(dir, "new.key"))
	require.NoError(t, err)
	previous, err := vault.GenerateKeyFile(filepath.Join(dir, "old.key"))
	require.NoError(t, err)

	r, err := vault.LoadKeyring(vault.Config{MasterKeyFile: filepath.Join(dir, "new.key"), PreviousKeyFiles: []string{filepath.Join(dir, "old.key")}}, nil)
	require.NoError(t, err)
	require.Equal(t, current.ID(), r.Current().ID())
	require.ElementsMatch(t, []string{current.ID(), previous.ID()}, r.IDs())

	_, err = vault.LoadKeyring(vault.Config{MasterKeyFile: filepath.Join(dir, "new.key"), PreviousKeyFiles: []string{filepath.Join(dir, "gone.key")}}, nil)
	require.ErrorContains(t, err, "vault.previous_key_files[0]: open ")
}

func TestGenerateKeyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "master.key")
	k, err := vault.GenerateKeyFile(path)
	require.NoError(t, err)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "readable by its owner only")
	again, err := vault.ReadKeyFile(path)
	require.NoError(t, err)
	require.Equal(t, k.ID(), again.ID())

	before, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = vault.GenerateKeyFile(path)
	require.ErrorContains(t, err, "exists already; it is never replaced")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after)

	other, err := vault.GenerateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	require.NotEqual(t, k.ID(), other.ID(), "every key is new")
}

func TestConfig(t *testing.T) {
	t.Parallel()
	cfg := vault.Config{}.WithDefaults()
	require.Equal(t, "HERALD_MASTER_KEY", cfg.MasterKeyEnv)
	require.NoError(t, cfg.Validate())

	err := vault.Config{MasterKeyEnv: "HERALD-KEY", MasterKeyFile: " key", PreviousKeyFiles: []string{""}}.Validate()
	require.EqualError(t, err, `vault.master_key_env: "HERALD-KEY" is not an environment variable name
vault.master_key_file: " key" has spaces around it
vault.previous_key_files[0]: is empty`)
}

// Printed, logged or marshalled, a key shows its id and nothing else.
func TestKeyNeverPrintsItsBytes(t *testing.T) {
	t.Parallel()
	k, raw := newKey(t)
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("loaded", "key", k)
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("loaded", "key", k)
	out := logged.String() + fmt.Sprintf("%v %+v %#v %s %x %X %q %d", k, k, k, k, k, k, k, k)
	b, err := json.Marshal(struct{ Key vault.Key }{k})
	require.NoError(t, err)
	out += string(b)
	require.Contains(t, out, "vault key "+k.ID())
	for _, enc := range []string{string(raw), hex.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw)} {
		require.False(t, strings.Contains(out, enc), "the key is printed")
	}
}
