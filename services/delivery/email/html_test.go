package email_test

import (
	"bytes"
	"encoding/base64"
	"html"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email"
)

// part is one leaf of a MIME message, decoded.
type part struct {
	mediaType, filename string
	body                []byte
}

// mimeParts reads raw as a mail client would and returns its media type,
// the media type of its first part (the alternative), and the leaves: the
// alternative's parts, then the attachments.
func mimeParts(t *testing.T, raw []byte) (top, first string, leaves []part) {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	require.NoError(t, err)
	top, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	require.NoError(t, err)
	mixed := multipart.NewReader(m.Body, params["boundary"])
	for i := 0; ; i++ {
		p, err := mixed.NextPart()
		if err == io.EOF {
			return top, first, leaves
		}
		require.NoError(t, err)
		mediaType, params, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
		require.NoError(t, err)
		if i == 0 {
			first = mediaType
		}
		if !strings.HasPrefix(mediaType, "multipart/") {
			leaves = append(leaves, leaf(t, mediaType, p))
			continue
		}
		alternative := multipart.NewReader(p, params["boundary"])
		for {
			p, err := alternative.NextPart() // decodes quoted-printable
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			mediaType, _, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
			require.NoError(t, err)
			leaves = append(leaves, leaf(t, mediaType, p))
		}
	}
}

func leaf(t *testing.T, mediaType string, p *multipart.Part) part {
	t.Helper()
	var body io.Reader = p
	if strings.EqualFold(p.Header.Get("Content-Transfer-Encoding"), "base64") {
		body = base64.NewDecoder(base64.StdEncoding, p)
	}
	data, err := io.ReadAll(body)
	require.NoError(t, err)
	return part{mediaType: mediaType, filename: p.FileName(), body: data}
}

// A composed purchase order reaches a mail client as text and HTML, the
// reader's choice, with its PDF beside them; the text is what it was
// before there was HTML.
func TestComposedPurchaseOrderIsTextAndHTMLWithThePDF(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	pdf := email.Attachment{Filename: "PO-2026-0042_purchase_order_r1.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.7\n\x00\xff binary")}
	m, err := c.Compose(purchaseOrder("en", 1), email.Content{Attachments: []email.Attachment{pdf}})
	require.NoError(t, err)
	raw, err := m.MIME()
	require.NoError(t, err)

	top, first, leaves := mimeParts(t, raw)
	require.Equal(t, "multipart/mixed", top)
	require.Equal(t, "multipart/alternative", first)
	require.Len(t, leaves, 3)
	require.Equal(t, []string{"text/plain", "text/html", "application/pdf"},
		[]string{leaves[0].mediaType, leaves[1].mediaType, leaves[2].mediaType}, "text first, then HTML, then the attachment")

	crlf := strings.NewReplacer("\r\n", "\n") // MIME's line ends
	pinned, err := os.ReadFile(filepath.Join("testdata", "text", "purchase_order.en.r1-attached.txt"))
	require.NoError(t, err)
	_, pinnedText, _ := strings.Cut(string(pinned), "\n\n")
	require.Equal(t, pinnedText, crlf.Replace(string(leaves[0].body)))
	require.Equal(t, m.HTML, crlf.Replace(string(leaves[1].body)))
	require.Contains(t, m.HTML, "The purchase order is attached as a PDF.")
	require.Equal(t, pdf.Filename, leaves[2].filename)
	require.Equal(t, pdf.Data, leaves[2].body)
}

// Every shipped template's HTML, in every language, says what its text
// says — each sentence, each row of the summary, the link — and is in that
// language.
func TestComposeHTMLSaysWhatTheTextSays(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	tag := regexp.MustCompile(`<[^>]*>`)
	for _, tc := range textCases() {
		m, err := c.Compose(tc.d, tc.content)
		require.NoError(t, err, tc.name)
		require.True(t, strings.HasPrefix(m.HTML, `<!doctype html>`+"\n"+`<html lang="`+tc.d.Locale+`">`), tc.name)
		shown := strings.Join(strings.Fields(html.UnescapeString(tag.ReplaceAllString(m.HTML, " "))), " ")
		for _, line := range strings.Split(m.Text, "\n") {
			if strings.HasPrefix(line, "  ") { // a row of the summary, "  Date:     2026-11-30"
				line = strings.Replace(line, ":", "", 1)
			}
			if line = strings.Join(strings.Fields(line), " "); line == "" || line == "--" {
				continue
			}
			require.Contains(t, shown, line, tc.name)
		}
	}
}

