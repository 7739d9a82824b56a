package templates_test

import (
	"bytes"
	htmltemplate "html/template"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/templates"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

type order struct {
	ID    string
	Total float64
}

// data is what the templates below see: text, a pointer, a time, a list.
type data struct {
	Name   string
	Colour string
	Order  *order
	None   *order
	When   time.Time
	Lines  []string
	Big    string
}

func sample() data {
	return data{Name: "Olga <Petrova> & \"Zarya\"", Colour: "#1f4e79", Order: &order{ID: "PO-42", Total: 183.48},
		When: time.Date(2026, 11, 30, 9, 5, 0, 0, time.UTC), Lines: []string{"a", "b", "c"}, Big: strings.Repeat("x<", 5<<10)}
}

var funcs = template.FuncMap{"lower": strings.ToLower}

func boundText(t *testing.T, src string) *templates.Bounded[*template.Template] {
	t.Helper()
	b, err := templates.BoundText(template.Must(template.New("t").Option("missingkey=error").Funcs(funcs).Parse(src)))
	require.NoError(t, err)
	return b
}

func boundHTML(t *testing.T, src string) *templates.Bounded[*htmltemplate.Template] {
	t.Helper()
	b, err := templates.BoundHTML(htmltemplate.Must(htmltemplate.New("t").Option("missingkey=error").Funcs(funcs).Parse(src)))
	require.NoError(t, err)
	return b
}

type executor interface {
	ExecuteTemplate(w io.Writer, name string, data any) error
}

// run executes name and returns what it wrote and its error.
func run(b executor, name string, d any) (string, error) {
	var out bytes.Buffer
	err := b.ExecuteTemplate(&out, name, d)
	return out.String(), err
}

// Bounded, a template writes exactly what it would unbounded: the rewrite
// that makes it pay changes nothing it does — text or HTML, in every
// context html/template escapes for.
func TestABoundedTemplateRendersAsItWould(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`Hello {{.Name}}!`,
		`{{if .Order}}{{.Order.ID}}{{else}}none{{end}} {{if .None}}{{.None.ID}}{{else if .Name}}named{{end}}`,
		`{{with .Order}}{{.ID}} {{printf "%07.2f|%-6s|%x|%[1]v|%q" .Total .ID .ID}}{{end}}{{with .None}}x{{else}}no order{{end}}`,
		`{{range $i, $l := .Lines}}{{$i}}:{{$l}} {{if eq $i 1}}{{break}}{{end}}{{end}}`,
		`{{range .Lines}}{{if eq . "b"}}{{continue}}{{end}}{{.}}{{else}}empty{{end}}{{range slice .Lines 0 0}}{{else}}nothing{{end}}`,
		`{{$x := lower .Name}}{{$x = printf "%s-%s" $x $x}}{{$x}} {{len $x}} {{index .Lines 0}} {{slice .Name 1 3}}`,
		`{{.Name | printf "%q" | lower}} {{.Lines | len | printf "%d lines"}} {{"a" | eq "a" | not}}`,
		`{{and .Name .Order}} {{or "" .Name}} {{not .Order}} {{eq .Order.ID "PO-42" "x"}} {{lt 1 2}} {{ge .Order.Total 100.0}}`,
		`{{define "d"}}[{{.}}]{{end}}{{template "d" .Name}}{{block "b" .Lines}}{{len .}}{{end}}{{template "d"}}`,
		`{{.When.Format "2006-01-02 15:04"}} {{.When.Year}} {{(.When.AddDate 1 0 0).Year}} {{.When}}`,
		`{{range 3}}{{.}}{{end}} {{range $i := 2}}{{$i}}{{end}} {{print .Order}} {{.Order}} {{println .None 1 "x"}}`,
		`{{html .Name}} {{js .Name}} {{urlquery .Name "&"}} {{.Name | html}} {{.Name | urlquery}} {{print (print (.Name))}}`,
		`<a href="/x?q={{.Name}}&c={{.Order.ID}}" title="{{.Name}}">{{.Name}}</a><p {{if .Order}}class="{{.Colour}}"{{end}}>{{.Name}}</p>`,
		`<script>var s = {{.Name}};{{if .Order}}var t = {{.Order.ID}};{{end}}{{range .Lines}}f({{.}});{{end}}</script>`,
		`<style>p { color: {{.Colour}}; }{{if .Order}} b { color: {{.Colour}} }{{end}}</style><img src="{{.Name}}" alt="{{lower .Name}}">`,
	} {
		want, err := run(template.Must(template.New("t").Option("missingkey=error").Funcs(funcs).Parse(src)), "t", sample())
		require.NoError(t, err, src)
		got, err := run(boundText(t, src), "t", sample())
		require.NoError(t, err, src)
		require.Equal(t, want, got, src)

		want, err = run(htmltemplate.Must(htmltemplate.New("t").Option("missingkey=error").Funcs(funcs).Parse(src)), "t", sample())
		require.NoError(t, err, "html: %s", src)
		got, err = run(boundHTML(t, src), "t", sample())
		require.NoError(t, err, "html: %s", src)
		require.Equal(t, want, got, "html: %s", src)
	}
}

