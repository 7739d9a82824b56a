package configdoc

import (
	"cmp"
	"errors"
	"fmt"
	"go/ast"
	"maps"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// Key is one setting of the YAML file.
type Key struct {
	// Path is the key's full YAML path: email.providers[].type,
	// plans.<name>.burst.
	Path string
	// Type is what the value is, in YAML's words: string, integer,
	// duration, list of strings, object…
	Type string
	// Doc is the field's doc comment (or, for an object, its type's).
	Doc string
	// Default is what the doc comment's "Defaults to …" says; "" when it
	// says none.
	Default string
	// Env and Flag override the key, when main's loadConfig says so.
	Env, Flag string
	// SameAs is the key whose nested keys this one's are, when both are of
	// the same struct type: they are listed there once.
	SameAs string

	// goPath is the Go selector reaching the field from the top-level
	// config (Email.Concurrency), for keys outside lists and maps: what
	// loadConfig assigns.
	goPath string
}

// ErrUndocumented is returned for keys without a doc comment.
var ErrUndocumented = errors.New("undocumented configuration keys")

// walker collects the keys of a config struct and its nested types.
type walker struct {
	src          *source
	keys         []Key
	undocumented []string
	seen         map[string]string // a struct type's first key, by pkg.Type
}

// typeRef is a type expression and the declaration it appears in, which
// says what its package names mean.
type typeRef struct {
	expr ast.Expr
	file *ast.File
	pkg  *pkg
}

// of is expr, read in the declaration of ref.
func (ref typeRef) of(expr ast.Expr) typeRef {
	return typeRef{expr: expr, file: ref.file, pkg: ref.pkg}
}

// shape is what a type expression is: its YAML type, and, for objects
// (or lists and maps of them), the struct holding the nested keys.
type shape struct {
	yamlType string
	object   *ast.StructType // the fields, when the value (or its elements) is an object
	in       typeRef         // the declaration the struct's fields are read in
	doc      string          // the named type's doc, if any
	named    string          // the named type (pkg.Type) holding the fields, if any
	elem     string          // what an element adds to the path: "[]", ".<name>"
}

// walkType collects the keys of the struct type name in importPath.
func (s *source) walkType(importPath, name string) ([]Key, error) {
	decl, err := s.lookup(importPath, name)
	if err != nil {
		return nil, err
	}
	st, ok := decl.spec.Type.(*ast.StructType)
	if !ok {
		return nil, fmt.Errorf("%s.%s is not a struct", importPath, name)
	}
	w := &walker{src: s, seen: map[string]string{}}
	if err := w.fields(st, typeRef{file: decl.file, pkg: decl.pkg}, "", "", nil, nil); err != nil {
		return nil, err
	}
	if len(w.undocumented) > 0 {
		return w.keys, fmt.Errorf("%w: %s — give each field a doc comment saying what it does and its default (\"Defaults to …\")",
			ErrUndocumented, strings.Join(w.undocumented, ", "))
	}
	return w.keys, nil
}

// fields adds the keys of struct st under path prefix (Go selector
// goPrefix, "" inside lists and maps). names are the keys of the fields a
// doc comment may mention, by Go name: st's own unless it is inlined;
// defaults are the defaults the embedding struct gives inlined fields.
func (w *walker) fields(st *ast.StructType, in typeRef, prefix, goPrefix string, names, defaults map[string]string) error {
	if names == nil {
		var err error
		if names, err = w.src.keyNames(st, in); err != nil {
			return fmt.Errorf("%s: %w", prefix, err)
		}
	}
	for _, f := range st.Fields.List {
		_, inline, skip := yamlTag(f)
		if skip {
			continue
		}
		if len(f.Names) == 0 {
			if !inline {
				return fmt.Errorf("%s: embedded field %s is not yaml:\",inline\"; configdoc does not know its key", prefix, exprString(f.Type))
			}
			if err := w.inline(f, in, prefix, goPrefix, names); err != nil {
				return err
			}
			continue
		}
		for _, id := range f.Names {
			if !id.IsExported() {
				continue
			}
			if err := w.field(f, id.Name, names, defaults[id.Name], in, prefix, goPrefix); err != nil {
				return err
			}
		}
	}
	return nil
}

// inline adds the fields of an embedded struct as the embedding struct's
// own, as yaml's ",inline" reads them (and Go promotes them). The embedded
// field's doc comment may change their defaults: "MaxTries defaults to 15".
func (w *walker) inline(f *ast.Field, in typeRef, prefix, goPrefix string, names map[string]string) error {
	sh, err := w.src.shape(in.of(f.Type))
	if err != nil {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	if sh.object == nil || sh.elem != "" {
		return fmt.Errorf("%s: inline field %s is not a struct", prefix, exprString(f.Type))
	}
	defaults := map[string]string{}
	for _, m := range inlineDefault.FindAllStringSubmatch(oneLine(f.Doc.Text()), -1) {
		defaults[m[1]] = m[2]
	}
	return w.fields(sh.object, sh.in, prefix, goPrefix, names, defaults)
}

// inlineDefault finds what an embedding struct says of an inlined field's
// default.
var inlineDefault = regexp.MustCompile(`\b([A-Z][A-Za-z0-9]*) defaults to (.+?)(?:[.;:](?:\s|$)|$)`)

// field adds the key of a struct's field goName, and the keys beneath it.
func (w *walker) field(f *ast.Field, goName string, names map[string]string, def string, in typeRef, prefix, goPrefix string) error {
	path := join(prefix, names[goName])
	sh, err := w.src.shape(in.of(f.Type))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	k, err := w.key(f, goName, names, def, sh, path)
	if err != nil {
		return err
	}
	if goPrefix != "" || prefix == "" {
		k.goPath = join(goPrefix, goName)
	}
	first, seen := w.seen[sh.named]
	if seen && sh.object != nil {
		k.SameAs = first
	}
	w.keys = append(w.keys, k)
	switch {
	case sh.object == nil || seen:
		return nil
	case sh.named != "":
		w.seen[sh.named] = path + sh.elem
	}
	if sh.elem != "" {
		return w.fields(sh.object, sh.in, path+sh.elem, "", nil, nil)
	}
	return w.fields(sh.object, sh.in, path, k.goPath, nil, nil)
}

// key describes field f (goName, of shape sh) at path, noting it if its
// doc comment is missing. An object may be described by its type's doc.
func (w *walker) key(f *ast.Field, goName string, names map[string]string, def string, sh shape, path string) (Key, error) {
	k := Key{Path: path, Type: sh.yamlType, Doc: yamlNames(oneLine(cmp.Or(f.Doc.Text(), f.Comment.Text())), names, goName)}
	if k.Doc == "" && sh.object != nil {
		own, err := w.src.keyNames(sh.object, sh.in)
		if err != nil {
			return k, fmt.Errorf("%s: %w", path, err)
		}
		k.Doc = yamlNames(oneLine(sh.doc), own, "")
	}
	if k.Doc == "" {
		w.undocumented = append(w.undocumented, path)
	}
	if def != "" {
		k.Doc = withDefault(k.Doc, def)
	}
	k.Default = defaultOf(k.Doc)
	return k, nil
}

// shape says what the type expression ref is.
func (s *source) shape(ref typeRef) (shape, error) {
	switch e := ref.expr.(type) {
	case *ast.StarExpr:
		return s.shape(ref.of(e.X))
	case *ast.StructType:
		return shape{yamlType: "object", object: e, in: ref}, nil
	case *ast.ArrayType:
		return s.container(ref, e.Elt, "[]", func(elem string) string { return "list of " + plural(elem) })
	case *ast.MapType:
		return s.mapShape(ref, e)
	case *ast.Ident:
		if basic, ok := basicTypes[e.Name]; ok {
			return shape{yamlType: basic}, nil
		}
		return s.named(ref.pkg.path, e.Name)
	case *ast.SelectorExpr:
		return s.selected(ref, e)
	}
	return shape{}, fmt.Errorf("a YAML file cannot set a %s", exprString(ref.expr))
}

// basicTypes are Go's types a YAML scalar decodes into, by YAML's name.
var basicTypes = map[string]string{
	"string": "string", "bool": "boolean", "float32": "number", "float64": "number",
	"int": "integer", "int8": "integer", "int16": "integer", "int32": "integer", "int64": "integer",
	"uint": "integer", "uint8": "integer", "uint16": "integer", "uint32": "integer", "uint64": "integer",
}

// selected is the shape of pkg.Name: time.Duration, or a type of the module.
func (s *source) selected(ref typeRef, e *ast.SelectorExpr) (shape, error) {
	local, ok := e.X.(*ast.Ident)
	if !ok {
		return shape{}, fmt.Errorf("unexpected type %s", exprString(e))
	}
	path, err := s.importPath(ref.file, local.Name)
	if err != nil {
		return shape{}, err
	}
	if path == "time" && e.Sel.Name == "Duration" {
		return shape{yamlType: "duration"}, nil
	}
	if !s.inModule(path) {
		return shape{}, fmt.Errorf("a YAML file cannot set a %s (configdoc knows time.Duration and the module's own types)", exprString(e))
	}
	return s.named(path, e.Sel.Name)
}

// named is the shape of type name declared in package importPath.
func (s *source) named(importPath, name string) (shape, error) {
	decl, err := s.lookup(importPath, name)
	if err != nil {
		return shape{}, err
	}
	sh, err := s.shape(typeRef{expr: decl.spec.Type, file: decl.file, pkg: decl.pkg})
	if err != nil {
		return shape{}, fmt.Errorf("%s.%s: %w", decl.pkg.name, name, err)
	}
	if sh.doc == "" {
		sh.doc = decl.doc
	}
	if sh.named == "" {
		sh.named = importPath + "." + name
	}
	return sh, nil
}

// container is the shape of a list (or map) of elem; an object's elements
// add elemPath to the path of their keys.
func (s *source) container(ref typeRef, elem ast.Expr, elemPath string, describe func(string) string) (shape, error) {
	sh, err := s.shape(ref.of(elem))
	if err != nil {
		return shape{}, err
	}
	if sh.elem != "" && sh.object != nil {
		return shape{}, fmt.Errorf("configdoc does not follow a %s nested in another", exprString(elem))
	}
	sh.elem = elemPath
	sh.yamlType = describe(sh.yamlType)
	return sh, nil
}

// mapShape is the shape of a map: its keys are named by the key type
// (<priority>, <channel>), or <name> for a plain string.
func (s *source) mapShape(ref typeRef, m *ast.MapType) (shape, error) {
	placeholder := "name"
	switch k := m.Key.(type) {
	case *ast.SelectorExpr:
		placeholder = strings.ToLower(k.Sel.Name)
	case *ast.Ident:
		if _, basic := basicTypes[k.Name]; !basic {
			placeholder = strings.ToLower(k.Name)
		}
	}
	return s.container(ref, m.Value, ".<"+placeholder+">", func(elem string) string { return "map of " + placeholder + " to " + elem })
}

// plural names a list's (or map's) elements.
func plural(yamlType string) string {
	switch yamlType {
	case "string", "integer", "number", "boolean", "duration", "object":
		return yamlType + "s"
	}
	return yamlType
}

// yamlTag reads a field's yaml tag: its key, whether it is inlined, and
// whether the file cannot set it (yaml:"-").
func yamlTag(f *ast.Field) (name string, inline, skip bool) {
	if f.Tag == nil {
		return "", false, false
	}
	raw, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return "", false, false
	}
	tag := reflect.StructTag(raw).Get("yaml")
	if tag == "-" {
		return "", false, true
	}
	name, opts, _ := strings.Cut(tag, ",")
	return name, strings.Contains(","+opts+",", ",inline,"), false
}

// join adds key to a YAML (or Go) path.
func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// oneLine is a doc comment as one paragraph.
func oneLine(doc string) string { return strings.Join(strings.Fields(doc), " ") }

// exprString shows a type expression for errors.
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.ArrayType:
		return "[]" + exprString(e.Elt)
	case *ast.MapType:
		return "map[" + exprString(e.Key) + "]" + exprString(e.Value)
	case *ast.FuncType:
		return "func"
	case *ast.InterfaceType:
		return "interface"
	}
	return fmt.Sprintf("%T", e)
}

