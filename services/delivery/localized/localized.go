// Package localized holds a channel's message templates, one file per
// language, and picks the one a recipient reads: the exact locale, then its
// base language ("es-MX" → "es"), then English. Text templates
// (text/template) and HTML templates (html/template) are picked alike.
package localized

import (
	htmltemplate "html/template"
	"io/fs"
	"path"
	"slices"
	"strings"
	"text/template"
)

// Default is the language every other falls back to.
const Default = "en"

// Template is what a Set needs of a parsed template; text/template's and
// html/template's both are one.
type Template[T any] interface {
	comparable
	Name() string
	Lookup(name string) T
}

// Set is the parsed templates of every language, by locale.
type Set[T Template[T]] map[string]T

// Templates are text templates: subjects, plain-text bodies, SMS.
type Templates = Set[*template.Template]

// HTMLTemplates are HTML templates, which escape what they insert by its
// context (element text, attribute, URL, CSS) when they run.
type HTMLTemplates = Set[*htmltemplate.Template]

// Parse parses each file glob matches in fsys — <locale>.tmpl — with the
// functions funcs gives for its locale. A template missing a key it uses is
// an error when it runs, not an empty string.
func Parse(fsys fs.FS, glob string, funcs func(locale string) template.FuncMap) (Templates, error) {
	return parse(fsys, glob, func(locale, file string) (*template.Template, error) {
		return template.New(locale).Option("missingkey=error").Funcs(funcs(locale)).ParseFS(fsys, file)
	})
}

// ParseHTML is Parse with html/template. Each language's file is parsed
// after the layouts, files of fsys every language shares: the frame of a
// page, which each language's file fills with its words.
func ParseHTML(fsys fs.FS, glob string, funcs func(locale string) htmltemplate.FuncMap, layouts ...string) (HTMLTemplates, error) {
	return parse(fsys, glob, func(locale, file string) (*htmltemplate.Template, error) {
		return htmltemplate.New(locale).Option("missingkey=error").Funcs(funcs(locale)).ParseFS(fsys, slices.Concat(layouts, []string{file})...)
	})
}

func parse[T Template[T]](fsys fs.FS, glob string, parseFile func(locale, file string) (T, error)) (Set[T], error) {
	files, err := fs.Glob(fsys, glob)
	if err != nil {
		return nil, err
	}
	out := Set[T]{}
	for _, file := range files {
		locale := strings.TrimSuffix(path.Base(file), ".tmpl")
		t, err := parseFile(locale, file)
		if err != nil {
			return nil, err
		}
		out[locale] = t
	}
	return out, nil
}

// Has reports whether the default language defines name.
func (ts Set[T]) Has(name string) bool {
	var none T
	t := ts[Default]
	return t != none && t.Lookup(name) != none
}

// Pick is the first language, of the locale's own, its base language's
// and the default, that defines name; nil if none does.
func (ts Set[T]) Pick(locale, name string) T {
	var none T
	for _, l := range Candidates(locale) {
		if t := ts[l]; t != none && t.Lookup(name) != none {
			return t
		}
	}
	return none
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
