package render

import (
	"strings"
	"testing"

	"github.com/phpdave11/gofpdf"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
)

func TestLineTotalArithmetic(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		quantity, price, currency, want string
	}{
		{"3", "0.335", "EUR", "1.01"}, // 1.005: half away from zero
		{"-3", "0.335", "EUR", "-1.01"},
		{"0.1", "0.2", "EUR", "0.02"},
		{"3", "0.3349999", "EUR", "1.00"},
		{"1", "0.004999", "EUR", "0.00"},
		{"0.5", "0.01", "EUR", "0.01"}, // 0.005
		{"-0.5", "0.01", "EUR", "-0.01"},
		{"120", "0.89", "EUR", "106.80"},
		{"48", "1.25", "EUR", "60.00"},
		{"123456789012345678", "9999.99", "EUR", "1234566655555566656543.22"},
		{"999999999999999999.999", "999999999999999999.999", "USD", "999999999999999999998000000000000000.00"},
		{"3", "0.5", "JPY", "2"},        // 1.5 → 2: the yen has no minor unit
		{"1", "1.0005", "KWD", "1.001"}, // the dinar has three
		{"0", "12.34", "EUR", "0.00"},
	} {
		q, ok := parseDecimal(event.Decimal(tt.quantity))
		require.True(t, ok)
		p, ok := parseDecimal(event.Decimal(tt.price))
		require.True(t, ok)
		require.Equal(t, tt.want, lineTotal(q, p, tt.currency).String(), "%s × %s %s", tt.quantity, tt.price, tt.currency)
	}
}

func TestPercent(t *testing.T) {
	t.Parallel()
	for rate, want := range map[string]string{
		"0.10": "10\u00a0%", "0.21": "21\u00a0%", "0.055": "5,5\u00a0%", "0": "0\u00a0%", "1": "100\u00a0%",
		"0.0": "0\u00a0%", "0.00125": "0,125\u00a0%", "12": "1.200\u00a0%",
	} {
		d, ok := parseDecimal(event.Decimal(rate))
		require.True(t, ok)
		require.Equal(t, want, numberFormats["es"].percent(d), rate)
	}
}

func TestMoneyLikeTheEmails(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ locale, amount, currency, want string }{
		{"en", "1234.5", "EUR", "€1,234.50"},
		{"en", "-1234.5", "USD", "-$1,234.50"},
		{"es", "1234.5", "EUR", "1.234,50\u00a0€"},
		{"ru", "1234567.5", "EUR", "1\u00a0234\u00a0567,50\u00a0€"},
		{"ru", "12", "RUB", "12,00\u00a0RUB"},
		{"en", "12", "CHF", "12.00\u00a0CHF"},
		{"en", "1200", "JPY", "¥1,200"},
		{"en", "0.125", "EUR", "€0.125"}, // never rounds what the publisher sent
	} {
		require.Equal(t, tt.want, numberFormats[tt.locale].money(tt.amount, tt.currency), "%+v", tt)
	}
}

func TestLanguage(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"es": "es", "es-MX": "es", "ES_es": "es", " ru-RU ": "ru", "fr": "en", "": "en", "en-GB": "en"} {
		require.Equal(t, want, language(in), in)
	}
}

func TestWrapKeepsEveryLineInsideItsWidth(t *testing.T) {
	t.Parallel()
	fs, err := loadFaces()
	require.NoError(t, err)
	m := &measurer{faces: fs}
	text := "Кефир 0,5 л " + strings.Repeat("x", 80) + " and some words\nafter a break\r\nand\tanother"
	for _, f := range []*face{fs.regular, fs.bold} {
		lines := m.wrap(f, text, 9, 40)
		require.Greater(t, len(lines), 4)
		for _, l := range lines {
			require.LessOrEqual(t, m.width(f, l, 9), 40.0, "%q", l)
		}
		joined := strings.Join(lines, "")
		require.Equal(t, strings.Repeat("x", 80), strings.Join(strings.FieldsFunc(joined, func(r rune) bool { return r != 'x' }), ""))
		require.Contains(t, lines, "after a break")
		require.Equal(t, "and another", lines[len(lines)-1])
	}
	require.Nil(t, m.wrap(fs.regular, " \n ", 9, 40))
}

// Our measure must agree with gofpdf's, or maroto would break our lines
// again and spill them out of their rows.
func TestWidthMatchesGofpdf(t *testing.T) {
	t.Parallel()
	fs, err := loadFaces()
	require.NoError(t, err)
	m := &measurer{faces: fs}
	pdf := gofpdf.New("P", "mm", "A4", "")
	for _, c := range customFonts() {
		pdf.AddUTF8FontFromBytes(c.Family, string(c.Style), c.Bytes)
	}
	text := "Молочная ферма «Заря» — Leche entera 1 L, 1.234,50 € № 7701234567 ёЁ"
	for style, f := range map[string]*face{"": fs.regular, "B": fs.bold} {
		for _, size := range []float64{8, 9, 10, 16} {
			pdf.SetFont(family, style, size)
			require.NoError(t, pdf.Error())
			require.InDelta(t, pdf.GetStringWidth(text), m.width(f, text, size), 1e-9, "style %q size %v", style, size)
		}
	}
}
