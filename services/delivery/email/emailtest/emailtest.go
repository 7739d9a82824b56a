// Package emailtest is the conformance suite every email provider passes:
// what it accepts it delivers intact (headers, UTF-8 text, attachments) and
// confirms with a message id; what it refuses it refuses with an error.
//
// A provider's test supplies a Harness: the provider under test and a way to
// read back what reached the far side (a directory, a fake API speaking the
// provider's wire format, an SMTP server) as a mail client would show it.
package emailtest

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/provider"
)

// Harness connects the suite to one provider.
type Harness struct {
	Provider email.Provider
	// Received returns every message that reached the far side so far.
	// Providers that deliver MIME use Parse to build it.
	Received func(t *testing.T) []Parsed
}

// Run runs the suite. setup is called once per subtest for a fresh harness.
func Run(t *testing.T, setup func(t *testing.T) Harness) {
	t.Run("DeliversIntactAndConfirms", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		msg := Sample()
		receipt, err := h.Provider.Send(context.Background(), msg)
		require.NoError(t, err)
		require.NotEmpty(t, receipt.MessageID, "a receipt must carry the provider's message id")
		require.Empty(t, receipt.Provider, "the chain names the provider in a receipt, as it knows it, not the provider itself")

		got := h.Received(t)
		require.Len(t, got, 1)
		parsed := got[0]
		require.Equal(t, msg.Subject, parsed.Subject)
		require.Equal(t, msg.To, parsed.To)
		require.Equal(t, "orders@acme.example", parsed.From)
		require.Equal(t, "<"+msg.MessageID()+">", parsed.MessageID)
		require.Contains(t, parsed.Text, "Кефир 0,5 л — 48 ud")
		require.Equal(t, map[string][]byte{"PO-2026-0042.pdf": msg.Attachments[0].Data}, parsed.Attachments)
	})
	t.Run("HTMLTravelsWithText", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		msg := Sample()
		msg.HTML = "<p>Здравствуйте! <b>Кефир</b> 0,5 л</p>"
		_, err := h.Provider.Send(context.Background(), msg)
		require.NoError(t, err)
		got := h.Received(t)
		require.Len(t, got, 1)
		crlf := strings.NewReplacer("\r\n", "\n") // MIME's line ends
		require.Equal(t, msg.Text, crlf.Replace(got[0].Text))
		require.Equal(t, msg.HTML, crlf.Replace(got[0].HTML))
		require.Equal(t, map[string][]byte{"PO-2026-0042.pdf": msg.Attachments[0].Data}, got[0].Attachments)
	})
	t.Run("EverySendIsSeparate", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		first, err := h.Provider.Send(context.Background(), Sample())
		require.NoError(t, err)
		second, err := h.Provider.Send(context.Background(), Sample())
		require.NoError(t, err)
		require.NotEqual(t, first.MessageID, second.MessageID)
		require.Len(t, h.Received(t), 2, "a provider must not hide a resend; deduplication is Herald's job")
	})
	t.Run("CancelledContextSendsNothing", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := h.Provider.Send(ctx, Sample())
		require.Error(t, err)
		require.Empty(t, h.Received(t))
	})
	t.Run("InvalidRecipientIsPermanent", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		msg := Sample()
		msg.To = "not an address"
		_, err := h.Provider.Send(context.Background(), msg)
		require.Error(t, err)
		require.True(t, provider.IsPermanent(err), "want a permanent error, got %v", err)
		require.Empty(t, h.Received(t))
	})
}

// Sample is a message that exercises what providers get wrong: a UTF-8
// display name and subject, non-ASCII text, a binary attachment.
func Sample() email.Message {
	return email.Message{
		ID:        "ntf_0123456789abcdef01234567",
		DedupeKey: "acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example",
		Tenant:    "acme",
		From:      "Orders <orders@acme.example>",
		To:        "olga@zarya.example",
		ToName:    "Ольга Петрова",
		Subject:   "Заказ на закупку PO-2026-0042 от Frutas del Sur S.L.",
		Text:      "Здравствуйте!\n\nКефир 0,5 л — 48 ud\n",
		Attachments: []email.Attachment{{
			Filename: "PO-2026-0042.pdf", ContentType: "application/pdf",
			Data: []byte("%PDF-1.7\n\x00\x01\x02binary\xff\n%%EOF\n"),
		}},
		Date: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
	}
}

// Parsed is a message as a mail client shows it.
type Parsed struct {
	Subject, From, To, MessageID, Text, HTML string
	Header                                   mail.Header
	Attachments                              map[string][]byte
}

// Parse reads a MIME message the way a mail client would: decoded headers,
// decoded text, attachments by file name.
func Parse(t *testing.T, raw []byte) Parsed {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	require.NoError(t, err)
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(m.Header.Get("Subject"))
	require.NoError(t, err)
	to, err := mail.ParseAddress(m.Header.Get("To"))
	require.NoError(t, err)
	from, err := mail.ParseAddress(m.Header.Get("From"))
	require.NoError(t, err)
	p := Parsed{Subject: subject, From: from.Address, To: to.Address, MessageID: m.Header.Get("Message-Id"),
		Header: m.Header, Attachments: map[string][]byte{}}
	walk(t, m.Header.Get("Content-Type"), m.Header.Get("Content-Transfer-Encoding"), "", m.Body, &p)
	return p
}

func walk(t *testing.T, contentType, encoding, disposition string, body io.Reader, p *Parsed) {
	t.Helper()
	mediaType, params, err := mime.ParseMediaType(contentType)
	require.NoError(t, err)
	if strings.HasPrefix(mediaType, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			part, err := mr.NextRawPart()
			if err == io.EOF {
				return
			}
			require.NoError(t, err)
			walk(t, part.Header.Get("Content-Type"), part.Header.Get("Content-Transfer-Encoding"), part.Header.Get("Content-Disposition"), part, p)
		}
	}
	data := decodeBody(t, encoding, body)
	if _, dparams, err := mime.ParseMediaType(disposition); err == nil && dparams["filename"] != "" {
		p.Attachments[dparams["filename"]] = data
		return
	}
	switch mediaType {
	case "text/plain":
		p.Text += string(data)
	case "text/html":
		p.HTML += string(data)
	}
}
