package templates

import (
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
)

// Bounds on rendering a tenant's template. Go's templates have no limit of
// their own: a few bytes of {{range}} loop for hours or write gigabytes,
// and a tenant's template runs on every worker that sends its emails.
const (
	// MaxSteps bounds the work of one render: each action, piece of
	// text, loop iteration and template call is a step, and so is every
	// 64 bytes of text a command is handed, makes or writes. Herald's own
	// templates take under a hundred.
	MaxSteps = 20_000
	// MaxOutput bounds what one render writes, in bytes.
	MaxOutput = 512 << 10
	// MaxDepth bounds how deep templates call templates ({{template}}).
	MaxDepth = 16
	// MaxNesting bounds how deep a template's {{if}}, {{range}}, {{with}}
	// and parentheses nest: checked when it is parsed.
	MaxNesting = 16
)

// bytesPerStep is how many bytes of text handled cost a step.
const bytesPerStep = 64

// ErrBound is what a render that went past one of the bounds matches.
var ErrBound = errors.New("templates: a bound on rendering was exceeded")

// boundError says which bound a render went past; it is ErrBound.
type boundError string

func (e boundError) Error() string        { return string(e) }
func (e boundError) Is(target error) bool { return target == ErrBound }

var (
	errSteps  = boundError(fmt.Sprintf("template exceeded its work bound (%d steps)", MaxSteps))
	errOutput = boundError(fmt.Sprintf("template exceeded its output bound (%d bytes)", MaxOutput))
	errDepth  = boundError(fmt.Sprintf("templates called one another more than %d deep", MaxDepth))
)

// executable is what Bounded needs of a parsed set of templates:
// text/template's and html/template's both are one.
type executable[T any] interface {
	Name() string
	Templates() []T
	AddParseTree(name string, tree *parse.Tree) (T, error)
	Clone() (T, error)
	Funcs(template.FuncMap) T
	ExecuteTemplate(w io.Writer, name string, data any) error
}

// Bounded is a set of templates whose every execution is bounded: in
// steps (MaxSteps), output (MaxOutput) and depth (MaxDepth). Executions
// that go past a bound stop with an error that is ErrBound. It is safe for
// concurrent use.
//
// Each execution has a budget of its own, which the functions its
// rewritten trees call spend; those functions are bound to the budget by
// cloning the set (an html/template cannot be cloned once it has run), and
// clones are kept in a pool for the executions that follow.
type Bounded[T executable[T]] struct {
	master T
	pool   sync.Pool
}

// instance is a clone of the master with its budget's functions.
type instance[T any] struct {
	t      T
	budget *budget
}

// BoundText bounds a parsed set of text templates. Its trees are rewritten
// (copies: t's own are untouched) and must not be parsed into after.
func BoundText(t *template.Template) (*Bounded[*template.Template], error) {
	return bound(t, func(t *template.Template) *parse.Tree { return t.Tree })
}

// BoundHTML bounds a parsed set of HTML templates, which must not have run
// (AddParseTree refuses one that has).
func BoundHTML(t *htmltemplate.Template) (*Bounded[*htmltemplate.Template], error) {
	return bound(t, func(t *htmltemplate.Template) *parse.Tree { return t.Tree })
}

// bound adds to set, under its name, a rewritten copy of each of its
// trees, in the order of their names (so that a refusal names the same
// one every time).
func bound[T executable[T]](set T, treeOf func(T) *parse.Tree) (*Bounded[T], error) {
	all := set.Templates()
	slices.SortFunc(all, func(a, b T) int { return strings.Compare(a.Name(), b.Name()) })
	for _, t := range all {
		if treeOf(t) == nil {
			continue
		}
		tree := treeOf(t).Copy()
		err := rewrite(tree)
		if err == nil {
			_, err = set.AddParseTree(t.Name(), tree)
		}
		if err != nil {
			return nil, err
		}
	}
	b := &Bounded[T]{master: set}
	b.pool.New = func() any {
		t, err := set.Clone()
		if err != nil {
			return err
		}
		budget := &budget{}
		return &instance[T]{t: t.Funcs(budget.funcs()), budget: budget}
	}
	return b, nil
}

// Name is the set's name: the language, for Herald's templates.
func (b *Bounded[T]) Name() string { return b.master.Name() }

// ExecuteTemplate runs the template name on data, writing to w, within the
// bounds. A bound exceeded is reported as the bound alone (ErrBound), without
// the template engine's words about the function that found it.
func (b *Bounded[T]) ExecuteTemplate(w io.Writer, name string, data any) error {
	got := b.pool.Get()
	in, ok := got.(*instance[T])
	if !ok {
		return fmt.Errorf("templates: cloning %s: %v", b.master.Name(), got)
	}
	defer b.pool.Put(in)
	*in.budget = budget{}
	err := in.t.ExecuteTemplate(&limitedWriter{w: w, left: MaxOutput}, name, data)
	if bound := boundError(""); errors.As(err, &bound) {
		return bound
	}
	return err
}

// limitedWriter fails a write past MaxOutput, which stops the execution.
type limitedWriter struct {
	w    io.Writer
	left int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if len(p) > l.left {
		return 0, errOutput
	}
	l.left -= len(p)
	return l.w.Write(p)
}

// budget is what one execution has spent.
type budget struct {
	steps, depth int
}

// The functions rewritten trees call. A tenant cannot call them: the names
// are not known when its template is parsed.
const (
	stepFunc   = "_herald_step"
	enterFunc  = "_herald_enter"
	leaveFunc  = "_herald_leave"
	chargeFunc = "_herald_charge"
)

func (b *budget) funcs() template.FuncMap {
	return template.FuncMap{
		stepFunc: b.step, enterFunc: b.enter, leaveFunc: b.leave, chargeFunc: b.charge,
		"printf": b.printf,
	}
}

func (b *budget) spend(steps int) error {
	b.steps += steps
	if b.steps > MaxSteps {
		return errSteps
	}
	return nil
}

// step spends a list's nodes, as the list begins.
func (b *budget) step(nodes int) (string, error) { return "", b.spend(nodes) }

// enter is step for a template's own list, which is also one call deeper.
func (b *budget) enter(nodes int) (string, error) {
	b.depth++
	if b.depth > MaxDepth {
		return "", errDepth
	}
	return b.step(nodes)
}

func (b *budget) leave() string {
	b.depth--
	return ""
}

// charge spends a step for a value handed on, and a step for every
// bytesPerStep bytes of it if it is text; it hands the value on unchanged.
func (b *budget) charge(v any) (reflect.Value, error) {
	rv := reflect.ValueOf(v)
	n := 1
	if rv.Kind() == reflect.String || rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
		n += rv.Len() / bytesPerStep
	}
	return rv, b.spend(n)
}

// spendBytes spends what writing n bytes costs.
func (b *budget) spendBytes(n int) error { return b.spend(n/bytesPerStep + 1) }

// printf is fmt.Sprintf, whose result is paid for before it is made: a
// width, a precision or an argument used again and again make it far
// longer than what it is given.
func (b *budget) printf(format string, args ...any) (string, error) {
	if err := b.spendBytes(printfSize(format, args)); err != nil {
		return "", err
	}
	return fmt.Sprintf(format, args...), nil
}
