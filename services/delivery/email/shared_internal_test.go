package email

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// escaped skips html/template for a name or link it would write as is:
// it must write every one exactly as the template does — here for every
// byte and every character that could matter, in a name and in a link,
// and for whatever FuzzEscaped finds. html/template's escapers work a
// character (the name) or a byte (the link) at a time, so a character
// written as is alone is written as is among others.
func TestPlainNamesAndLinksAreWrittenAsTheyAre(t *testing.T) {
	t.Parallel()
	var chars []string
	for b := range 256 {
		chars = append(chars, string([]byte{byte(b)})) // every ASCII character, and each byte that is no UTF-8 alone
	}
	for r := rune(0x80); r <= utf8.MaxRune; r++ {
		if r < 0x800 || r >= 0x2000 && r <= 0x206f || r >= 0xfdd0 && r <= 0xfdef || r >= 0xfeff && r <= 0xffff || r%4099 == 0 || r == utf8.MaxRune {
			chars = append(chars, string(r))
		}
	}
	plain := 0
	for _, c := range chars {
		for _, nl := range [][2]string{
			{"Olga" + c + "Petrova", "https://herald.example.com/v1/unsubscribe/" + c + "x"},
			{c, "http://h.example/" + c},
			{c + c, "https://" + c},
		} {
			name, link := nl[0], nl[1]
			wantName, wantLink, err := escapedByTemplate(name, link)
			require.NoError(t, err)
			gotName, gotLink, err := escaped(name, link)
			require.NoError(t, err)
			require.Equal(t, wantName, gotName, "name %q", name)
			require.Equal(t, wantLink, gotLink, "link %q", link)
			if plainName(name) {
				require.Equal(t, name, wantName, "a plain name %q is written as it is", name)
				plain++
			}
			if plainLink(link) {
				require.Equal(t, link, wantLink, "a plain link %q is written as it is", link)
			}
		}
	}
	require.Greater(t, plain, len(chars), "most names are plain")
}

func FuzzEscaped(f *testing.F) {
	for _, nl := range [][2]string{
		{"Olga Petrova", "https://herald.example.com/v1/unsubscribe/eyJ0IjoiYWNtZSJ9.c2ln"},
		{`<script>alert("x")</script>`, `https://h.example/u?a=1&b="2"`},
		{"O'Brien & Sons +1", "javascript:alert(1)"},
		{"Ольга «Заря»", "HTTPS://H.EXAMPLE/%41"},
		{"\x00nul", "https://h.example/%4"},
		{"\xff", "https://h.example/a b"},
		{"", ""},
		{"x", "mailto:a@b.example"},
		{"y", "/relative/path"},
	} {
		f.Add(nl[0], nl[1])
	}
	f.Fuzz(func(t *testing.T, name, link string) {
		wantName, wantLink, err := escapedByTemplate(name, link)
		require.NoError(t, err)
		gotName, gotLink, err := escaped(name, link)
		require.NoError(t, err)
		require.Equal(t, wantName, gotName)
		require.Equal(t, wantLink, gotLink)
	})
}
