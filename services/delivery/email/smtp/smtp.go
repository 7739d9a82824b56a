// Package smtp is the email provider for any SMTP server: a relay such as
// Postfix, a hosted service's SMTP endpoint, or a local catcher such as
// Mailpit when self-hosting. It sends the MIME every other provider sends,
// composed by go-mail, over one connection per message.
//
// SMTP says how far a message got, and Send's errors carry that on: a 5xx
// reply is a permanent refusal, a 4xx reply is transient, and a connection
// lost after the whole message was handed over is ambiguous — the server may
// have queued it before its reply was lost. The server's own reply text is
// kept in every error; the password never is.
package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	netmail "net/mail"
	"net/textproto"
	"regexp"
	"slices"
	"strconv"
	"strings"

	gomail "github.com/wneessen/go-mail"
	gosmtp "github.com/wneessen/go-mail/smtp"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/provider"
)

// Name is the provider's name in receipts, logs and metrics.
const Name = "smtp"

// The TLS modes of Config.TLS.
const (
	// TLSMandatory sends only after STARTTLS succeeds.
	TLSMandatory = "mandatory"
	// TLSOpportunistic uses STARTTLS when the server offers it, and sends in
	// clear text otherwise.
	TLSOpportunistic = "opportunistic"
	// TLSNone never encrypts: for a catcher on a trusted network.
	TLSNone = "none"
	// TLSImplicit speaks TLS from the first byte (SMTPS, port 465).
	TLSImplicit = "implicit"
)

// Config is one SMTP server and how to reach it.
type Config struct {
	Host string // required
	Port int    // defaults to 587, or 465 with TLS "implicit"
	// Username and Password, together, enable SMTP AUTH: PLAIN when the
	// server offers it, else LOGIN. Either is sent only over TLS or to a
	// loopback Host.
	Username string
	Password string // secret: never in errors or logs
	// TLS is "mandatory" (the default), "opportunistic", "none" or
	// "implicit".
	TLS string
	// TLSConfig replaces the default client TLS settings, e.g. to trust a
	// private CA. Its ServerName defaults to Host.
	TLSConfig *tls.Config
	// HeloName is the name sent with EHLO; it defaults to the local host name.
	HeloName string
}

// Format keeps the password out of any log line that prints the config.
func (c Config) Format(f fmt.State, _ rune) {
	password := `""`
	if c.Password != "" {
		password = "[redacted]"
	}
	fmt.Fprintf(f, "smtp.Config{Host: %q, Port: %d, Username: %q, Password: %s, TLS: %q, HeloName: %q}",
		c.Host, c.Port, c.Username, password, c.TLS, c.HeloName)
}

// LogValue keeps the password out of structured logs too: slog's JSON
// handler would otherwise marshal the Password field.
func (c Config) LogValue() slog.Value { return slog.StringValue(fmt.Sprint(c)) }

// Provider sends messages through one SMTP server.
type Provider struct {
	cfg       Config
	addr      string
	tlsConfig *tls.Config
}

// New checks cfg and returns a provider for it. It does not connect: a
// server that is down now may be up by the first send.
func New(cfg Config) (*Provider, error) {
	switch {
	case cfg.Host == "":
		return nil, errors.New("smtp: Host is required")
	case strings.ContainsAny(cfg.Host, " \t\r\n/") ||
		(strings.Contains(cfg.Host, ":") && net.ParseIP(cfg.Host) == nil):
		return nil, fmt.Errorf("smtp: Host %q must be a host name or IP address, without a port (set Port)", cfg.Host)
	case cfg.Port < 0 || cfg.Port > 65535:
		return nil, fmt.Errorf("smtp: Port %d is out of range: it must be between 1 and 65535, or 0 for the default", cfg.Port)
	case cfg.Username != "" && cfg.Password == "":
		return nil, errors.New("smtp: Password is required when Username is set; set both to authenticate, or neither")
	case cfg.Username == "" && cfg.Password != "":
		return nil, errors.New("smtp: Username is required when Password is set; set both to authenticate, or neither")
	case strings.ContainsFunc(cfg.HeloName, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return nil, fmt.Errorf("smtp: HeloName %q must be a host name, without spaces or control characters", cfg.HeloName)
	}
	switch cfg.TLS {
	case "":
		cfg.TLS = TLSMandatory
	case TLSMandatory, TLSOpportunistic, TLSNone, TLSImplicit:
	default:
		return nil, fmt.Errorf("smtp: TLS %q is not a TLS mode: use %q, %q, %q or %q",
			cfg.TLS, TLSMandatory, TLSOpportunistic, TLSNone, TLSImplicit)
	}
	if cfg.Port == 0 {
		cfg.Port = gomail.DefaultPortTLS
		if cfg.TLS == TLSImplicit {
			cfg.Port = gomail.DefaultPortSSL
		}
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLSConfig != nil {
		// Cloned so a caller changing theirs later cannot change ours.
		tlsConfig = cfg.TLSConfig.Clone()
	}
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName = cfg.Host
	}
	cfg.TLSConfig = nil
	return &Provider{cfg: cfg, addr: net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)), tlsConfig: tlsConfig}, nil
}

