package event

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// encoding/json resolves a repeated key by keeping the last value, and
// matches keys to fields ignoring case, so {"tenant":"acme","TENANT":"x"}
// decodes as tenant x — while a gateway that reads the first key sees acme.
// Herald refuses what two parsers could read differently: the walk below
// runs over every object of a payload before its values are trusted.

// maxDepth bounds nesting. Herald's schema is five levels deep; the bound
// keeps a payload of a million '[' from recursing a million times.
const maxDepth = 32

// attributeName is what CloudEvents 1.0 allows as an attribute name.
var attributeName = regexp.MustCompile(`^[a-z0-9]+$`)

// keyWalk checks the keys of one JSON value, recording findings in p.
type keyWalk struct {
	dec *json.Decoder
	p   *problems
}

// path is where a value sits, built into a field name only when a problem
// is reported there: most payloads have none, and naming every key on the
// way cost more than the walk itself.
type path struct {
	parent *path
	key    string // an object's key; else an array index
	index  int
	root   string // the top level's name ("" for an event, "data" for its data)
}

func (p *path) String() string {
	switch {
	case p.parent == nil:
		return p.root
	case p.key == "" && p.index >= 0:
		return p.parent.String() + "[" + strconv.Itoa(p.index) + "]"
	}
	return join(p.parent.String(), p.key)
}

// checkEnvelopeKeys walks a whole event: envelope keys must be CloudEvents
// attribute names, and no object anywhere may repeat a key, exactly or
// differing only in case.
func checkEnvelopeKeys(p *problems, payload []byte) error {
	w := keyWalk{dec: json.NewDecoder(bytes.NewReader(payload)), p: p}
	w.dec.UseNumber()
	return w.value(&path{}, envelopeSchema, 0, true)
}

var envelopeSchema = reflect.TypeFor[Event]()

// checkDataKeys walks an event's data against the shape it decodes into:
// besides repeated keys, a key that names one of its fields only when case
// is ignored is refused, because encoding/json would accept it silently.
func checkDataKeys(p *problems, data []byte, into any) error {
	w := keyWalk{dec: json.NewDecoder(bytes.NewReader(data)), p: p}
	w.dec.UseNumber()
	return w.value(&path{root: "data"}, reflect.TypeOf(into), 0, false)
}

// value walks one value found at path; schema is the Go type it decodes
// into (nil when unknown), envelope marks the top level of an event.
func (w keyWalk) value(at *path, schema reflect.Type, depth int, envelope bool) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch tok := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return fmt.Errorf("%s: nested deeper than %d levels", orTop(at.String()), maxDepth)
		}
		if tok == '{' {
			return w.object(at, schema, depth+1, envelope)
		}
		return w.array(at, elem(schema), depth+1)
	case string:
		if strings.ContainsRune(tok, utf8.RuneError) {
			w.p.add(orTop(at.String()), "contains U+FFFD or an unpaired \\u surrogate escape: text must be valid Unicode")
		}
	}
	return nil
}

func (w keyWalk) object(at *path, schema reflect.Type, depth int, envelope bool) error {
	fields := fieldsOf(schema)
	seen := map[string]string{} // folded key → the key as first seen
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		here := &path{parent: at, key: key, index: -1}
		folded := fold(key)
		switch first, ok := seen[folded]; {
		case ok && first == key:
			w.p.add(here.String(), "appears twice in one object (keys must be unique)")
		case ok:
			w.p.add(here.String(), "differs only in case from %s in the same object (keys are case-sensitive and must be unique)", quote(first))
		}
		seen[folded] = key
		w.checkName(here, key, folded, fields, envelope)
		if envelope && key == "data" {
			// The data is walked against its own shape when it is
			// decoded (checkDataKeys), which depends on the type.
			if err := w.dec.Decode(new(json.RawMessage)); err != nil {
				return err
			}
			continue
		}
		if err := w.value(here, fields.types[key], depth, false); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // '}'
	return err
}

func (w keyWalk) array(at *path, schema reflect.Type, depth int) error {
	for i := 0; w.dec.More(); i++ {
		if err := w.value(&path{parent: at, index: i}, schema, depth, false); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // ']'
	return err
}

// checkName refuses an envelope key that is not an attribute name, and a
// data key that matches a field of the schema only when case is ignored.
func (w keyWalk) checkName(at *path, key, folded string, fields schemaFields, envelope bool) {
	known := fields.folded[folded]
	if known == key {
		known = ""
	}
	switch {
	case envelope && !attributeName.MatchString(key) && known != "":
		w.p.add(at.String(), "attribute names are lowercase letters and digits (CloudEvents 1.0): did you mean %q?", known)
	case envelope && !attributeName.MatchString(key):
		w.p.add(at.String(), "attribute names are lowercase letters and digits (CloudEvents 1.0)")
	case known != "":
		w.p.add(at.String(), "is not a field: did you mean %q? (field names are case-sensitive)", known)
	}
}

// schemaFields are a struct's JSON field names: their types, and each name
// by its case-folded form.
type schemaFields struct {
	types  map[string]reflect.Type
	folded map[string]string
}

var schemas sync.Map // reflect.Type → schemaFields

// fieldsOf returns the fields of a struct type (or a pointer to one); none
// for anything else. Computed once per type.
func fieldsOf(t reflect.Type) schemaFields {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return schemaFields{}
	}
	if f, ok := schemas.Load(t); ok {
		return f.(schemaFields)
	}
	f := schemaFields{types: map[string]reflect.Type{}, folded: map[string]string{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "-" {
			continue
		}
		name = cmp.Or(name, sf.Name)
		f.types[name], f.folded[fold(name)] = sf.Type, name
	}
	schemas.Store(t, f)
	return f
}

// elem is the element type of a slice or array schema, else nil.
func elem(t reflect.Type) reflect.Type {
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		return t.Elem()
	}
	return nil
}

// fold is encoding/json's case folding (bytes.EqualFold): besides ASCII
// case it equates the Kelvin sign with k and the long s with s, so
// "ſource" would reach the field "source".
func fold(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Map(func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }, s)
		}
	}
	return strings.ToUpper(s)
}

// join names a key under path, quoting keys that are not plain names.
func join(path, key string) string {
	name := key
	if !plainKey.MatchString(key) {
		name = quote(key)
	}
	if path == "" {
		return name
	}
	return path + "." + name
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

func orTop(path string) string { return cmp.Or(path, "(top level)") }

// checkUTF8 refuses bytes that are not UTF-8: decoding would turn each
// into U+FFFD, merging ids that differ.
func checkUTF8(payload []byte) error {
	if utf8.Valid(payload) {
		return nil
	}
	at := 0
	for at < len(payload) {
		r, n := utf8.DecodeRune(payload[at:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		at += n
	}
	return fmt.Errorf("%w: not valid UTF-8 at byte %d", ErrMalformed, at)
}
