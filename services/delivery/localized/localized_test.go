package localized

import (
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

func TestBase(t *testing.T) {
	for in, want := range map[string]string{"es-MX": "es", "es_mx": "es", "ru": "ru", "": ""} {
		if got := Base(in); got != want {
			t.Errorf("Base(%q) = %q, want %q", in, got, want)
		}
	}
}