// keyNames are the YAML keys of struct st's fields (inlined ones too), by
// Go name.
func (s *source) keyNames(st *ast.StructType, in typeRef) (map[string]string, error) {
	names := map[string]string{}
	for _, f := range st.Fields.List {
		name, inline, skip := yamlTag(f)
		switch {
		case skip:
		case len(f.Names) == 0 && inline:
			sh, err := s.shape(in.of(f.Type))
			if err != nil || sh.object == nil {
				return nil, fmt.Errorf("inline field %s: not a struct (%v)", exprString(f.Type), err)
			}
			inner, err := s.keyNames(sh.object, sh.in)
			if err != nil {
				return nil, err
			}
			maps.Copy(names, inner)
		default:
			for _, id := range f.Names {
				names[id.Name] = cmp.Or(name, strings.ToLower(id.Name))
			}
		}
	}
	return names, nil
}

var (
	identifier = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)
	multiWord  = regexp.MustCompile(`^[A-Z][a-z0-9]+[A-Z]`)
)

// yamlNames writes, in the doc comment of field own, the Go names of its
// struct's fields as a reader of the YAML file knows them: "MaxTries" is
// `max_tries`. A one-word name is taken for a field's only where it cannot
// be a sentence's first word (or begins own's doc); acronyms (URL, TLS) are
// left alone, being words too.
func yamlNames(doc string, names map[string]string, own string) string {
	var b strings.Builder
	last := 0
	for _, m := range identifier.FindAllStringIndex(doc, -1) {
		word := doc[m[0]:m[1]]
		key, ok := names[word]
		if !ok || strings.ToUpper(word) == word || !isField(doc, m[0], word, own) {
			continue
		}
		b.WriteString(doc[last:m[0]])
		b.WriteString("`" + key + "`")
		last = m[1]
	}
	b.WriteString(doc[last:])
	return b.String()
}

// isField says whether word, at i in doc, names a field rather than being
// a word of the sentence.
func isField(doc string, i int, word, own string) bool {
	switch {
	case i == 0:
		return word == own || multiWord.MatchString(word)
	case word == own:
		return false
	case strings.HasSuffix(doc[:i], ". "):
		return multiWord.MatchString(word)
	}
	return true
}
