package sms

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// Encoding is how an SMS carries its text: GSM-7 when every character is
// in the GSM 03.38 alphabet, UCS-2 (UTF-16) otherwise. It decides how many
// characters fit a segment, and so what a message costs.
type Encoding string

const (
	GSM7 Encoding = "gsm-7"
	UCS2 Encoding = "ucs-2"
)

// Segment sizes. A message that fits one segment uses it whole; a longer
// one is split into parts that each give up room for the concatenation
// header (6 octets: 7 septets, or 3 UTF-16 units).
const (
	gsm7Single = 160 // septets
	gsm7Part   = 153
	ucs2Single = 70 // UTF-16 code units
	ucs2Part   = 67
)

// gsm7Basic is the GSM 03.38 default alphabet: one septet each. Its
// escape (0x1B) is left out, as no text contains it.
var gsm7Basic = setOf("@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà")

// gsm7Extension is the GSM 03.38 extension table: two septets each (the
// escape, then the character).
var gsm7Extension = setOf("\f^{}\\[~]|€")

func setOf(chars string) map[rune]bool {
	set := make(map[rune]bool, utf8.RuneCountInString(chars))
	for _, r := range chars {
		set[r] = true
	}
	return set
}

// Segments says how body would be encoded and into how many segments it
// would be split — what a provider bills. An empty body is no segments.
func Segments(body string) (Encoding, int) {
	if isGSM7(body) {
		return GSM7, count(body, gsm7Single, gsm7Part, septets)
	}
	return UCS2, count(body, ucs2Single, ucs2Part, utf16.RuneLen)
}

// Describe is how the ledger records a body's cost: "gsm-7, 1 segment",
// "ucs-2, 3 segments".
func Describe(body string) string {
	enc, n := Segments(body)
	if n == 1 {
		return fmt.Sprintf("%s, 1 segment", enc)
	}
	return fmt.Sprintf("%s, %d segments", enc, n)
}

func isGSM7(s string) bool {
	for _, r := range s {
		if !gsm7Basic[r] && !gsm7Extension[r] {
			return false
		}
	}
	return true
}

func septets(r rune) int {
	if gsm7Extension[r] {
		return 2
	}
	return 1
}

// count packs s into segments of size units. A character's units never
// straddle two parts — phones do not split an escape sequence or a
// surrogate pair — so a part may end short of part.
func count(s string, single, part int, units func(rune) int) int {
	total := 0
	for _, r := range s {
		total += units(r)
	}
	switch {
	case total == 0:
		return 0
	case total <= single:
		return 1
	}
	parts, used := 1, 0
	for _, r := range s {
		u := units(r)
		if used+u > part {
			parts, used = parts+1, 0
		}
		used += u
	}
	return parts
}
