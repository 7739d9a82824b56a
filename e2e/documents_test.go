package e2e

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestEmailsCarryTheirDocumentAndARevisionIsANewDocument(t *testing.T) {
	t.Parallel()
	p := startPipeline(t)
	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
	p.settle(t)

	mail := p.mail(t)
	require.Len(t, mail, 2)
	for _, m := range mail {
		require.Len(t, m.Attachments, 1, m.To)
		pdf := m.Attachments["PO-2026-0042_purchase_order_r1.pdf"]
		require.NotEmpty(t, pdf, "attached under a readable name")
		text := heraldtest.PDFText(t, pdf)
		require.Contains(t, text, "PO-2026-0042")
		require.Contains(t, text, "Кефир 0,5 л")
		require.Contains(t, text, "183,48")
	}
	require.Equal(t, mail[0].Attachments, mail[1].Attachments, "both recipients get the same document")

	p.publish(t, "orders.updated", "evt-2026-11-30-0002", sample(t, "order.updated.json", nil))
	p.settle(t)
	revised := 0
	for _, m := range p.mail(t) {
		if pdf, ok := m.Attachments["PO-2026-0042_purchase_order_r2.pdf"]; ok {
			revised++
			require.Contains(t, heraldtest.PDFText(t, pdf), "199,98", "the revision's own totals")
		}
	}
	require.Equal(t, 2, revised, "a second document, and a second email per recipient")
	_, metrics := p.get(t, "/metrics")
	require.Regexp(t, `herald_documents_total\{outcome="rendered",tenant="acme",type="purchase_order"\} 2`, metrics)
}

func TestLargeDocumentsAreLinkedWithSignedExpiringURLs(t *testing.T) {
	t.Parallel()
	p := startPipeline(t, func(c *app.Config) { c.Documents.AttachMaxBytes = 1000 })
	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
	p.settle(t)

	mail := p.mail(t)
	require.Len(t, mail, 2)
	link := regexp.MustCompile(`http://\S+/v1/documents/\S+`).FindString(mail[0].Text)
	require.NotEmpty(t, link, "the email links to the document: %s", mail[0].Text)
	require.Empty(t, mail[0].Attachments)

	get := func(u string) (int, []byte) {
		resp, err := heraldtest.HTTPClient(t).Get(u)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}
	status, body := get(link)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, heraldtest.PDFText(t, body), "PO-2026-0042")

	u, err := url.Parse(link)
	require.NoError(t, err)
	q := u.Query()
	q.Set("expires", "1700000000")
	u.RawQuery = q.Encode()
	status, _ = get(u.String())
	require.Equal(t, http.StatusForbidden, status, "an expired link")
	tampered := strings.Replace(link, "purchase_order-r1", "purchase_order-r2", 1)
	status, _ = get(tampered)
	require.Equal(t, http.StatusForbidden, status, "a link altered to another document")
}
