package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/suppression"
)

// requireTerminalSafe fails if out holds a byte a terminal would act on:
// any control but the line feeds that end rows, or invalid UTF-8.
func requireTerminalSafe(t *testing.T, out string) {
	t.Helper()
	require.True(t, strings.ToValidUTF8(out, "?") == out, "invalid UTF-8 in %q", out)
	for i, r := range out {
		require.False(t, r != '\n' && (r < 0x20 || r >= 0x7f && r <= 0x9f || r == '\u202e'), "%U at byte %d of %q", r, i, out)
	}
}

// A cell's control characters are shown as escapes: they neither act on
// the terminal nor break the columns.
func TestATableShowsControlCharactersAsEscapes(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	tw := newTable(&out, "ADDRESS", "DETAIL")
	tw.row("olga@zarya.example", "\x1b]0;pwned\x07\x1b[2J")
	tw.row("ivan@zarya.example\tforged", "line\nbreak\x00 \u202eevil \xff")
	tw.row("+34600111222", 42)
	require.NoError(t, tw.flush())

	requireTerminalSafe(t, out.String())
	require.Equal(t, "ADDRESS                     DETAIL\n"+
		`olga@zarya.example          \x1b]0;pwned\a\x1b[2J`+"\n"+
		`ivan@zarya.example\tforged  line\nbreak\x00 \u202eevil \xff`+"\n"+
		"+34600111222                42\n", out.String())
}

// Every table the CLI prints goes through the one printer: no command
// writes columns of its own.
func TestEveryTableIsPrintedByTheOnePrinter(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, f := range files {
		if f == "table.go" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NotContains(t, string(src), "tabwriter.", "%s prints a table of its own: use newTable", f)
	}
}

// An entry written before the store refused control characters lists
// with them escaped. Not parallel: it sets the environment.
func TestSuppressionsListEscapesWhatOlderEntriesHold(t *testing.T) {
	n, _ := vaultSetup(t)
	ctx := heraldtest.Context(t)
	kv, err := n.JS.KeyValue(ctx, suppression.Bucket)
	require.NoError(t, err)
	sum := sha256.Sum256([]byte("olga@zarya.example"))
	_, err = kv.Put(ctx, "acme."+hex.EncodeToString(sum[:16]), []byte(`{"tenant":"acme","address":"olga@zarya.example",`+
		`"reason":"manual","detail":"\u001b]0;pwned\u0007\u001b[2J","source":"api\u0000","created_at":"2026-01-05T10:00:00Z"}`))
	require.NoError(t, err)

	out, err := herald(t, "suppressions", "list", "--tenant", "acme")
	require.NoError(t, err, out)
	requireTerminalSafe(t, out)
	require.Contains(t, out, `api\x00`)
	require.Contains(t, out, `\x1b]0;pwned\a\x1b[2J`)
}
