package heraldtest

import (
	"crypto/rand"
	"database/sql"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/stretchr/testify/require"
)

// PostgresURL is POSTGRES_URL with a schema of the test's own first on the
// search path, dropped when the test ends; "" without POSTGRES_URL, which
// CI always sets (.ci/run starts a throwaway cluster).
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv("POSTGRES_URL")
	if base == "" {
		if os.Getenv("CI") != "" {
			tb.Fatal("CI runs every database test on PostgreSQL too: .ci/run exports POSTGRES_URL")
		}
		return ""
	}
	schema := "t_" + strings.ToLower(rand.Text()[:12])
	admin, err := sql.Open("pgx", base)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = admin.Close() })
	_, err = admin.Exec("CREATE SCHEMA " + schema)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		_, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		require.NoError(tb, err)
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}
