package email

import (
	"bytes"
	"fmt"
	netmail "net/mail"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/heraldhq/herald/shared/provider"
)

// Message is one email to one recipient.
type Message struct {
	// ID is the notification id; the Message-ID header is derived from it,
	// so every resend of a notification carries the same Message-ID.
	ID string
	// DedupeKey identifies the notification across retries; providers that
	// take an idempotency key or custom arguments receive it.
	DedupeKey   string
	Tenant      string
	From        string // "Name <address>" or a bare address
	To          string
	ToName      string
	Subject     string
	Text        string
	HTML        string // when set, sent with Text as multipart/alternative
	Attachments []Attachment
	Date        time.Time
	// ListUnsubscribe is the one-click unsubscribe link (RFC 8058) of a
	// message in a category its recipient may leave; sent as the
	// List-Unsubscribe and List-Unsubscribe-Post headers.
	ListUnsubscribe string
}

// Headers are the message's own headers beyond the addressing ones, as
// every provider sends them: name and value, in order.
func (m Message) Headers() [][2]string {
	h := [][2]string{{"X-Herald-Notification-Id", m.ID}}
	if m.ListUnsubscribe != "" {
		h = append(h, [2]string{"List-Unsubscribe", "<" + m.ListUnsubscribe + ">"},
			[2]string{"List-Unsubscribe-Post", "List-Unsubscribe=One-Click"})
	}
	return h
}

// Attachment is a file attached to a message.
type Attachment struct {
	Filename    string
	ContentType string
	Data        []byte
}

// MIME renders the message as an RFC 5322 document: UTF-8,
// quoted-printable text, base64 attachments. It is what SES takes as raw
// content and what the mail-directory sink writes to disk.
func (m Message) MIME() ([]byte, error) {
	msg, err := m.GoMail()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := msg.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("rendering MIME: %w", err)
	}
	return buf.Bytes(), nil
}

// GoMail composes the message with go-mail, for providers that hand it to
// go-mail's SMTP client. MIME renders the same composition.
func (m Message) GoMail() (*gomail.Msg, error) {
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	if err := msg.From(m.From); err != nil {
		return nil, provider.Permanentf("from %q: %w", m.From, err)
	}
	if err := msg.AddToFormat(m.ToName, m.To); err != nil {
		return nil, provider.Permanentf("to %q: %w", m.To, err)
	}
	msg.Subject(m.Subject)
	msg.SetMessageIDWithValue(m.MessageID())
	msg.SetDateWithValue(m.Date)
	for _, h := range m.Headers() {
		msg.SetGenHeader(gomail.Header(h[0]), h[1])
	}
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	}
	for _, a := range m.Attachments {
		if err := msg.AttachReader(a.Filename, bytes.NewReader(a.Data), gomail.WithFileContentType(gomail.ContentType(a.ContentType))); err != nil {
			return nil, fmt.Errorf("attaching %s: %w", a.Filename, err)
		}
	}
	return msg, nil
}

// MessageID is the Message-ID header value without angle brackets:
// the notification id at the sender's domain.
func (m Message) MessageID() string {
	domain := "herald.invalid"
	if a, err := netmail.ParseAddress(m.From); err == nil {
		if _, d, ok := strings.Cut(a.Address, "@"); ok {
			domain = d
		}
	}
	return m.ID + "@" + domain
}