// Every way a template could work without end, or write or build text
// without end, stops at a bound — in text and HTML alike — and says which.
// Each is sized so that, unbounded, it would finish (in a few million
// steps, a few megabytes): the bound, not the machine, is what stops it.
func TestEveryRunawayTemplateStopsAtABound(t *testing.T) {
	t.Parallel()
	steps, output, depth := "template exceeded its work bound (20000 steps)",
		"template exceeded its output bound (524288 bytes)", "templates called one another more than 16 deep"
	for name, c := range map[string]struct{ src, want string }{
		"an empty loop in a loop": {`{{range 1000}}{{range 1000}}{{end}}{{end}}`, steps},
		"a loop of conditions":    {`{{range 1000000}}{{if eq 1 2}}{{end}}{{end}}`, steps},
		"a loop over the data":    {`{{range 100000}}{{range $.Lines}}{{end}}{{end}}`, steps},
		"writing again and again": {`{{range 100}}{{$.Big}}{{end}}`, output},
		"one long text":           {`{{printf "%0600000d" 1}}`, output},
		"templates calling one another, without end": {
			`{{define "r"}}{{template "r" .}}{{end}}{{template "r" .}}`, depth},
		"templates calling one another four times, ten deep": {fanOut(10, 4), steps},
		"a huge width, again and again":                      {`{{range 100}}{{$x := printf "%0999999d" 1}}{{end}}`, steps},
		"a width taken from an argument":                     {`{{range 100}}{{$x := printf "%*d" 1000000 1}}{{end}}`, steps},
		"an argument printed again and again": {
			`{{$a := printf "%0999d" 1}}{{$a = printf "%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s" $a}}{{$a = printf "%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s" $a}}{{$a = printf "%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s" $a}}`,
			steps},
		"text doubled in variables": {`{{$a := "xxxxxxxx"}}` + strings.Repeat(`{{$a = print $a $a}}`, 18), steps},
		"text doubled along a pipeline": {
			`{{"\\\\\\\\\\\\\\\\" ` + strings.Repeat(`| printf "%q" `, 18) + `| len}}`, steps},
		"text grown by escaping along a pipeline": {
			`{{"<<<<<<<<" ` + strings.Repeat(`| js `, 18) + `| len}}`, steps},
		"text grown by a method": {`{{$l := "1 1 1 1 1 1 1 1"}}{{range 18}}{{$l = $.When.Format $l}}{{end}}{{len $l}}`, steps},
		"long texts compared in a loop": {
			`{{$a := printf "%0200000d" 1}}{{$b := printf "%0200000d" 2}}{{range 1000}}{{if eq $a $b}}{{end}}{{end}}`, steps},
		"a long text looked at in a loop": {`{{range 1000}}{{if eq $.Big $.Big}}{{end}}{{end}}`, steps},
	} {
		for kind, b := range map[string]executor{"text": boundText(t, c.src), "html": boundHTML(t, c.src)} {
			var out bytes.Buffer
			err := b.ExecuteTemplate(&out, "t", sample())
			require.ErrorIs(t, err, templates.ErrBound, "%s (%s)", name, kind)
			require.EqualError(t, err, c.want, "%s (%s)", name, kind)
			require.LessOrEqual(t, out.Len(), templates.MaxOutput, "%s (%s)", name, kind)
		}
	}
}

// Text that html/template throws away — a CSS value it does not trust,
// written as "ZgotmplZ" — still costs what reading it costs.
func TestWhatHTMLThrowsAwayIsStillPaidFor(t *testing.T) {
	t.Parallel()
	b := boundHTML(t, `<style>{{range 4000}}p { color: {{$.Big}} }{{end}}</style>`)
	got, err := run(b, "t", sample())
	require.EqualError(t, err, "template exceeded its work bound (20000 steps)")
	require.NotContains(t, got, "x<")
}

// fanOut is templates l0…l<levels>, each calling the next n times: n to the
// power levels calls, none deeper than levels.
func fanOut(levels, n int) string {
	var src strings.Builder
	for l := range levels {
		src.WriteString(`{{define "l` + strconv.Itoa(l) + `"}}`)
		src.WriteString(strings.Repeat(`{{template "l`+strconv.Itoa(l+1)+`" .}}`, n))
		src.WriteString(`{{end}}`)
	}
	src.WriteString(`{{define "l` + strconv.Itoa(levels) + `"}}{{end}}{{template "l0" .}}`)
	return src.String()
}

// A template nested deeper than MaxNesting is refused when it is bound,
// before it ever runs; a long {{else if}} chain is not a nesting.
func TestDeepNestingIsRefusedWhenBound(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"ifs":         strings.Repeat(`{{if .Name}}`, 17) + strings.Repeat(`{{end}}`, 17),
		"ranges":      strings.Repeat(`{{range 1}}`, 17) + strings.Repeat(`{{end}}`, 17),
		"parentheses": `{{print ` + strings.Repeat(`(print `, 17) + `1` + strings.Repeat(`)`, 17) + `}}`,
	} {
		_, err := templates.BoundText(template.Must(template.New("t").Parse(src)))
		require.ErrorIs(t, err, templates.ErrInvalid, name)
		require.ErrorContains(t, err, "nest more than 16 deep", name)
		_, err = templates.BoundHTML(htmltemplate.Must(htmltemplate.New("t").Parse(src)))
		require.ErrorIs(t, err, templates.ErrInvalid, name)
	}
	chain := `{{if eq .Name "0"}}0` + strings.Repeat(`{{else if eq .Name "1"}}1`, 40) + `{{else}}other{{end}}`
	got, err := run(boundText(t, chain), "t", sample())
	require.NoError(t, err)
	require.Equal(t, "other", got)
}

// An execution that hit a bound leaves nothing behind: the next, on the
// same template, and those running at the same time, each have a whole
// budget of their own.
func TestEachExecutionHasABudgetOfItsOwn(t *testing.T) {
	t.Parallel()
	// Under the bound once, over it for a name that loops.
	b := boundText(t, `{{define "once"}}{{range 6000}}{{end}}{{end}}{{define "loop"}}{{range 1000000}}{{end}}{{end}}`)
	_, err := run(b, "loop", sample())
	require.ErrorIs(t, err, templates.ErrBound)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 4 {
				_, err := run(b, "once", sample())
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
}
