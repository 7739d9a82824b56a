// Package dnstest is a fake DNS server for tests: it answers TXT queries
// over UDP in the real wire format (RFC 1035), so Go's own resolver — and
// so the code that proves a tenant's domain — runs against it unchanged.
// A name a test has not published is NXDOMAIN; every other query type is
// answered with no records.
package dnstest

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Server is a fake DNS server on a loopback UDP port. It is safe for
// concurrent use.
type Server struct {
	conn net.PacketConn
	done chan struct{}

	mu  sync.Mutex
	txt map[string][]string
}

// New starts a server that stops when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &Server{conn: conn, done: make(chan struct{}), txt: map[string][]string{}}
	go s.serve()
	t.Cleanup(func() {
		_ = conn.Close()
		<-s.done
	})
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.conn.LocalAddr().String() }

// Resolver is Go's resolver, asking this server only.
func (s *Server) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.Addr())
	}}
}

// PublishTXT adds a TXT record at name (a value longer than 255 bytes goes
// as several strings of one record, as DNS hosts split it).
func (s *Server) PublishTXT(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name = canonical(name)
	s.txt[name] = append(s.txt[name], value)
}

func canonical(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }

func (s *Server) serve() {
	defer close(s.done)
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		if answer := s.answer(buf[:n]); answer != nil {
			_, _ = s.conn.WriteTo(answer, from)
		}
	}
}

const (
	typeTXT   = 16
	rcodeOK   = 0
	rcodeNX   = 3
	headerLen = 12
)

// answer is the response to one query, nil for what is not one.
func (s *Server) answer(q []byte) []byte {
	name, end, ok := question(q)
	if !ok {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[end-4:])
	s.mu.Lock()
	values, found := s.txt[canonical(name)]
	values = append([]string(nil), values...)
	s.mu.Unlock()
	rcode := rcodeOK
	if !found {
		rcode, values = rcodeNX, nil
	} else if qtype != typeTXT {
		values = nil
	}
	out := make([]byte, headerLen, 512)
	copy(out, q[:2])                                          // the query's id
	binary.BigEndian.PutUint16(out[2:], 0x8180|uint16(rcode)) // a response, recursion desired and available
	binary.BigEndian.PutUint16(out[4:], 1)                    // the question, echoed
	binary.BigEndian.PutUint16(out[6:], uint16(len(values)))
	out = append(out, q[headerLen:end]...)
	for _, v := range values {
		out = append(out, txtRecord(v)...)
	}
	return out
}

// question reads the query's one question: its name, and where it ends
// (after its type and class).
func question(q []byte) (string, int, bool) {
	if len(q) < headerLen || q[2]&0x80 != 0 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return "", 0, false
	}
	var labels []string
	i := headerLen
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if l > 63 || i+1+l > len(q) {
			return "", 0, false
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return "", 0, false
	}
	return strings.Join(labels, "."), i + 5, true
}

// txtRecord is one answer: the name as a pointer to the question's, type
// TXT, class IN, a minute's TTL, and the value in strings of 255 bytes.
func txtRecord(v string) []byte {
	var data []byte
	for len(v) > 0 || data == nil {
		chunk := v[:min(len(v), 255)]
		data = append(append(data, byte(len(chunk))), chunk...)
		v = v[len(chunk):]
	}
	rr := []byte{0xc0, headerLen, 0, typeTXT, 0, 1, 0, 0, 0, 60}
	rr = binary.BigEndian.AppendUint16(rr, uint16(len(data)))
	return append(rr, data...)
}
