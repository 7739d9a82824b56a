package event_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
)

// A tenant's text of one line holds no control character of any kind —
// C0, DEL, C1, the Unicode line and paragraph separators — nor invalid
// UTF-8; text of several lines may hold its layout (tab, LF, CR) and
// nothing else. The error names the character, not the text.
func TestTenantTextRefusesControlCharacters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text         string
		line, lines  bool
		wantInReason string
	}{
		{text: "Olga Petrova — Зaря, S.A.", line: true, lines: true},
		{text: "", line: true, lines: true},
		{text: "two\nlines\r\n\tindented", line: false, lines: true, wantInReason: "U+000A at byte 3"},
		{text: "nul\x00", wantInReason: "U+0000"},
		{text: "clear\x1b[2J", wantInReason: "U+001B"},
		{text: "title\x1b]0;pwned\x07", wantInReason: "U+001B"},
		{text: "del\x7f", wantInReason: "U+007F"},
		{text: "csi\u009b2J", wantInReason: "U+009B"},
		{text: "line\u2028separator", wantInReason: "U+2028"},
		{text: "para\u2029separator", wantInReason: "U+2029"},
		{text: "bad \xff byte", wantInReason: "not UTF-8"},
	} {
		line, lines := event.CheckText(tc.text), event.CheckLines(tc.text)
		require.Equal(t, tc.line, line == nil, "%q: %v", tc.text, line)
		require.Equal(t, tc.lines, lines == nil, "%q: %v", tc.text, lines)
		if line != nil {
			require.ErrorContains(t, line, tc.wantInReason)
			require.NotContains(t, line.Error(), tc.text)
		}
	}
}

// Addresses are what their channel sends to: an email address for email,
// an E.164 number for SMS and WhatsApp.
func TestValidAddressIsPerChannel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		channel event.Channel
		address string
		valid   bool
	}{
		{event.ChannelEmail, "olga@zarya.example", true},
		{event.ChannelEmail, "Olga <olga@zarya.example>", false},
		{event.ChannelEmail, "olga@zarya.example\r\nBcc: all@zarya.example", false},
		{event.ChannelEmail, "olga\x00@zarya.example", false},
		{event.ChannelEmail, "+34600111222", false},
		{event.ChannelSMS, "+34600111222", true},
		{event.ChannelWhatsApp, "+34600111222", true},
		{event.ChannelSMS, "600 111 222", false},
		{event.ChannelSMS, "+34600111222\x1b[2J", false},
		{event.ChannelWhatsApp, "olga@zarya.example", false},
		{event.ChannelWebhook, "https://hooks.zarya.example/herald", true},
		{"fax", "+34600111222", false},
	} {
		require.Equal(t, tc.valid, event.ValidAddress(tc.channel, tc.address), "%s %q", tc.channel, tc.address)
	}
}

// Printable shows what would otherwise act on a terminal or hide in a page
// as Go escapes, and leaves printable text as it is.
func TestPrintableEscapesWhatATerminalWouldNotShow(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Olga Petrova — Зaря":        "Olga Petrova — Зaря",
		"clear\x1b[2J":               `clear\x1b[2J`,
		"title\x1b]0;pwned\x07":      `title\x1b]0;pwned\a`,
		"nul\x00 tab\t nl\n":         `nul\x00 tab\t nl\n`,
		"csi\u009b":                  `csi\u009b`,
		"evil\u202efdp.exe":          `evil\u202efdp.exe`,
		"bad \xff byte, real \ufffd": `bad \xff byte, real ` + "\ufffd",
	} {
		require.Equal(t, want, event.Printable(in), "%q", in)
		require.NoError(t, event.CheckText(event.Printable(in)))
	}
}
