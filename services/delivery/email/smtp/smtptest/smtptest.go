// Package smtptest runs a real SMTP server in process, on loopback, for tests
// of code that sends mail. It speaks the protocol through emersion/go-smtp,
// so clients meet real replies, real STARTTLS and real AUTH rather than a
// mock's idea of them.
//
// The server records every message it accepts, and can misbehave on cue — a
// refused recipient, a temporary failure, a reply that comes too late — so a
// test can check how a client classifies each failure.
package smtptest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"
)

// Received is one message the server accepted.
type Received struct {
	From string   // envelope sender (MAIL FROM)
	To   []string // envelope recipients (RCPT TO)
	Raw  []byte   // the message as transmitted after DATA
	// QueueID is what the server named the message in its reply
	// ("250 2.0.0 OK: queued as <QueueID>"), as Postfix and Mailpit do.
	QueueID string
	// TLS reports whether the message arrived over an encrypted connection.
	TLS bool
}

// Fault is how the server misbehaves in one transaction. The zero Fault is
// no misbehaviour.
type Fault struct {
	kind  faultKind
	delay time.Duration
}

type faultKind int

const (
	none faultKind = iota
	rejectRecipient
	tempFail
	slow
)

var (
	// NoFault lets the transaction succeed.
	NoFault = Fault{}
	// RejectRecipient answers RCPT TO with "550 5.1.1 user unknown".
	RejectRecipient = Fault{kind: rejectRecipient}
	// TempFail answers the end of DATA with "451 4.3.0 try again later".
	TempFail = Fault{kind: tempFail}
)

// Slow holds back the reply to DATA for d, and then accepts the message.
// Closing the server in the meantime abandons it: no reply, nothing
// recorded. A client that hangs up is not noticed until d has passed, and
// the message is then recorded — as a real server may commit a message its
// client has given up on, which is what makes such a failure ambiguous.
func Slow(d time.Duration) Fault { return Fault{kind: slow, delay: d} }

func (f Fault) String() string {
	switch f.kind {
	case rejectRecipient:
		return "RejectRecipient"
	case tempFail:
		return "TempFail"
	case slow:
		return "Slow(" + f.delay.String() + ")"
	}
	return "NoFault"
}

// Option configures a Server.
type Option func(*options)

type options struct {
	username, password string
	startTLS           bool
	implicitTLS        bool
}

// WithAuth offers AUTH PLAIN and refuses MAIL FROM until a client has
// authenticated with username and password. It is offered without TLS too,
// as the server only listens on loopback.
func WithAuth(username, password string) Option {
	return func(o *options) { o.username, o.password = username, password }
}

// WithSTARTTLS offers STARTTLS with a self-signed certificate for 127.0.0.1,
// ::1 and localhost; ClientTLSConfig trusts it.
func WithSTARTTLS() Option { return func(o *options) { o.startTLS = true } }

// WithImplicitTLS makes the server speak TLS from the first byte (SMTPS, as
// on port 465), with the same certificate as WithSTARTTLS.
func WithImplicitTLS() Option { return func(o *options) { o.implicitTLS = true } }

// Server is an SMTP server on 127.0.0.1. It is safe for concurrent use.
type Server struct {
	tb        testing.TB
	srv       *smtp.Server
	listener  net.Listener
	addr      *net.TCPAddr
	opts      options
	clientTLS *tls.Config

	closing   chan struct{} // closed when Close begins: releases Slow replies
	served    chan struct{} // closed when Serve has returned
	closeOnce sync.Once

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	received []Received
	calls    int
	faults   func(call int) Fault
	closed   bool // after Close, nothing may log through tb
}

// New starts a server; it is closed when the test ends.
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := &Server{
		tb:      tb,
		closing: make(chan struct{}),
		served:  make(chan struct{}),
		conns:   map[net.Conn]struct{}{},
	}
	for _, opt := range opts {
		opt(&s.opts)
	}

	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{s: s, conn: c, done: make(chan struct{})}, nil
	}))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ErrorLog = logger{s}
	s.srv = srv

	var serverTLS *tls.Config
	if s.opts.startTLS || s.opts.implicitTLS {
		cert, err := certificate()
		require.NoError(tb, err, "smtptest: generating a certificate")
		serverTLS = &tls.Config{Certificates: []tls.Certificate{cert.tls}, MinVersion: tls.VersionTLS12}
		pool := x509.NewCertPool()
		pool.AddCert(cert.leaf)
		s.clientTLS = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	}
	if s.opts.startTLS {
		srv.TLSConfig = serverTLS
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err, "smtptest: listening")
	s.listener = ln
	s.addr = ln.Addr().(*net.TCPAddr)
	var l net.Listener = &trackingListener{Listener: ln, s: s}
	if s.opts.implicitTLS {
		l = tls.NewListener(l, serverTLS)
	}
	go func() {
		defer close(s.served)
		if err := srv.Serve(l); err != nil && !s.isClosing() {
			s.logf("serve: %v", err)
		}
	}()
	tb.Cleanup(s.Close)
	return s
}

