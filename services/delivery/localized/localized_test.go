package localized

import (
	htmltemplate "html/template"
	"strings"
	"testing"
	"testing/fstest"
	"text/template"
)

func TestPickFallsBackFromRegionToLanguageToDefault(t *testing.T) {
	fsys := fstest.MapFS{
		"t/en.tmpl":    {Data: []byte(`{{define "subject"}}en{{end}}{{define "only_en"}}en{{end}}`)},
		"t/es.tmpl":    {Data: []byte(`{{define "subject"}}es{{end}}`)},
		"t/es-mx.tmpl": {Data: []byte(`{{define "subject"}}es-mx{{end}}`)},
	}
	ts, err := Parse(fsys, "t/*.tmpl", func(string) template.FuncMap { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ locale, name, want string }{
		{"es-MX", "subject", "es-mx"},
		{"es_AR", "subject", "es"},
		{"ES", "subject", "es"},
		{"ru", "subject", "en"},
		{"es-MX", "only_en", "en"},
		{"", "subject", "en"},
	} {
		got := ts.Pick(c.locale, c.name)
		if got == nil || got.Name() != c.want {
			t.Errorf("Pick(%q, %q) = %v, want the %q templates", c.locale, c.name, got, c.want)
		}
	}
	if ts.Pick("en", "missing") != nil {
		t.Error("Pick of a template no language defines is not nil")
	}
	if !ts.Has("only_en") || ts.Has("missing") {
		t.Error("Has does not follow the default language")
	}
}

// HTML templates are picked as text ones are, fill the layouts every
// language shares, and escape what they insert.
func TestParseHTMLPicksAlikeFillsLayoutsAndEscapes(t *testing.T) {
	fsys := fstest.MapFS{
		"t/layout.html": {Data: []byte(`{{define "page"}}<p title="{{.}}">{{template "hello" .}}</p>{{end}}`)},
		"t/en.tmpl":     {Data: []byte(`{{define "hello"}}Hello {{.}}{{end}}{{define "only_en"}}{{.}}{{end}}`)},
		"t/es.tmpl":     {Data: []byte(`{{define "hello"}}Hola {{.}}{{end}}`)},
	}
	ts, err := ParseHTML(fsys, "t/*.tmpl", func(string) htmltemplate.FuncMap { return nil }, "t/layout.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ locale, name, want string }{
		{"es-MX", "page", `<p title="&lt;b&gt;">Hola &lt;b&gt;</p>`},
		{"ru", "page", `<p title="&lt;b&gt;">Hello &lt;b&gt;</p>`},
		{"es", "only_en", `&lt;b&gt;`},
	} {
		var b strings.Builder
		if err := ts.Pick(c.locale, c.name).ExecuteTemplate(&b, c.name, "<b>"); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("%s for %q = %s, want %s", c.name, c.locale, b.String(), c.want)
		}
	}
	if len(ts) != 2 {
		t.Errorf("languages %v, want en and es: a layout is not a language", ts)
	}
	if ts.Pick("es", "missing") != nil || !ts.Has("page") || ts.Has("missing") {
		t.Error("Pick and Has do not treat HTML templates as text ones")
	}
}

func TestBase(t *testing.T) {
	for in, want := range map[string]string{"es-MX": "es", "es_mx": "es", "ru": "ru", "": ""} {
		if got := Base(in); got != want {
			t.Errorf("Base(%q) = %q, want %q", in, got, want)
		}
	}
}
