package smtp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/smtp"
	"github.com/heraldhq/herald/services/delivery/email/smtp/smtptest"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/provider"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const secret = "SECRET-must-not-leak"

// newProvider returns a provider for srv; TLS defaults to "none", and to
// trusting srv's certificate when srv has one.
func newProvider(t *testing.T, srv *smtptest.Server, tweak func(*smtp.Config)) *smtp.Provider {
	t.Helper()
	cfg := smtp.Config{Host: srv.Host(), Port: srv.Port(), TLS: smtp.TLSNone, TLSConfig: srv.ClientTLSConfig(), HeloName: "herald.test"}
	if tweak != nil {
		tweak(&cfg)
	}
	p, err := smtp.New(cfg)
	require.NoError(t, err)
	return p
}

// requireNoLeak checks the password is in no form of the error's text.
func requireNoLeak(t *testing.T, err error) {
	t.Helper()
	for _, text := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err)} {
		require.NotContains(t, text, secret)
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{smtp.TLSNone, smtp.TLSMandatory, smtp.TLSImplicit} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			emailtest.Run(t, func(t *testing.T) emailtest.Harness {
				var opts []smtptest.Option
				switch mode {
				case smtp.TLSMandatory:
					opts = append(opts, smtptest.WithSTARTTLS())
				case smtp.TLSImplicit:
					opts = append(opts, smtptest.WithImplicitTLS())
				}
				srv := smtptest.New(t, opts...)
				return emailtest.Harness{
					Provider: newProvider(t, srv, func(c *smtp.Config) { c.TLS = mode }),
					Received: func(t *testing.T) []emailtest.Parsed {
						var out []emailtest.Parsed
						for _, r := range srv.Received() {
							require.Equal(t, mode != smtp.TLSNone, r.TLS)
							out = append(out, emailtest.Parse(t, r.Raw))
						}
						return out
					},
				}
			})
		})
	}
}

func TestEnvelopeAndReceipt(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t)
	msg := emailtest.Sample()
	receipt, err := newProvider(t, srv, nil).Send(context.Background(), msg)
	require.NoError(t, err)

	got := srv.Received()
	require.Len(t, got, 1)
	require.Equal(t, "orders@acme.example", got[0].From)
	require.Equal(t, []string{"olga@zarya.example"}, got[0].To)
	require.Equal(t, provider.Receipt{MessageID: msg.MessageID() + " (queued as " + got[0].QueueID + ")"}, receipt)
	require.Equal(t, "<"+msg.MessageID()+">", emailtest.Parse(t, got[0].Raw).MessageID)
}

func TestTLS(t *testing.T) {
	t.Parallel()
	t.Run("MandatoryWithSTARTTLS", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t, smtptest.WithSTARTTLS())
		_, err := newProvider(t, srv, func(c *smtp.Config) { c.TLS = smtp.TLSMandatory }).Send(context.Background(), emailtest.Sample())
		require.NoError(t, err)
		got := srv.Received()
		require.Len(t, got, 1)
		require.True(t, got[0].TLS)
	})
	t.Run("MandatoryIsTheDefault", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		_, err := newProvider(t, srv, func(c *smtp.Config) { c.TLS = "" }).Send(context.Background(), emailtest.Sample())
		require.ErrorContains(t, err, "does not offer STARTTLS")
	})
	t.Run("MandatoryWithoutSTARTTLSFailsTransiently", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		_, err := newProvider(t, srv, func(c *smtp.Config) { c.TLS = smtp.TLSMandatory }).Send(context.Background(), emailtest.Sample())
		require.Error(t, err)
		require.ErrorContains(t, err, srv.Addr()+` does not offer STARTTLS, and TLS is "mandatory": refusing to send in clear text`)
		require.False(t, provider.IsPermanent(err), "another provider may do TLS: %v", err)
		require.False(t, provider.IsAmbiguous(err), "nothing was sent: %v", err)
		require.Zero(t, srv.Calls())
	})
	t.Run("OpportunisticUsesSTARTTLSWhenOffered", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t, smtptest.WithSTARTTLS())
		_, err := newProvider(t, srv, func(c *smtp.Config) { c.TLS = smtp.TLSOpportunistic }).Send(context.Background(), emailtest.Sample())
		require.NoError(t, err)
		require.True(t, srv.Received()[0].TLS)
	})
	t.Run("OpportunisticSendsInClearOtherwise", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		_, err := newProvider(t, srv, func(c *smtp.Config) { c.TLS = smtp.TLSOpportunistic }).Send(context.Background(), emailtest.Sample())
		require.NoError(t, err)
		require.False(t, srv.Received()[0].TLS)
	})
	t.Run("UntrustedCertificate", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t, smtptest.WithSTARTTLS())
		_, err := newProvider(t, srv, func(c *smtp.Config) {
			c.TLS = smtp.TLSMandatory
			c.TLSConfig = nil
		}).Send(context.Background(), emailtest.Sample())
		require.ErrorContains(t, err, "STARTTLS")
		require.ErrorContains(t, err, "certificate")
		require.False(t, provider.IsPermanent(err))
		require.False(t, provider.IsAmbiguous(err))
		require.Zero(t, srv.Calls())
	})
}

