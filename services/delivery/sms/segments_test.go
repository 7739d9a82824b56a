package sms_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/sms"
)

func TestSegments(t *testing.T) {
	t.Parallel()
	a := func(n int) string { return strings.Repeat("a", n) }
	ru := func(n int) string { return strings.Repeat("ж", n) }
	const emoji = "😀" // outside the BMP: a surrogate pair, 2 UTF-16 units
	tests := []struct {
		name     string
		body     string
		encoding sms.Encoding
		segments int
	}{
		{"empty", "", sms.GSM7, 0},
		{"gsm-7 single", "Low stock: MILK-1L at SEV-01", sms.GSM7, 1},
		{"gsm-7 160 fits one", a(160), sms.GSM7, 1},
		{"gsm-7 161 is two", a(161), sms.GSM7, 2},
		{"gsm-7 153×2 is two", a(306), sms.GSM7, 2},
		{"gsm-7 153×2+1 is three", a(307), sms.GSM7, 3},
		{"gsm-7 accents of the basic set", "àèéìòù ÄÖÑÜäöñü ÇØøÅåÆæßÉ ¡¿ £¥§¤ ΔΦΓΛΩΠΨΣΘΞ @_", sms.GSM7, 1},
		{"newlines are gsm-7", "a\r\nb", sms.GSM7, 1},
		{"extension chars count two", a(158) + "€", sms.GSM7, 1},
		{"extension char past 160 is two", a(159) + "€", sms.GSM7, 2},
		{"every extension char", a(142) + `^{}\[~]|€`, sms.GSM7, 1},
		{"every extension char one septet over", a(143) + `^{}\[~]|€`, sms.GSM7, 2},
		// 152 septets, then an escape sequence that would straddle parts:
		// it moves whole to the second part, which then needs a third.
		{"escape sequence not split across parts", a(152) + "€" + a(152), sms.GSM7, 3},
		{"escape sequence ending a part exactly", a(151) + "€" + a(153), sms.GSM7, 2},
		{"backtick is not gsm-7", "`", sms.UCS2, 1},
		{"acute accents outside the basic set", "revisión", sms.UCS2, 1},
		{"no-break space is not gsm-7", "183,48\u00a0€", sms.UCS2, 1},
		{"cyrillic", "Низкий остаток", sms.UCS2, 1},
		{"ucs-2 70 fits one", ru(70), sms.UCS2, 1},
		{"ucs-2 71 is two", ru(71), sms.UCS2, 2},
		{"ucs-2 67×2 is two", ru(134), sms.UCS2, 2},
		{"ucs-2 67×2+1 is three", ru(135), sms.UCS2, 3},
		{"emoji counts two units", ru(68) + emoji, sms.UCS2, 1},
		{"emoji past 70 is two", ru(69) + emoji, sms.UCS2, 2},
		{"emoji makes latin text ucs-2", "ok " + emoji, sms.UCS2, 1},
		// 66 units, then a pair that would straddle parts: it moves whole.
		{"surrogate pair not split across parts", ru(66) + emoji + ru(66), sms.UCS2, 3},
		{"surrogate pair ending a part exactly", ru(65) + emoji + ru(67), sms.UCS2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			encoding, segments := sms.Segments(tt.body)
			require.Equal(t, tt.encoding, encoding)
			require.Equal(t, tt.segments, segments)
		})
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	require.Equal(t, "gsm-7, 1 segment", sms.Describe("Hello"))
	require.Equal(t, "gsm-7, 2 segments", sms.Describe(strings.Repeat("a", 161)))
	require.Equal(t, "ucs-2, 2 segments", sms.Describe(strings.Repeat("ж", 71)))
	require.Equal(t, "gsm-7, 0 segments", sms.Describe(""))
}
