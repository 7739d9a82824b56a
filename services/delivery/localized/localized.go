// Package localized holds a channel's message templates, one file per
// language, and picks the one a recipient reads: the exact locale, then its
// base language ("es-MX" → "es"), then English.
package localized

import (
	"io/fs"
	"path"
	"strings"
	"text/template"
)

// Default is the language every other falls back to.
const Default = "en"

// Templates are the parsed templates of every language.
type Templates map[string]*template.Template

// Parse parses each file glob matches in fsys — <locale>.tmpl — with the
// functions funcs gives for its locale. A template missing a key it uses is
// an error when it runs, not an empty string.
func Parse(fsys fs.FS, glob string, funcs func(locale string) template.FuncMap) (Templates, error) {
	names, err := fs.Glob(fsys, glob)
	if err != nil {
		return nil, err
	}
	out := Templates{}
	for _, name := range names {
		locale := strings.TrimSuffix(path.Base(name), ".tmpl")
		t, err := template.New(locale).Option("missingkey=error").Funcs(funcs(locale)).ParseFS(fsys, name)
		if err != nil {
			return nil, err
		}
		out[locale] = t
	}
	return out, nil
}

// Has reports whether the default language defines name.
func (ts Templates) Has(name string) bool {
	t := ts[Default]
	return t != nil && t.Lookup(name) != nil
}

// Pick is the first language, of the locale's own, its base language's
// and the default, that defines name; nil if none does.
func (ts Templates) Pick(locale, name string) *template.Template {
	for _, l := range Candidates(locale) {
		if t := ts[l]; t != nil && t.Lookup(name) != nil {
			return t
		}
	}
	return nil
}

// Candidates are the languages a locale reads, best first: itself, its
// base language, the default.
func Candidates(locale string) []string {
	return []string{strings.ToLower(locale), Base(locale), Default}
}

// Base is a locale's language without its region: "es-MX" and "es_mx" → "es".
func Base(locale string) string {
	base, _, _ := strings.Cut(strings.ToLower(strings.ReplaceAll(locale, "_", "-")), "-")
	return base
}