func TestAuth(t *testing.T) {
	t.Parallel()
	t.Run("RightPassword", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t, smtptest.WithAuth("herald", secret))
		_, err := newProvider(t, srv, func(c *smtp.Config) { c.Username, c.Password = "herald", secret }).Send(context.Background(), emailtest.Sample())
		require.NoError(t, err)
		require.Len(t, srv.Received(), 1)
	})
	t.Run("RightPasswordOverSTARTTLS", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t, smtptest.WithAuth("herald", secret), smtptest.WithSTARTTLS())
		_, err := newProvider(t, srv, func(c *smtp.Config) {
			c.Username, c.Password, c.TLS = "herald", secret, smtp.TLSMandatory
		}).Send(context.Background(), emailtest.Sample())
		require.NoError(t, err)
		require.Len(t, srv.Received(), 1)
	})
	t.Run("WrongPasswordIsPermanent", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t, smtptest.WithAuth("herald", "the-right-one"))
		_, err := newProvider(t, srv, func(c *smtp.Config) { c.Username, c.Password = "herald", secret }).Send(context.Background(), emailtest.Sample())
		require.Error(t, err)
		require.True(t, provider.IsPermanent(err), "want permanent, got %v", err)
		require.ErrorContains(t, err, `authentication rejected for user "herald"`)
		require.ErrorContains(t, err, "535")
		requireNoLeak(t, err)
		require.Zero(t, srv.Calls())
	})
	t.Run("NoAuthOffered", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		_, err := newProvider(t, srv, func(c *smtp.Config) { c.Username, c.Password = "herald", secret }).Send(context.Background(), emailtest.Sample())
		require.Error(t, err)
		require.True(t, provider.IsPermanent(err), "want permanent, got %v", err)
		require.ErrorContains(t, err, "does not offer AUTH")
		requireNoLeak(t, err)
	})
	t.Run("WithoutCredentialsTheServerRefuses", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t, smtptest.WithAuth("herald", secret))
		_, err := newProvider(t, srv, nil).Send(context.Background(), emailtest.Sample())
		require.Error(t, err)
		require.True(t, provider.IsPermanent(err), "want permanent, got %v", err)
		require.ErrorContains(t, err, "502")
	})
	t.Run("PasswordNeverLogged", func(t *testing.T) {
		t.Parallel()
		cfg := smtp.Config{Host: "mail.example.com", Username: "herald", Password: secret}
		p, err := smtp.New(cfg)
		require.NoError(t, err)
		var logged strings.Builder
		slog.New(slog.NewTextHandler(&logged, nil)).Info("configured", "config", cfg, "provider", p)
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("configured", "config", cfg, "provider", p)
		texts := []string{logged.String()}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			texts = append(texts, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, p), fmt.Sprintf(verb, struct{ C smtp.Config }{cfg}))
		}
		for _, text := range texts {
			require.NotContains(t, text, secret)
		}
		require.Contains(t, fmt.Sprint(cfg), "[redacted]")
	})
}