// Format keeps the password out of any log line that prints the provider.
func (p *Provider) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "smtp.Provider{Addr: %q, TLS: %q, Username: %q}", p.addr, p.cfg.TLS, p.cfg.Username)
}

// Send delivers msg in one SMTP session of its own. Pooling connections
// across sends can come later; one session per message keeps a failure from
// touching any other message.
//
// The receipt's message id is the Message-ID header Herald set — SMTP has no
// id of the provider's own to rely on — followed by the server's queue id
// when its reply names one: "<id>@<domain> (queued as 4Zk3xL1Qmvz9vB)".
func (p *Provider) Send(ctx context.Context, msg email.Message) (provider.Receipt, error) {
	r, err := p.send(ctx, msg)
	// Server replies are quoted verbatim, and Herald does not control what a
	// server says; this keeps an echoed password out of the error's text.
	if err != nil && p.cfg.Password != "" && strings.Contains(err.Error(), p.cfg.Password) {
		err = &redacted{err: err, secret: p.cfg.Password}
	}
	return r, err
}

func (p *Provider) send(ctx context.Context, msg email.Message) (provider.Receipt, error) {
	if _, err := netmail.ParseAddress(msg.To); err != nil {
		return provider.Receipt{}, provider.Permanentf("recipient %q is not an email address: %w", msg.To, err)
	}
	gm, err := msg.GoMail()
	if err != nil {
		return provider.Receipt{}, err
	}
	// Nothing has been sent yet, so an expired deadline here is a plain
	// transient failure, not an ambiguous one.
	if err := ctx.Err(); err != nil {
		return provider.Receipt{}, fmt.Errorf("not sent: %w", err)
	}

	s := &session{p: p, ctx: ctx}
	defer s.close()
	opts := []gomail.Option{
		gomail.WithPort(p.cfg.Port),
		gomail.WithDialContextFunc(s.dial),
		// STARTTLS and AUTH are done below, where their failures can be
		// told apart and explained; go-mail only dials and says EHLO.
		gomail.WithTLSPolicy(gomail.NoTLS),
		// A fresh connection needs no NOOP to prove it is alive, and the
		// session ends after one message, so RSET would be wasted too.
		gomail.WithoutNoop(),
		gomail.WithoutRset(),
	}
	if p.cfg.HeloName != "" {
		opts = append(opts, gomail.WithHELO(p.cfg.HeloName))
	}
	client, err := gomail.NewClient(p.cfg.Host, opts...)
	if err != nil {
		return provider.Receipt{}, fmt.Errorf("%s: setting up the SMTP client: %w", p.addr, err)
	}
	sc, err := client.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return provider.Receipt{}, s.notSent("connecting", err)
	}
	if err := s.startTLS(sc); err != nil {
		return provider.Receipt{}, err
	}
	if err := s.auth(sc); err != nil {
		return provider.Receipt{}, err
	}
	if err := client.SendWithSMTPClient(sc, gm); err != nil && !gm.IsDelivered() {
		return provider.Receipt{}, s.transactionError(err)
	}
	// The message is queued; a failed QUIT cannot take that back.
	_ = sc.Quit()

	id := msg.MessageID()
	if m := queuedAs.FindStringSubmatch(gm.ServerResponse()); m != nil {
		id += " (queued as " + m[1] + ")"
	}
	return provider.Receipt{MessageID: id}, nil
}

// queuedAs finds the queue id in a reply to DATA, as Postfix, Mailpit and
// many others give it: "2.0.0 Ok: queued as 4Zk3xL1Qmvz9vB".
var queuedAs = regexp.MustCompile(`(?i)\bqueued as <?([^\s<>]+)`)

// session is one Send's connection.
type session struct {
	p    *Provider
	ctx  context.Context
	conn net.Conn // the TCP connection, under any TLS
	stop func() bool
}

func (s *session) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	// go-mail formats "host:port" itself, which breaks IPv6 literals.
	conn, err := d.DialContext(ctx, network, s.p.addr)
	if err != nil {
		return nil, err
	}
	s.conn = conn
	// go-mail bounds each step with its own timeout, but looks at the
	// caller's context only while dialing. Closing the connection when the
	// context ends is what stops a stalled EHLO, AUTH or DATA reply.
	s.stop = context.AfterFunc(s.ctx, func() { _ = conn.Close() })
	if s.p.cfg.TLS != TLSImplicit {
		return conn, nil
	}
	tc := tls.Client(conn, s.p.tlsConfig)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
}

// close releases the connection. After a failure it is dropped without QUIT:
// the session is in no state worth ending politely.
func (s *session) close() {
	if s.stop != nil {
		s.stop()
	}
	if s.conn != nil {
		_ = s.conn.Close()
	}
}

