package smtptest_test

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery/email/smtp/smtptest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const raw = "From: a@example.com\r\nTo: b@example.com\r\nSubject: hi\r\n\r\nhello\r\n"

func send(srv *smtptest.Server, auth sasl.Client) error {
	c, err := smtp.Dial(srv.Addr())
	if err != nil {
		return err
	}
	defer c.Close()
	if auth != nil {
		if err := c.Auth(auth); err != nil {
			return err
		}
	}
	return c.SendMail("a@example.com", []string{"b@example.com", "c@example.com"}, strings.NewReader(raw))
}

func TestRecords(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t)
	require.NoError(t, send(srv, nil))
	require.NoError(t, send(srv, nil))
	got := srv.Received()
	require.Len(t, got, 2)
	require.Equal(t, "a@example.com", got[0].From)
	require.Equal(t, []string{"b@example.com", "c@example.com"}, got[0].To)
	require.Equal(t, raw, string(got[0].Raw))
	require.False(t, got[0].TLS)
	require.NotEqual(t, got[0].QueueID, got[1].QueueID)
	require.Equal(t, 2, srv.Calls())
	require.Equal(t, "127.0.0.1", srv.Host())
	require.Equal(t, net.JoinHostPort(srv.Host(), strings.TrimPrefix(srv.Addr(), "127.0.0.1:")), srv.Addr())
	require.Nil(t, srv.ClientTLSConfig())
}

func TestAuth(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t, smtptest.WithAuth("user", "pass"))
	require.ErrorContains(t, send(srv, nil), "authenticate")
	require.ErrorContains(t, send(srv, sasl.NewPlainClient("", "user", "wrong")), "535")
	require.NoError(t, send(srv, sasl.NewPlainClient("", "user", "pass")))
	require.Len(t, srv.Received(), 1)
}

func TestSTARTTLS(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t, smtptest.WithSTARTTLS())
	c, err := smtp.DialStartTLS(srv.Addr(), srv.ClientTLSConfig())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(raw)))
	require.True(t, srv.Received()[0].TLS)
}

func TestFaults(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t)
	srv.Faults(func(call int) smtptest.Fault {
		return []smtptest.Fault{smtptest.RejectRecipient, smtptest.TempFail, smtptest.NoFault}[call-1]
	})
	requireReply(t, send(srv, nil), 550, smtp.EnhancedCode{5, 1, 1}, "user unknown")
	requireReply(t, send(srv, nil), 451, smtp.EnhancedCode{4, 3, 0}, "try again later")
	require.NoError(t, send(srv, nil))
	require.Equal(t, 3, srv.Calls())
	require.Len(t, srv.Received(), 1)
}

// Close called at once after New — before the server's goroutine may have
// begun to serve — returns, reports nothing, leaves nothing listening on
// the address and no goroutine behind. Not parallel: goleak sees every
// goroutine of the process, so this test runs while no other does.
func TestCloseRightAfterNew(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tb := &loggingTB{T: t}
	srv := smtptest.New(tb)
	closeWithin(t, srv, 5*time.Second)
	require.Empty(t, tb.logged(), "the server reported nothing")
	conn, err := net.Dial("tcp", srv.Addr())
	if err == nil {
		_ = conn.Close()
	}
	require.Error(t, err, "nothing listens on the address once Close returned")
}

// loggingTB is the test, but keeps what is logged through it.
type loggingTB struct {
	*testing.T
	mu    sync.Mutex
	lines []string
}

func (l *loggingTB) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *loggingTB) logged() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func TestCloseDropsIdleClients(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t)
	conn, err := net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	defer conn.Close()
	greeting, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(greeting, "220 "), greeting)
	closeWithin(t, srv, 5*time.Second)
}

func TestCloseAbandonsSlowReplies(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t)
	srv.Faults(func(int) smtptest.Fault { return smtptest.Slow(time.Hour) })
	errc := make(chan error, 1)
	go func() { errc <- send(srv, nil) }()
	require.Eventually(t, func() bool { return srv.Calls() == 1 }, 5*time.Second, 10*time.Millisecond)
	closeWithin(t, srv, 5*time.Second)
	require.Error(t, <-errc)
	require.Empty(t, srv.Received())
}

func requireReply(t *testing.T, err error, code int, enhanced smtp.EnhancedCode, text string) {
	t.Helper()
	var reply *smtp.SMTPError
	require.ErrorAs(t, err, &reply)
	require.Equal(t, code, reply.Code)
	require.Equal(t, enhanced, reply.EnhancedCode)
	require.Equal(t, text, reply.Message)
}

func closeWithin(t *testing.T, srv *smtptest.Server, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		srv.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatal("Close did not return")
	}
}
