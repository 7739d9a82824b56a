package event

import (
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The text rules of tenant input. An event's fields and every name, note
// and address a tenant gives Herald through the API or the CLI (templates,
// tenants, domains, webhook endpoints, keys, providers, suppressions) reach
// email headers, documents, logs and operators' terminals: a CR or LF in a
// name ends a header line, an ESC in a note rewrites the terminal that
// lists it, a NUL cuts a string short in C code downstream. Every package
// that keeps tenant input checks it with these.

// isControl reports C0 and C1 controls, DEL, and the Unicode line and
// paragraph separators that some clients break lines at.
func isControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == '\u2028' || r == '\u2029'
}

// CheckText says what keeps s from being a tenant's text of one line — a
// name, a subject, a note: invalid UTF-8 or a control character. Nil when
// nothing does. The error names the character, never repeats s.
func CheckText(s string) error { return checkControls(s, "") }

// CheckLines is CheckText for text of several lines, a template's body:
// tab, line feed and carriage return are its layout; every other control
// is refused.
func CheckLines(s string) error { return checkControls(s, "\t\n\r") }

func checkControls(s, layout string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("is not UTF-8")
	}
	for i, r := range s {
		if isControl(r) && !strings.ContainsRune(layout, r) {
			return fmt.Errorf("holds a control character (%U at byte %d)", r, i)
		}
	}
	return nil
}

// ValidAddress says whether address is one channel c sends to, as
// Recipient.Address gives it: an email address (bare, lowercase), an E.164
// phone number for SMS and WhatsApp, an http(s) URL for a webhook.
func ValidAddress(c Channel, address string) bool {
	if strings.ContainsFunc(address, isControl) {
		return false
	}
	switch c {
	case ChannelEmail:
		a, err := mail.ParseAddress(address)
		return err == nil && a.Address == address && address == strings.ToLower(address)
	case ChannelSMS, ChannelWhatsApp:
		return phonePattern.MatchString(address)
	case ChannelWebhook:
		return strings.HasPrefix(address, "https://") || strings.HasPrefix(address, "http://")
	case ChannelInbox, ChannelPush:
		return CheckRecipientID(address) == nil // a subscriber's id
	}
	return false
}

// Printable is s with every character a terminal or a page would not show
// as itself — controls, format characters such as a right-to-left
// override, invalid UTF-8 — written as Go writes it in a string literal
// (\x1b, \u202e, \xff). For showing text of unknown origin, and keeping a
// provider's words as tenant text.
func Printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, notPrintable) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], string(utf8.RuneError)):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case notPrintable(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func notPrintable(r rune) bool { return !unicode.IsPrint(r) }
