package render_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/pdf/render"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
)

// sample is the order of examples/events/order.created.json and the
// event's time, decoded and validated the way the service will.
func sample(t testing.TB) (event.Order, time.Time) {
	t.Helper()
	payload, err := os.ReadFile("../../../examples/events/order.created.json")
	require.NoError(t, err)
	ev, err := event.Decode(payload)
	require.NoError(t, err)
	data, err := ev.OrderData()
	require.NoError(t, err)
	return data.Order, ev.Time
}

func render1(t testing.TB, in render.Input) (pdf []byte, text string) {
	t.Helper()
	pdf, err := render.PDF(in)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(pdf, []byte("%PDF-")), "output is not a PDF")
	return pdf, heraldtest.PDFText(t, pdf)
}

// pages splits pdftotext's output at its form feeds, one string a page.
func pages(text string) []string {
	return strings.Split(strings.TrimSuffix(strings.TrimRight(text, "\n"), "\f"), "\f")
}

func TestSamplePurchaseOrderInSpanish(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	_, text := render1(t, render.Input{
		DocumentType: notification.PurchaseOrder, Order: order, Locale: "es", Date: at,
	})

	for _, want := range []string{
		"Pedido de compra", "PO-2026-0042", "rev. 1", "Fecha: 30/11/2026",
		"Comprador", "Proveedor", "Frutas del Sur S.L.", "Молочная ферма «Заря»",
		"B12345678", "7701234567", "Calle Mayor 1, 41001 Sevilla", "ул. Полевая 5, Тверь",
		"Leche entera 1 L", "Кефир 0,5 л", "MILK-1L", "KEFIR-05",
		"0,89", "1,25", "10 %", "106,80", "60,00",
		"166,80 €", "16,68 €", "183,48 €",
		"Página 1 de 1",
	} {
		require.Contains(t, text, want)
	}
	require.Regexp(t, `(?m)^\s*MILK-1L\s+Leche entera 1 L\s+120\s+ud\s+0,89\s+10 %\s+106,80\s*$`, text)
	require.Regexp(t, `(?m)^\s*KEFIR-05\s+Кефир 0,5 л\s+48\s+ud\s+1,25\s+10 %\s+60,00\s*$`, text)
	require.Len(t, pages(text), 1)
}

func TestEveryDocumentTypeHasItsTitleInEachLanguage(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	pageLabel := map[string]string{"en": "Page 1 of 1", "es": "Página 1 de 1", "ru": "Страница 1 из 1"}
	for _, docType := range notification.DocumentTypes {
		for _, locale := range []string{"en", "es", "ru"} {
			t.Run(docType+"/"+locale, func(t *testing.T) {
				t.Parallel()
				_, text := render1(t, render.Input{DocumentType: docType, Order: order, Locale: locale, Date: at})
				require.Contains(t, text, notification.DocumentTitle(docType, locale))
				require.Contains(t, text, "PO-2026-0042")
				require.Contains(t, text, pageLabel[locale])
			})
		}
	}
}

func TestLanguageFallback(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	for _, tt := range []struct{ locale, title, gross string }{
		{"es-MX", "Factura", "183,48 €"},
		{"ru_RU", "Счёт", "183,48 €"},
		{"fr", "Invoice", "€183.48"},
		{"", "Factura", "183,48 €"}, // the order's own locale, es
	} {
		t.Run(tt.locale, func(t *testing.T) {
			t.Parallel()
			_, text := render1(t, render.Input{DocumentType: notification.Invoice, Order: order, Locale: tt.locale, Date: at})
			require.Contains(t, text, tt.title)
			require.Contains(t, text, tt.gross)
		})
	}
}

func TestRevisionIsShown(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	order.Revision = 2
	for locale, want := range map[string]string{"en": "No. PO-2026-0042, rev. 2", "es": "N.º PO-2026-0042, rev. 2", "ru": "№ PO-2026-0042, ред. 2"} {
		_, text := render1(t, render.Input{DocumentType: notification.SalesOrder, Order: order, Locale: locale, Date: at})
		require.Contains(t, text, want, locale)
	}
}

