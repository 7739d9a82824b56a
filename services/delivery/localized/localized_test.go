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

// HTML templates are picked as text ones are, and escape what they insert.
func TestParseHTMLPicksAlikeAndEscapes(t *testing.T) {
	fsys := fstest.MapFS{
		"t/en.tmpl": {Data: []byte(`{{define "page"}}<p title="{{.}}">Hello {{.}}</p>{{end}}`)},
		"t/es.tmpl": {Data: []byte(`{{define "page"}}<p>Hola {{.}}</p>{{end}}`)},
	}
	ts, err := ParseHTML(fsys, "t/*.tmpl", func(string) htmltemplate.FuncMap { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for locale, want := range map[string]string{
		"es-MX": `<p>Hola &lt;script&gt;</p>`,
		"ru":    `<p title="&lt;script&gt;">Hello &lt;script&gt;</p>`,
	} {
		var b strings.Builder
		if err := ts.Pick(locale, "page").ExecuteTemplate(&b, "page", "<script>"); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("page for %q = %s, want %s", locale, b.String(), want)
		}
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
