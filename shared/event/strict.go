package event

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
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

// checkEnvelopeKeys walks a whole event: envelope keys must be CloudEvents
// attribute names, and no object anywhere may repeat a key, exactly or
// differing only in case.
func checkEnvelopeKeys(p *problems, payload []byte) error {
	w := keyWalk{dec: json.NewDecoder(bytes.NewReader(payload)), p: p}
	w.dec.UseNumber()
	return w.value("", reflect.TypeFor[Event](), 0, true)
}

// checkDataKeys walks an event's data against the shape it decodes into:
// besides repeated keys, a key that names one of its fields only when case
// is ignored is refused, because encoding/json would accept it silently.
func checkDataKeys(p *problems, data []byte, into any) error {
	w := keyWalk{dec: json.NewDecoder(bytes.NewReader(data)), p: p}
	w.dec.UseNumber()
	return w.value("data", reflect.TypeOf(into), 0, false)
}

// value walks one value found at path; schema is the Go type it decodes
// into (nil when unknown), envelope marks the top level of an event.
func (w keyWalk) value(path string, schema reflect.Type, depth int, envelope bool) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch tok := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return fmt.Errorf("%s: nested deeper than %d levels", orTop(path), maxDepth)
		}
		if tok == '{' {
			return w.object(path, schema, depth+1, envelope)
		}
		return w.array(path, elem(schema), depth+1)
	case string:
		if strings.ContainsRune(tok, utf8.RuneError) {
			w.p.add(orTop(path), "contains U+FFFD or an unpaired \\u surrogate escape: text must be valid Unicode")
		}
	}
	return nil
}

func (w keyWalk) object(path string, schema reflect.Type, depth int, envelope bool) error {
	fields := fieldsOf(schema)
	seen := map[string]string{} // folded key → the key as first seen
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		field := join(path, key)
		folded := fold(key)
		switch first, ok := seen[folded]; {
		case ok && first == key:
			w.p.add(field, "appears twice in one object (keys must be unique)")
		case ok:
			w.p.add(field, "differs only in case from %s in the same object (keys are case-sensitive and must be unique)", quote(first))
		}
		seen[folded] = key
		w.checkName(field, key, fields, envelope)
		if err := w.value(field, fields[key], depth, false); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // '}'
	return err
}

func (w keyWalk) array(path string, schema reflect.Type, depth int) error {
	for i := 0; w.dec.More(); i++ {
		if err := w.value(fmt.Sprintf("%s[%d]", path, i), schema, depth, false); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // ']'
	return err
}

// checkName refuses an envelope key that is not an attribute name, and a
// data key that matches a field of the schema only when case is ignored.
func (w keyWalk) checkName(field, key string, fields map[string]reflect.Type, envelope bool) {
	known := ""
	for name := range fields {
		if name != key && fold(name) == fold(key) {
			known = name
		}
	}
	switch {
	case envelope && !attributeName.MatchString(key) && known != "":
		w.p.add(field, "attribute names are lowercase letters and digits (CloudEvents 1.0): did you mean %q?", known)
	case envelope && !attributeName.MatchString(key):
		w.p.add(field, "attribute names are lowercase letters and digits (CloudEvents 1.0)")
	case known != "":
		w.p.add(field, "is not a field: did you mean %q? (field names are case-sensitive)", known)
	}
}

// fieldsOf maps the JSON names of a struct's fields to their types; nil for
// anything but a struct (or a pointer to one).
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		fields[cmp.Or(name, f.Name)] = f.Type
	}
	return fields
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
	return strings.Map(func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }, s)
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