func TestDateIsIssuedAtElseTheEventTime(t *testing.T) {
	t.Parallel()
	order, _ := sample(t)
	at := time.Date(2027, 1, 2, 8, 0, 0, 0, time.UTC)
	_, text := render1(t, render.Input{DocumentType: notification.PurchaseOrder, Order: order, Locale: "en", Date: at})
	require.Contains(t, text, "Date: 2026-11-30")
	order.IssuedAt = time.Time{}
	_, text = render1(t, render.Input{DocumentType: notification.PurchaseOrder, Order: order, Locale: "ru", Date: at})
	require.Contains(t, text, "Дата: 02.01.2027")
}

func TestManyLinesFlowOntoNumberedPages(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	order.Lines = nil
	for i := range 120 {
		desc := fmt.Sprintf("Article %03d", i)
		if i%10 == 0 {
			desc += " with a description long enough to need more than one line in its column, zebra"
		}
		order.Lines = append(order.Lines, event.Line{
			SKU: fmt.Sprintf("SKU-%03d", i), Description: desc,
			Quantity: "1", Unit: "pc", UnitPrice: "1.00", TaxRate: "0.21",
		})
	}
	_, text := render1(t, render.Input{DocumentType: notification.Invoice, Order: order, Locale: "en", Date: at})

	ps := pages(text)
	require.GreaterOrEqual(t, len(ps), 3)
	for i, p := range ps {
		require.Contains(t, p, fmt.Sprintf("Page %d of %d", i+1, len(ps)), "page %d", i+1)
		require.Regexp(t, `SKU\s+Description\s+Qty\s+Unit\s+Unit price\s+Tax\s+Amount`, p, "table header on page %d", i+1)
		if i > 0 {
			require.Contains(t, p, "Invoice No. PO-2026-0042, rev. 1", "running head on page %d", i+1)
		}
	}
	for i := range 120 {
		require.Contains(t, text, fmt.Sprintf("Article %03d", i))
		require.Equal(t, 1, strings.Count(text, fmt.Sprintf("SKU-%03d", i)), "line %d printed once", i)
	}
	require.Equal(t, 12, strings.Count(text, "zebra"))
	require.Contains(t, ps[len(ps)-1], "€183.48")
}

// Wherever the page ends near the table's start, the header is printed
// once a page and never without a line under it.
func TestTableHeaderNeverStrandedOrDoubled(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	header := regexp.MustCompile(`SKU\s+Description\s+Qty`)
	for n := 40; n < 62; n++ {
		lines := make([]string, n)
		for i := range lines {
			lines[i] = fmt.Sprintf("Address line %d", i)
		}
		order.Buyer.Address = strings.Join(lines, "\n")
		_, text := render1(t, render.Input{DocumentType: notification.PurchaseOrder, Order: order, Locale: "en", Date: at})
		for i, p := range pages(text) {
			headers := len(header.FindAllString(p, -1))
			require.LessOrEqual(t, headers, 1, "%d address lines: page %d", n, i+1)
			if headers == 1 {
				require.Regexp(t, `MILK-1L|KEFIR-05`, p, "%d address lines: page %d has a header and no line", n, i+1)
			}
		}
		require.Contains(t, text, fmt.Sprintf("Address line %d", n-1))
		require.Contains(t, text, "MILK-1L")
		require.Contains(t, text, "KEFIR-05")
		require.Contains(t, text, "€183.48")
	}
}

