package render

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode"

	"github.com/johnfercher/maroto/v2/pkg/consts/fontstyle"
	"github.com/johnfercher/maroto/v2/pkg/core/entity"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// family is the name the Go fonts are registered under in every document.
const family = "go"

// face is one parsed font, used to check glyphs and to measure text the
// same way gofpdf does, so that our line breaks are the ones it prints.
type face struct {
	font *sfnt.Font
	upem int
}

type faces struct {
	regular, bold *face
}

// customFonts are the fonts one document registers. Each render gets its
// own copy of the bytes: gofpdf pads font tables in place while it
// subsets them (utf8FontFile.generateChecksum appends into the slice it
// was given), so sharing them would be a data race.
func customFonts() []*entity.CustomFont {
	return []*entity.CustomFont{
		{Family: family, Style: fontstyle.Normal, Bytes: bytes.Clone(goregular.TTF)},
		{Family: family, Style: fontstyle.Bold, Bytes: bytes.Clone(gobold.TTF)},
	}
}

// loadFaces parses the fonts once per process: rendering is on a hot path
// and the parsed fonts are safe to share (each caller brings its own
// sfnt.Buffer).
var loadFaces = sync.OnceValues(func() (*faces, error) {
	regular, err := parseFace(goregular.TTF)
	if err != nil {
		return nil, fmt.Errorf("the Go regular font cannot be read: %w", err)
	}
	bold, err := parseFace(gobold.TTF)
	if err != nil {
		return nil, fmt.Errorf("the Go bold font cannot be read: %w", err)
	}
	return &faces{regular: regular, bold: bold}, nil
})

func parseFace(ttf []byte) (*face, error) {
	f, err := sfnt.Parse(ttf)
	if err != nil {
		return nil, err
	}
	return &face{font: f, upem: int(f.UnitsPerEm())}, nil
}

func (fs *faces) get(style fontstyle.Type) *face {
	if style == fontstyle.Bold {
		return fs.bold
	}
	return fs.regular
}

// missingGlyph returns the first rune of s that some document font cannot
// draw. Line breaks and tabs are not drawn (wrap turns them into layout),
// so they need no glyph; other control characters would print as boxes
// although the Go fonts map a few of them, so they count as missing.
func (fs *faces) missingGlyph(buf *sfnt.Buffer, s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			continue
		case unicode.IsControl(r):
			return r, true
		}
		for _, f := range []*face{fs.regular, fs.bold} {
			if i, err := f.font.GlyphIndex(buf, r); err != nil || i == 0 {
				return r, true
			}
		}
	}
	return 0, false
}

// advance is r's width in thousandths of an em, rounded as gofpdf rounds
// its width table, so both sides agree on where a line is full.
func (f *face) advance(buf *sfnt.Buffer, r rune) int {
	i, err := f.font.GlyphIndex(buf, r)
	if err != nil || i == 0 {
		return 500 // gofpdf's width for a rune it does not know
	}
	adv, err := f.font.GlyphAdvance(buf, i, fixed.Int26_6(f.upem<<6), 0)
	if err != nil {
		return 500
	}
	return int(math.Round(float64(adv) / 64 * 1000 / float64(f.upem)))
}

// measurer measures and wraps text for one render.
type measurer struct {
	faces *faces
	buf   sfnt.Buffer
}

// width of s in mm at size points.
func (m *measurer) width(f *face, s string, size float64) float64 {
	w := 0
	for _, r := range s {
		w += f.advance(&m.buf, r)
	}
	return toMM(w, size)
}

func toMM(thousandths int, size float64) float64 {
	return float64(thousandths) * size / 1000 * 25.4 / 72
}

// wrap breaks s into lines no wider than width mm: at spaces where it can,
// inside a word only when the word alone is too wide (a long SKU), and at
// every line break the text carries. Empty text has no lines.
func (m *measurer) wrap(f *face, s string, size, width float64) []string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	s = strings.ReplaceAll(s, "\t", " ")
	s = strings.Trim(s, " \n")
	if s == "" {
		return nil
	}
	space := toMM(f.advance(&m.buf, ' '), size)
	var lines []string
	for para := range strings.SplitSeq(s, "\n") {
		var line strings.Builder
		lineW := 0.0
		flush := func() {
			lines = append(lines, line.String())
			line.Reset()
			lineW = 0
		}
		for word := range strings.SplitSeq(para, " ") {
			if word == "" {
				continue
			}
			w := m.width(f, word, size)
			switch {
			case line.Len() > 0 && lineW+space+w <= width:
				line.WriteByte(' ')
				line.WriteString(word)
				lineW += space + w
				continue
			case line.Len() > 0:
				flush()
			}
			if w <= width {
				line.WriteString(word)
				lineW = w
				continue
			}
			for _, r := range word {
				rw := toMM(f.advance(&m.buf, r), size)
				if line.Len() > 0 && lineW+rw > width {
					flush()
				}
				line.WriteRune(r)
				lineW += rw
			}
		}
		flush()
	}
	return lines
}