func TestFaults(t *testing.T) {
	t.Parallel()
	t.Run("RejectedRecipientIsPermanent", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		srv.Faults(func(int) smtptest.Fault { return smtptest.RejectRecipient })
		_, err := newProvider(t, srv, nil).Send(context.Background(), emailtest.Sample())
		require.Error(t, err)
		require.True(t, provider.IsPermanent(err), "want permanent, got %v", err)
		require.ErrorContains(t, err, "550")
		require.ErrorContains(t, err, "5.1.1 user unknown")
		require.Empty(t, srv.Received())
	})
	t.Run("TempFailIsTransient", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		srv.Faults(func(int) smtptest.Fault { return smtptest.TempFail })
		_, err := newProvider(t, srv, nil).Send(context.Background(), emailtest.Sample())
		require.Error(t, err)
		require.ErrorContains(t, err, "451")
		require.ErrorContains(t, err, "4.3.0 try again later")
		var transient *provider.TransientError
		require.ErrorAs(t, err, &transient)
		require.False(t, provider.IsPermanent(err))
		require.False(t, provider.IsAmbiguous(err), "the server said no: %v", err)
		require.Empty(t, srv.Received())
	})
	t.Run("FaultsArePerTransaction", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		srv.Faults(func(call int) smtptest.Fault {
			if call == 1 {
				return smtptest.TempFail
			}
			return smtptest.NoFault
		})
		p := newProvider(t, srv, nil)
		_, err := p.Send(context.Background(), emailtest.Sample())
		require.Error(t, err)
		_, err = p.Send(context.Background(), emailtest.Sample())
		require.NoError(t, err)
		require.Equal(t, 2, srv.Calls())
		require.Len(t, srv.Received(), 1)
	})
	t.Run("SlowReplyPastTheDeadlineIsAmbiguous", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		// The reply is held a minute: only the deadline can end the send.
		srv.Faults(func(int) smtptest.Fault { return smtptest.Slow(time.Minute) })
		relay := newDataWatch(t, srv)
		ctx, expire := emailtest.Deadline(context.Background())
		wait := emailtest.SendInBackground(t, ctx, relay.provider(t), emailtest.Sample())
		relay.waitHandedOver(t)
		expire()
		err := wait()
		require.Error(t, err)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.True(t, provider.IsAmbiguous(err), "the whole message was sent: %v", err)
		require.False(t, provider.IsPermanent(err))
		require.Equal(t, 1, srv.Calls())
	})
	t.Run("CancelDuringSlowReplyIsAmbiguous", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		srv.Faults(func(int) smtptest.Fault { return smtptest.Slow(time.Minute) })
		relay := newDataWatch(t, srv)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		wait := emailtest.SendInBackground(t, ctx, relay.provider(t), emailtest.Sample())
		relay.waitHandedOver(t)
		cancel()
		err := wait()
		require.ErrorIs(t, err, context.Canceled)
		require.True(t, provider.IsAmbiguous(err), "the whole message was sent: %v", err)
	})
	t.Run("ConnectionRefusedIsNotAmbiguous", func(t *testing.T) {
		t.Parallel()
		port, err := heraldtest.RefusingPort(t, net.IPv4(127, 0, 0, 1))
		require.NoError(t, err)
		p, err := smtp.New(smtp.Config{Host: "127.0.0.1", Port: port, TLS: smtp.TLSNone, Username: "herald", Password: secret})
		require.NoError(t, err)
		_, err = p.Send(context.Background(), emailtest.Sample())
		require.Error(t, err)
		var transient *provider.TransientError
		require.ErrorAs(t, err, &transient)
		require.False(t, provider.IsPermanent(err))
		require.False(t, provider.IsAmbiguous(err), "nothing was sent: %v", err)
		require.ErrorContains(t, err, "refused")
		requireNoLeak(t, err)
	})
	t.Run("UnparsableRecipientSendsNothing", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		msg := emailtest.Sample()
		msg.To = "olga at zarya"
		_, err := newProvider(t, srv, nil).Send(context.Background(), msg)
		require.True(t, provider.IsPermanent(err), "want permanent, got %v", err)
		require.ErrorContains(t, err, `recipient "olga at zarya"`)
		require.Zero(t, srv.Calls())
	})
}

func TestNewNamesTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   smtp.Config
		field string
	}{
		{"NoHost", smtp.Config{}, "Host"},
		{"HostWithPort", smtp.Config{Host: "mail.example.com:587"}, "Host"},
		{"NegativePort", smtp.Config{Host: "mail.example.com", Port: -1}, "Port"},
		{"PortTooHigh", smtp.Config{Host: "mail.example.com", Port: 70000}, "Port"},
		{"UnknownTLS", smtp.Config{Host: "mail.example.com", TLS: "starttls"}, "TLS"},
		{"UsernameWithoutPassword", smtp.Config{Host: "mail.example.com", Username: "herald"}, "Password"},
		{"PasswordWithoutUsername", smtp.Config{Host: "mail.example.com", Password: secret}, "Username"},
		{"HeloWithSpace", smtp.Config{Host: "mail.example.com", HeloName: "my host"}, "HeloName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := smtp.New(tc.cfg)
			require.Error(t, err)
			require.ErrorContains(t, err, "smtp: "+tc.field+" ")
			requireNoLeak(t, err)
		})
	}
	for _, cfg := range []smtp.Config{
		{Host: "mail.example.com"},
		{Host: "::1", Port: 2525, TLS: smtp.TLSNone},
		{Host: "smtp.example.com", TLS: smtp.TLSImplicit, Username: "u", Password: "p"},
	} {
		_, err := smtp.New(cfg)
		require.NoError(t, err, "%v", cfg)
	}
}

func TestIPv6Host(t *testing.T) {
	t.Parallel()
	port, err := heraldtest.RefusingPort(t, net.IPv6loopback)
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	p, err := smtp.New(smtp.Config{Host: "::1", Port: port, TLS: smtp.TLSNone})
	require.NoError(t, err)
	_, err = p.Send(context.Background(), emailtest.Sample())
	// Refused at [::1]:port proves the address was formed right; go-mail's
	// own "host:port" would have dialed a nonsense address.
	require.ErrorContains(t, err, fmt.Sprintf("[::1]:%d", port))
	require.ErrorContains(t, err, "refused")
	require.False(t, errors.Is(err, context.DeadlineExceeded))
}

// dataWatch relays one SMTP connection to a fake server and tells when the
// client has sent the end of DATA: from then on the message is handed over,
// and a send cut short may have been queued.
type dataWatch struct {
	l          net.Listener
	handedOver chan struct{}
}

func newDataWatch(t *testing.T, srv *smtptest.Server) *dataWatch {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	w := &dataWatch{l: l, handedOver: make(chan struct{})}
	done := make(chan struct{})
	t.Cleanup(func() { _ = l.Close(); <-done })
	go func() {
		defer close(done)
		w.relay(srv.Addr())
	}()
	return w
}

// provider sends through the relay, in plain text so it can read DATA.
func (w *dataWatch) provider(t *testing.T) *smtp.Provider {
	t.Helper()
	addr := w.l.Addr().(*net.TCPAddr)
	p, err := smtp.New(smtp.Config{Host: addr.IP.String(), Port: addr.Port, TLS: smtp.TLSNone, HeloName: "herald.test"})
	require.NoError(t, err)
	return p
}

func (w *dataWatch) relay(serverAddr string) {
	client, err := w.l.Accept()
	if err != nil {
		return
	}
	defer client.Close()
	server, err := net.Dial("tcp", serverAddr)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		_, _ = io.Copy(client, server)
		_ = client.Close() // ends the copy below when the server hangs up
	}()
	var tail []byte // the end of what was relayed so far, across reads
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
			tail = append(tail, buf[:n]...)
			if bytes.Contains(tail, []byte("\r\n.\r\n")) {
				w.markHandedOver()
			}
			tail = tail[max(0, len(tail)-4):]
		}
		if err != nil {
			return
		}
	}
}

func (w *dataWatch) markHandedOver() {
	select {
	case <-w.handedOver:
	default:
		close(w.handedOver)
	}
}

func (w *dataWatch) waitHandedOver(t *testing.T) {
	t.Helper()
	select {
	case <-w.handedOver:
	case <-time.After(10 * time.Second):
		require.Fail(t, "the client never sent the end of DATA")
	}
}