func TestLongTextWrapsInsteadOfOverflowing(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	word := strings.Repeat("ABCDEFGHIJ", 12) // no space to break at
	order.Lines[0].Description = "Start " + word + " end"
	order.Lines[0].SKU = "SKU-" + strings.Repeat("9", 40)
	order.Buyer.Address = "Line one\nLine two"
	_, text := render1(t, render.Input{DocumentType: notification.PurchaseOrder, Order: order, Locale: "en", Date: at})

	// Each wrapped piece stays inside its column, so the text extractor
	// finds it on its own rows; joined they give back the whole word.
	found := strings.Join(regexp.MustCompile(`[A-J]{5,}`).FindAllString(text, -1), "")
	require.Equal(t, word, found)
	require.Contains(t, text, "Line one")
	require.Contains(t, text, "Line two")
}

func TestMissingGlyphIsAnErrorNamingFieldAndCharacter(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	order.Lines[1].Description = "Кефир 中 0,5 л"
	order.Supplier.Name = "Ферма 🐄"
	pdf, err := render.PDF(render.Input{DocumentType: notification.PurchaseOrder, Order: order, Locale: "es", Date: at})
	require.True(t, pdf == nil, "a PDF was rendered")
	require.ErrorContains(t, err, `data.order.lines[1].description: "中" (U+4E2D) has no glyph in the document font`)
	require.ErrorContains(t, err, `data.order.supplier.name: "🐄" (U+1F404) has no glyph in the document font`)
	var inputErr *render.InputError
	require.True(t, errors.As(err, &inputErr))
	require.Len(t, inputErr.Problems, 2)
}

