package heraldtest

import (
	"cmp"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
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

// PostgresServer is a PostgreSQL cluster of the test's own, for tests that
// restart the database: restarting POSTGRES_URL's server would break every
// test that shares it. It listens on a unix socket in a directory of its
// own, keeps its data there, and is stopped and removed when the test ends.
type PostgresServer struct {
	t   testing.TB
	bin string // the directory of initdb and pg_ctl
	dir string
}

// StartPostgresServer creates and starts a cluster. Without PostgreSQL's
// server binaries the test is skipped — in CI, where .ci/run installs
// them, it fails. Run as root, the cluster belongs to the postgres user,
// as initdb refuses to run as root.
func StartPostgresServer(t testing.TB) *PostgresServer {
	t.Helper()
	bin := postgresBin()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("PostgreSQL's server binaries are missing: .ci/run installs the postgresql package")
		}
		t.Skip("PostgreSQL is not installed (apt-get install postgresql)")
	}
	dir, err := os.MkdirTemp("", "herald-pg-")
	require.NoError(t, err)
	p := &PostgresServer{t: t, bin: bin, dir: dir}
	t.Cleanup(func() {
		_ = p.pgctl("stop", "-m", "immediate")
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		require.NoError(t, err, "running as root, the cluster needs the postgres user")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(dir, uid, gid))
	}
	out, err := p.command(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "herald",
		"--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput()
	require.NoError(t, err, "initdb: %s", out)
	p.Start()
	return p
}

// URL is the cluster's address, for pgx and database/sql.
func (p *PostgresServer) URL() string {
	return "postgres://herald@/postgres?host=" + url.QueryEscape(p.dir) + "&sslmode=disable"
}

// Start starts the cluster and returns once it accepts connections.
func (p *PostgresServer) Start() {
	p.t.Helper()
	require.NoError(p.t, p.pgctl("start", "-w", "-l", filepath.Join(p.dir, "log"),
		"-o", "-c listen_addresses='' -c unix_socket_directories="+p.dir+" -c fsync=off"))
}

// Restart stops the cluster at once, as a crash would (every connection
// cut, nothing flushed gracefully), and starts it again.
func (p *PostgresServer) Restart() {
	p.t.Helper()
	require.NoError(p.t, p.pgctl("stop", "-w", "-m", "immediate"))
	p.Start()
}

func (p *PostgresServer) pgctl(args ...string) error {
	out, err := p.command(filepath.Join(p.bin, "pg_ctl"), append([]string{"-D", filepath.Join(p.dir, "data")}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %w: %s", args[0], err, out)
	}
	return nil
}

// command runs as the postgres user when the test runs as root.
func (p *PostgresServer) command(name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

// postgresBin is the directory of initdb: on the PATH, or where Debian
// puts the newest version.
func postgresBin() string {
	if path, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(path)
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return ""
	}
	slices.SortFunc(found, func(a, b string) int { return cmp.Compare(version(a), version(b)) })
	return filepath.Dir(found[len(found)-1])
}

// version is the major version in /usr/lib/postgresql/<version>/bin/initdb.
func version(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}
