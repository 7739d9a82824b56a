package heraldtest

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// ServerOfVersion starts a stand-in for a nats-server that says it is
// version — an older release, which no embedded server can be. It greets
// each client as a server does (INFO) and answers its PINGs, enough for
// nats.Connect to succeed and ConnectedServerVersion to report version;
// it serves nothing else. It stops when the test ends; the result is its
// URL.
func ServerOfVersion(t testing.TB, version string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	info := fmt.Sprintf("INFO {\"server_id\":\"stand-in\",\"server_name\":\"stand-in\",\"version\":%q,\"proto\":1,"+
		"\"headers\":true,\"jetstream\":true,\"max_payload\":1048576}\r\n", version)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	closed := false
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			if closed { // accepted as the test ended: greet returns at once
				_ = c.Close()
			}
			mu.Unlock()
			wg.Go(func() { greet(c, info) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "nats://" + ln.Addr().String()
}

// greet speaks the server's side of a connection: INFO, then PONG to each
// PING, until the client or the test closes it.
func greet(c net.Conn, info string) {
	defer func() { _ = c.Close() }()
	if _, err := c.Write([]byte(info)); err != nil {
		return
	}
	lines := bufio.NewScanner(c)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "PING") {
			if _, err := c.Write([]byte("PONG\r\n")); err != nil {
				return
			}
		}
	}
}