func TestInvalidInputIsRefused(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	for _, tt := range []struct {
		name   string
		change func(*render.Input)
		want   string
	}{
		{"document type", func(in *render.Input) { in.DocumentType = "quote" },
			`document type: "quote" is not one of purchase_order, sales_order, delivery_note, goods_received_note, invoice`},
		{"no date", func(in *render.Input) { in.Date, in.Order.IssuedAt = time.Time{}, time.Time{} }, "date: is required"},
		{"float quantity", func(in *render.Input) { in.Order.Lines[0].Quantity = "1e3" },
			`data.order.lines[0].quantity: "1e3" is not a decimal such as "183.48"`},
		{"no gross", func(in *render.Input) { in.Order.Totals.Gross = "" }, "data.order.totals.gross: is required"},
		{"control character", func(in *render.Input) { in.Order.ID = "PO\x00" },
			`data.order.id: "\x00" (U+0000) has no glyph in the document font`},
		{"bad tax rate", func(in *render.Input) { in.Order.Lines[1].TaxRate = "10%" },
			`data.order.lines[1].tax_rate: "10%" is not a decimal such as "183.48"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := render.Input{DocumentType: notification.Invoice, Order: order, Locale: "en", Date: at}
			in.Order.Lines = append([]event.Line(nil), order.Lines...)
			tt.change(&in)
			pdf, err := render.PDF(in)
			require.True(t, pdf == nil, "a PDF was rendered")
			require.ErrorContains(t, err, tt.want)
			var inputErr *render.InputError
			require.True(t, errors.As(err, &inputErr))
		})
	}
}

func TestSameInputSameBytes(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	in := render.Input{DocumentType: notification.PurchaseOrder, Order: order, Locale: "es", Date: at}
	first, err := render.PDF(in)
	require.NoError(t, err)
	require.Contains(t, string(first), "/CreationDate (D:20261130090000)")
	require.Contains(t, string(first), "/ModDate (D:20261130090000)")

	// gofpdf stamps /ModDate from the wall clock to the second: render
	// again after the clock has moved on to another second.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
	for range 10 { // and again, to meet Go's random map order more than once
		again, err := render.PDF(in)
		require.NoError(t, err)
		require.True(t, bytes.Equal(first, again), "two renders of one input differ")
	}

	// The same instant in another zone is the same input.
	in.Date = at.In(time.FixedZone("MSK", 3*60*60))
	again, err := render.PDF(in)
	require.NoError(t, err)
	require.True(t, bytes.Equal(first, again))

	in.Date = at.Add(time.Hour)
	later, err := render.PDF(in)
	require.NoError(t, err)
	require.False(t, bytes.Equal(first, later), "a different date must change the bytes")
	require.Contains(t, string(later), "/CreationDate (D:20261130100000)")
	require.Contains(t, string(later), "/ModDate (D:20261130100000)")
}

func TestParallelRendersAgree(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	in := render.Input{DocumentType: notification.DeliveryNote, Order: order, Locale: "ru", Date: at}
	want, err := render.PDF(in)
	require.NoError(t, err)
	var wg sync.WaitGroup
	got := make([][]byte, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Go(func() { got[i], errs[i] = render.PDF(in) })
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i])
		require.True(t, bytes.Equal(want, got[i]), "render %d differs", i)
	}
}

func TestLineTotalsAreExact(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	order.Lines = []event.Line{
		{SKU: "HALF", Description: "half a cent up", Quantity: "3", UnitPrice: "0.335"},       // 1.005 → 1.01
		{SKU: "TENTHS", Description: "binary-unfriendly", Quantity: "0.1", UnitPrice: "0.2"},  // 0.02 (a float says 0.020000000000000004)
		{SKU: "BELOW", Description: "just under half", Quantity: "3", UnitPrice: "0.3349999"}, // 1.0049997 → 1.00
		{SKU: "NEG", Description: "a credit", Quantity: "-3", UnitPrice: "0.335"},             // -1.005 → -1.01
		{SKU: "BIG", Description: "many small things", Quantity: "2500000", UnitPrice: "19.999"},
	}
	_, text := render1(t, render.Input{DocumentType: notification.Invoice, Order: order, Locale: "en", Date: at})
	for sku, want := range map[string]string{
		"HALF": "1.01", "TENTHS": "0.02", "BELOW": "1.00", "NEG": "-1.01", "BIG": "49,997,500.00",
	} {
		require.Regexp(t, `(?m)^\s*`+sku+`\s.*\s`+regexp.QuoteMeta(want)+`$`, text, sku)
	}
	require.Contains(t, text, "2,500,000")
	require.Contains(t, text, "19.999")
	require.Contains(t, text, "0.3349999")
}

func TestNumbersFollowTheLanguage(t *testing.T) {
	t.Parallel()
	order, at := sample(t)
	order.Lines = []event.Line{{SKU: "X", Description: "x", Quantity: "1234.5", UnitPrice: "1000", TaxRate: "0.055"}}
	order.Totals = event.Totals{Net: "1234500", Tax: "67897.5", Gross: "1302397.5"}
	for _, tt := range []struct{ locale, quantity, price, rate, total, gross string }{
		{"en", "1,234.5", "1,000.00", "5.5%", "1,234,500.00", "€1,302,397.50"},
		{"es", "1.234,5", "1.000,00", "5,5 %", "1.234.500,00", "1.302.397,50 €"},
		// pdftotext gives the no-break spaces back as spaces.
		{"ru", "1 234,5", "1 000,00", "5,5 %", "1 234 500,00", "1 302 397,50 €"},
	} {
		_, text := render1(t, render.Input{DocumentType: notification.Invoice, Order: order, Locale: tt.locale, Date: at})
		for _, want := range []string{tt.quantity, tt.price, tt.rate, tt.total, tt.gross} {
			require.Contains(t, text, want, tt.locale)
		}
	}

	order.Currency = "RUB" // the Go fonts have no "₽"
	_, text := render1(t, render.Input{DocumentType: notification.Invoice, Order: order, Locale: "ru", Date: at})
	require.Contains(t, text, "1 302 397,50 RUB")
}

// Documents per second per core: 1e9 / (ns/op of BenchmarkPDF).
func BenchmarkPDF(b *testing.B) {
	order, at := sample(b)
	in := render.Input{DocumentType: notification.PurchaseOrder, Order: order, Locale: "es", Date: at}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := render.PDF(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPDFParallel(b *testing.B) {
	order, at := sample(b)
	in := render.Input{DocumentType: notification.PurchaseOrder, Order: order, Locale: "es", Date: at}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := render.PDF(in); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
