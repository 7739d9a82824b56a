package heraldtest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// RedisServer is a redis-server process of the test's own, for tests that
// restart Redis: restarting REDIS_URL's server would break every test that
// shares it. It listens on a unix socket in t.TempDir() — no TCP port that
// another test could take while it is down — and keeps nothing on disk, so
// a restart loses every key, as a Redis without persistence does.
type RedisServer struct {
	t    testing.TB
	bin  string
	dir  string
	sock string
	cmd  *exec.Cmd
}

// StartRedisServer starts a redis-server for this test; it is killed when
// the test ends. Without a redis-server binary the test is skipped — unless
// REDIS_URL is set or in CI (CI=true), where a real Redis is promised and
// its absence is a failure.
func StartRedisServer(t testing.TB) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("REDIS_URL") != "" || os.Getenv("CI") != "" {
			t.Fatal("redis-server is missing: install redis-server (REDIS_URL is set, so a real Redis is expected)")
		}
		t.Skip("redis-server not installed (apt-get install redis-server)")
	}
	dir := t.TempDir()
	r := &RedisServer{t: t, bin: bin, dir: dir, sock: filepath.Join(dir, "redis.sock")}
	// sun_path holds 108 bytes on Linux, 104 on macOS.
	require.Less(t, len(r.sock), 104, "socket path too long for a unix socket: %s (shorten TMPDIR)", r.sock)
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// URL is the server's address for Herald's redis.url and redis.ParseURL.
func (r *RedisServer) URL() string { return "unix://" + r.sock }

// Start starts the server, empty, on its socket, and returns once it
// answers PING.
func (r *RedisServer) Start() {
	r.t.Helper()
	require.Nil(r.t, r.cmd, "redis-server is already running")
	logFile := filepath.Join(r.dir, "redis.log")
	cmd := exec.Command(r.bin, "--port", "0", "--unixsocket", r.sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--logfile", logFile)
	require.NoError(r.t, cmd.Start(), "starting redis-server")
	r.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for !r.answers() {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			r.t.Fatalf("redis-server did not answer on %s within 10s; its log:\n%s", r.sock, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop kills the server — no shutdown, as when its process dies — and
// waits until it is gone. Clients see refused connections until Start.
func (r *RedisServer) Stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
	// redis-server replaces a stale socket file itself; removing it makes
	// "down" mean "no such socket" at once.
	_ = os.Remove(r.sock)
}

// Restart kills the server and starts it again on the same socket, empty.
func (r *RedisServer) Restart() {
	r.t.Helper()
	r.Stop()
	r.Start()
}

// answers reports whether the server replies to PING on its socket.
func (r *RedisServer) answers() bool {
	conn, err := net.DialTimeout("unix", r.sock, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}
