package heraldtest

import (
	"encoding/base64"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// StoredBytes is every file under dir, concatenated: what a copy of the
// directory would give away.
func StoredBytes(t testing.TB, dir string) string {
	t.Helper()
	var all strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		all.Write(b)
		all.WriteByte(0)
		return err
	})
	require.NoError(t, err)
	return all.String()
}

// SecretForms are what would betray a secret: every 8 bytes of it, and it
// whole in base64 and hex.
func SecretForms(secret string) []string {
	forms := []string{
		base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawURLEncoding.EncodeToString([]byte(secret)),
		hex.EncodeToString([]byte(secret)),
	}
	for i := 0; i+8 <= len(secret); i++ {
		forms = append(forms, secret[i:i+8])
	}
	return forms
}

// RequireNoSecret fails the test if any form of any secret is in found,
// which is named by where. The failure says how many bytes, never which.
func RequireNoSecret(t testing.TB, found, where string, secrets ...string) {
	t.Helper()
	for i, secret := range secrets {
		for _, needle := range SecretForms(secret) {
			// Contains would print what it searched, and so the secret.
			require.False(t, strings.Contains(found, needle), "%d bytes of secret #%d are in %s", len(needle), i, where)
		}
	}
}