// Addr is the server's "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr.String() }

// Host is "127.0.0.1".
func (s *Server) Host() string { return s.addr.IP.String() }

// Port is the port the server listens on.
func (s *Server) Port() int { return s.addr.Port }

// ClientTLSConfig returns a client configuration that trusts the server's
// certificate, or nil when the server offers no TLS.
func (s *Server) ClientTLSConfig() *tls.Config {
	if s.clientTLS == nil {
		return nil
	}
	return s.clientTLS.Clone()
}

// Faults decides the misbehaviour of each transaction from its number,
// counted from 1 across the server's life (see Calls). A nil fn means no
// faults.
func (s *Server) Faults(fn func(call int) Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = fn
}

// Calls is how many transactions were begun: every MAIL FROM the server
// accepted, whether or not a message followed.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Received returns a copy of every message accepted so far, in order.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Received, len(s.received))
	for i, r := range s.received {
		r.To = slices.Clone(r.To)
		r.Raw = slices.Clone(r.Raw)
		out[i] = r
	}
	return out
}

// Close stops the server and waits for every connection to finish, so no
// goroutine outlives it. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		// Closing the listener ourselves, before Shutdown, stops Serve even
		// if it has not yet registered the listener with go-smtp.
		_ = s.listener.Close()
		<-s.served
		// go-smtp's Close drops connections without waiting for their
		// goroutines, and Shutdown waits without dropping them: dropping
		// them here, then Shutdown, gives both.
		s.mu.Lock()
		conns := make([]net.Conn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
		_ = s.srv.Shutdown(context.Background())
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
	})
}

func (s *Server) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

func (s *Server) begin() (int, Fault) {
	s.mu.Lock()
	s.calls++
	call, fn := s.calls, s.faults
	s.mu.Unlock()
	if fn == nil {
		return call, NoFault
	}
	return call, fn(call)
}

func (s *Server) record(r Received) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.QueueID = "SMTPTEST" + strconv.Itoa(len(s.received)+1)
	s.received = append(s.received, r)
	return r.QueueID
}

func (s *Server) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// testing panics on a log after the test has ended.
	if !s.closed {
		s.tb.Logf("smtptest: "+format, args...)
	}
}

type logger struct{ s *Server }

func (l logger) Printf(format string, v ...any) { l.s.logf(format, v...) }
func (l logger) Println(v ...any)               { l.s.logf("%s", fmt.Sprint(v...)) }

// trackingListener remembers open connections so Close can drop them:
// go-smtp does not expose its own list.
type trackingListener struct {
	net.Listener
	s *Server
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, s: l.s}
	l.s.mu.Lock()
	l.s.conns[tc] = struct{}{}
	l.s.mu.Unlock()
	return tc, nil
}

type trackedConn struct {
	net.Conn
	s *Server
}

func (c *trackedConn) Close() error {
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}

var (
	errUserUnknown   = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "user unknown"}
	errTryAgainLater = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	errAbandoned     = errors.New("smtptest: session closed before the reply")
)

// session is one SMTP session; go-smtp starts a new one after STARTTLS.
// Its methods run on the connection's goroutine, except Logout.
type session struct {
	s      *Server
	conn   *smtp.Conn
	authed bool
	from   string
	to     []string
	fault  Fault

	done     chan struct{}
	doneOnce sync.Once
}

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if ss.s.opts.username == "" || mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if (identity != "" && identity != username) || username != ss.s.opts.username || password != ss.s.opts.password {
			return smtp.ErrAuthFailed
		}
		ss.authed = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.username != "" && !ss.authed {
		return smtp.ErrAuthRequired
	}
	_, ss.fault = ss.s.begin()
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if ss.fault.kind == rejectRecipient {
		return errUserUnknown
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	switch ss.fault.kind {
	case tempFail:
		return errTryAgainLater
	case slow:
		t := time.NewTimer(ss.fault.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ss.done:
			return errAbandoned
		case <-ss.s.closing:
			return errAbandoned
		}
	}
	_, isTLS := ss.conn.TLSConnectionState()
	id := ss.s.record(Received{From: ss.from, To: slices.Clone(ss.to), Raw: raw, TLS: isTLS})
	// go-smtp only lets Data choose its reply through an error; a 250
	// "error" is how the reply names the queue id, as real servers do.
	return &smtp.SMTPError{Code: 250, EnhancedCode: smtp.EnhancedCode{2, 0, 0}, Message: "OK: queued as " + id}
}

func (ss *session) Reset() {
	ss.from, ss.to, ss.fault = "", nil, NoFault
}

func (ss *session) Logout() error {
	ss.doneOnce.Do(func() { close(ss.done) })
	return nil
}

type cert struct {
	tls  tls.Certificate
	leaf *x509.Certificate
}

// certificate is made once per test binary: every server may share it, and
// key generation is the slow part of starting one.
var certificate = sync.OnceValues(func() (cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return cert{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return cert{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "smtptest"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return cert{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return cert{}, err
	}
	return cert{tls: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, leaf: leaf}, nil
})