func (s *session) startTLS(sc *gosmtp.Client) error {
	mode := s.p.cfg.TLS
	if mode != TLSMandatory && mode != TLSOpportunistic {
		return nil
	}
	if ok, _ := sc.Extension("STARTTLS"); !ok {
		if mode == TLSOpportunistic {
			return nil
		}
		return &provider.TransientError{Err: fmt.Errorf(
			"%s does not offer STARTTLS, and TLS is %q: refusing to send in clear text (set TLS to %q or %q only for a server on a trusted network)",
			s.p.addr, TLSMandatory, TLSOpportunistic, TLSNone)}
	}
	if err := sc.StartTLS(s.p.tlsConfig); err != nil {
		return s.notSent("STARTTLS", err)
	}
	return nil
}

func (s *session) auth(sc *gosmtp.Client) error {
	if s.p.cfg.Username == "" {
		return nil
	}
	ok, offered := sc.Extension("AUTH")
	if !ok {
		return provider.Permanentf("%s does not offer AUTH, but a Username is set (servers often offer AUTH only after STARTTLS)", s.p.addr)
	}
	mechs := strings.Fields(strings.ToUpper(offered))
	var a gosmtp.Auth
	switch {
	case slices.Contains(mechs, "PLAIN"):
		a = gosmtp.PlainAuth("", s.p.cfg.Username, s.p.cfg.Password, s.p.cfg.Host, false)
	case slices.Contains(mechs, "LOGIN"):
		a = gosmtp.LoginAuth(s.p.cfg.Username, s.p.cfg.Password, s.p.cfg.Host, false)
	default:
		return provider.Permanentf("%s offers AUTH %s, but only PLAIN and LOGIN are supported", s.p.addr, offered)
	}
	err := sc.Auth(a)
	var reply *textproto.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &reply) && reply.Code >= 500:
		return provider.Permanentf("%s: authentication rejected for user %q: %w", s.p.addr, s.p.cfg.Username, err)
	case errors.Is(err, gosmtp.ErrUnencrypted):
		return provider.Permanentf("%s: refusing to send the password over an unencrypted connection (TLS is %q); use TLS %q or %q",
			s.p.addr, s.p.cfg.TLS, TLSMandatory, TLSImplicit)
	case errors.Is(err, gosmtp.ErrUnexpectedServerChallange) || errors.Is(err, gosmtp.ErrUnexpectedServerResponse):
		return provider.Permanentf("%s: authentication rejected for user %q: %w", s.p.addr, s.p.cfg.Username, err)
	}
	return s.notSent("AUTH", err)
}

// transactionError classifies a failure of MAIL, RCPT or DATA.
func (s *session) transactionError(err error) error {
	var se *gomail.SendError
	if !errors.As(err, &se) {
		return s.lost(err, true)
	}
	switch code := se.ErrorCode(); {
	case code >= 500:
		return provider.Permanent(fmt.Errorf("%s refused the message: %w", s.p.addr, se))
	case code >= 400:
		return &provider.TransientError{Err: fmt.Errorf("%s deferred the message: %w", s.p.addr, se)}
	}
	switch se.Reason {
	case gomail.ErrGetSender, gomail.ErrGetRcpts, gomail.ErrNoUnencoded:
		return provider.Permanent(fmt.Errorf("%s: %w", s.p.addr, se))
	case gomail.ErrWriteContent, gomail.ErrSMTPDataClose:
		return s.lost(se, true)
	}
	return s.lost(se, false)
}

// notSent classifies a failure before any of the message was sent: the
// server cannot have accepted it, whatever the failure was.
func (s *session) notSent(step string, err error) error {
	var reply *textproto.Error
	if errors.As(err, &reply) {
		// A refusal at connection level (a 554 greeting, a STARTTLS the
		// server cannot do) is about this server, not this message: another
		// provider, or a later try, may well succeed.
		return &provider.TransientError{Err: fmt.Errorf("%s: %s: %w", s.p.addr, step, err)}
	}
	return s.lost(fmt.Errorf("%s: %w", step, err), false)
}

// lost classifies a connection that failed without an SMTP reply. Whether
// the message may have been accepted depends on how far it got, which SMTP
// tells better than the error's type: before the end of DATA was sent the
// server cannot have queued it; once it was sent, it may have.
func (s *session) lost(err error, handedOver bool) error {
	if cerr := s.ctx.Err(); cerr != nil {
		// The error itself only says the connection was closed: by us.
		err = fmt.Errorf("%s: %w; closed the connection, interrupting: %w", s.p.addr, cerr, err)
	} else {
		err = fmt.Errorf("%s: %w", s.p.addr, err)
	}
	e := provider.NetworkError(err)
	var t *provider.TransientError
	if errors.As(e, &t) {
		t.Ambiguous = handedOver
	}
	return e
}

// redacted keeps an error's classification but not the secret in its text.
type redacted struct {
	err    error
	secret string
}

func (r *redacted) Error() string { return strings.ReplaceAll(r.err.Error(), r.secret, "[redacted]") }
func (r *redacted) Unwrap() error { return r.err }