// Names come from other companies' systems: whatever they contain shows
// as text and never runs.
func TestComposeHTMLEscapesHostileNames(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	d := purchaseOrder("en", 1)
	d.Order.Buyer = "<script>alert(1)</script>"
	d.Order.Supplier = `"><img src=x onerror=alert(1)>`
	d.Recipient.Name = `</td><a href="javascript:alert(1)">`
	m, err := c.Compose(d, email.Content{})
	require.NoError(t, err)

	require.Contains(t, m.HTML, "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.Contains(t, m.HTML, "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;")
	require.Contains(t, m.HTML, "Hello &lt;/td&gt;&lt;a href=&#34;javascript:alert(1)&#34;&gt;,")
	require.NotContains(t, m.HTML, "<script")
	require.NotContains(t, m.HTML, "<img")
	require.NotContains(t, m.HTML, `href="javascript`)
	require.Contains(t, m.Text, "<script>alert(1)</script> has issued purchase order", "the text part is text: nothing to escape")
}

// The HTML part is in the text's language, falling back alike.
func TestComposeHTMLLanguages(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	tests := []struct {
		locale, lang string
		phrases      []string
	}{
		{"es", "es", []string{"Hola, Ольга Петрова:", "ha emitido el pedido de compra PO-2026-0042", ">Pedido de compra PO-2026-0042</th>", ">Comprador</td>", "183,48\u00a0€", "Enviado por Herald en nombre de Frutas del Sur S.L."}},
		{"ru", "ru", []string{"Здравствуйте, Ольга Петрова!", "направляет заказ на закупку PO-2026-0042", ">Заказ на закупку PO-2026-0042</th>", ">Итого</td>", "183,48\u00a0€", "Отправлено Herald от имени Frutas del Sur S.L."}},
		{"es-MX", "es", []string{"Hola, Ольга Петрова:"}},
		{"de", "en", []string{"Hello Ольга Петрова,", "has issued purchase order PO-2026-0042", ">Purchase order PO-2026-0042</th>", ">Total</td>", "€183.48", "Sent by Herald on behalf of Frutas del Sur S.L."}},
	}
	for _, tt := range tests {
		t.Run(tt.locale, func(t *testing.T) {
			t.Parallel()
			m, err := c.Compose(purchaseOrder(tt.locale, 1), email.Content{})
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(m.HTML, "<!doctype html>\n<html lang=\""+tt.lang+"\">\n"), m.HTML[:min(len(m.HTML), 60)])
			for _, want := range tt.phrases {
				require.Contains(t, m.HTML, want)
			}
		})
	}
}

// A document too large to attach is linked, and the link is one to click.
func TestComposeHTMLLinksTheDocument(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	link := "https://herald.example/v1/documents/acme/PO-2026-0042/purchase_order-r1.pdf?expires=1796634000&signature=Zm9v_YmFy-"
	m, err := c.Compose(purchaseOrder("ru", 1), email.Content{Link: link, LinkExpires: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)})
	require.NoError(t, err)

	anchors := regexp.MustCompile(`<a href="([^"]*)"[^>]*>([^<]*)</a>`).FindAllStringSubmatch(m.HTML, -1)
	require.Len(t, anchors, 1)
	require.Equal(t, link, html.UnescapeString(anchors[0][1]), "the href is the link, exactly")
	require.Equal(t, link, html.UnescapeString(anchors[0][2]), "and so is what the reader sees")
	require.Contains(t, m.HTML, "Документ слишком велик для вложения. Скачайте его (ссылка действует до 2026-12-07):")
	require.NotContains(t, m.HTML, "приложен")

	m, err = c.Compose(purchaseOrder("en", 1), email.Content{Link: "javascript:alert(1)"})
	require.NoError(t, err)
	require.Contains(t, m.HTML, `<a href="#ZgotmplZ"`, "a link that is not a URL to fetch is not followed")
}

func TestComposeHTMLRevisionNote(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	first, err := c.Compose(purchaseOrder("en", 1), email.Content{})
	require.NoError(t, err)
	second, err := c.Compose(purchaseOrder("en", 2), email.Content{})
	require.NoError(t, err)
	require.NotContains(t, first.HTML, "revision")
	require.Contains(t, second.HTML, "This is revision 2; it replaces every earlier version.")
	require.Contains(t, second.HTML, ">Purchase order PO-2026-0042 (revision 2)</th>")
}

// Every email carries a brand: its sender's name on the default colour
// until a tenant sets its own; a logo only when there is one, and only
// from a URL an image can be fetched from.
func TestComposeHTMLBrand(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	plain, err := c.Compose(purchaseOrder("en", 1), email.Content{})
	require.NoError(t, err)
	require.Contains(t, plain.HTML, `<td style="background-color:#1f4e79;`)
	require.Contains(t, plain.HTML, `color:#ffffff;">Frutas del Sur S.L.</td>`, "the buyer issues a purchase order: its name heads it")
	require.NotContains(t, plain.HTML, "<img")

	branded, err := c.Compose(purchaseOrder("en", 1), email.Content{Brand: email.Brand{
		Name: "Frutas del Sur", LogoURL: "https://cdn.frutasdelsur.example/logo.png", Colour: "#2e7d32"}})
	require.NoError(t, err)
	require.Contains(t, branded.HTML, `<td style="background-color:#2e7d32;`)
	require.Contains(t, branded.HTML, `<img src="https://cdn.frutasdelsur.example/logo.png" alt="Frutas del Sur" height="40"`)

	hostile, err := c.Compose(purchaseOrder("en", 1), email.Content{Brand: email.Brand{
		LogoURL: "javascript:alert(1)", Colour: "red;background:url(javascript:alert(1))"}})
	require.NoError(t, err)
	require.Contains(t, hostile.HTML, `<img src="#ZgotmplZ"`)
	require.Contains(t, hostile.HTML, "background-color:ZgotmplZ;")
	require.NotContains(t, hostile.HTML, "javascript")
}
