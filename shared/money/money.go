// Package money writes exact decimal amounts the way each language does —
// "€1,234.50" in English, "1.234,50 €" in Spanish, "1 234,50 €" in Russian —
// so a figure reads the same in an email and in its PDF. Amounts are text
// in and text out: nothing here rounds, and no float is ever involved.
package money

import "strings"

// Style is how a language writes numbers and money.
type Style struct {
	Group, Decimal string
	SymbolFirst    bool
}

var styles = map[string]Style{
	"en": {Group: ",", Decimal: ".", SymbolFirst: true},
	"es": {Group: ".", Decimal: ","},
	"ru": {Group: "\u00a0", Decimal: ","},
}

// StyleOf is a language's style: "es-MX" and "ru_RU" use their base
// language; others use English.
func StyleOf(locale string) Style {
	base, _, _ := strings.Cut(strings.ToLower(strings.ReplaceAll(locale, "_", "-")), "-")
	if s, ok := styles[base]; ok {
		return s
	}
	return styles["en"]
}

// Symbols are the currency signs written instead of ISO codes.
var Symbols = map[string]string{"EUR": "€", "USD": "$", "GBP": "£", "RUB": "₽", "JPY": "¥"}

// minorUnits are the ISO 4217 currencies whose cents are not hundredths.
var minorUnits = map[string]int{
	"JPY": 0, "KRW": 0, "ISK": 0, "CLP": 0, "VND": 0, "PYG": 0, "UGX": 0,
	"BHD": 3, "KWD": 3, "OMR": 3, "JOD": 3, "TND": 3, "IQD": 3, "LYD": 3,
}

// Decimals is how many fraction digits a currency's amounts are shown with.
func Decimals(currency string) int {
	if d, ok := minorUnits[currency]; ok {
		return d
	}
	return 2
}

// Number writes a plain decimal ("-1234.5") in the style, with at least
// minFrac fraction digits. It never rounds.
func (s Style) Number(plain string, minFrac int) string {
	sign := ""
	if rest, ok := strings.CutPrefix(plain, "-"); ok {
		sign, plain = "-", rest
	}
	whole, frac, _ := strings.Cut(plain, ".")
	if pad := minFrac - len(frac); pad > 0 {
		frac += strings.Repeat("0", pad)
	}
	var b strings.Builder
	b.WriteString(sign)
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteString(s.Group)
		}
		b.WriteRune(r)
	}
	if frac != "" {
		b.WriteString(s.Decimal)
		b.WriteString(frac)
	}
	return b.String()
}

// Money writes an amount with its currency, using symbols (the caller may
// leave out one its font cannot draw) and the ISO code otherwise.
func (s Style) Money(plain, currency string, symbols map[string]string) string {
	n := s.Number(plain, Decimals(currency))
	symbol, ok := symbols[currency]
	switch {
	case !ok:
		return n + "\u00a0" + currency
	case s.SymbolFirst:
		if rest, neg := strings.CutPrefix(n, "-"); neg {
			return "-" + symbol + rest
		}
		return symbol + n
	default:
		return n + "\u00a0" + symbol
	}
}
