package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The strict walk as it was written first, over json.Decoder.Token: kept
// here only as the reference the scanner in strict.go must agree with
// (TestScanAgreesWithTokenWalk, FuzzScanAgreesWithTokenWalk).

var tokenAttributeName = regexp.MustCompile(`^[a-z0-9]+$`)

// tokenWalk checks the keys of one JSON value, recording findings in p.
type tokenWalk struct {
	dec *json.Decoder
	p   *problems
}

// tokenPath is where a value sits, built into a field name only when a problem
// is reported there: most payloads have none, and naming every key on the
// way cost more than the walk itself.
type tokenPath struct {
	parent *tokenPath
	key    string // an object's key; else an array index
	index  int
	root   string // the top level's name ("" for an event, "data" for its data)
}

func (p *tokenPath) String() string {
	switch {
	case p.parent == nil:
		return p.root
	case p.key == "" && p.index >= 0:
		return p.parent.String() + "[" + strconv.Itoa(p.index) + "]"
	}
	return join(p.parent.String(), p.key)
}

// tokenEnvelopeKeys walks a whole event: envelope keys must be CloudEvents
// attribute names, and no object anywhere may repeat a key, exactly or
// differing only in case.
func tokenEnvelopeKeys(p *problems, payload []byte) error {
	w := tokenWalk{dec: json.NewDecoder(bytes.NewReader(payload)), p: p}
	w.dec.UseNumber()
	return w.value(&tokenPath{}, envelopeSchema, 0, true)
}

// tokenDataKeys walks an event's data against the shape it decodes into:
// besides repeated keys, a key that names one of its fields only when case
// is ignored is refused, because encoding/json would accept it silently.
func tokenDataKeys(p *problems, data []byte, into any) error {
	w := tokenWalk{dec: json.NewDecoder(bytes.NewReader(data)), p: p}
	w.dec.UseNumber()
	return w.value(&tokenPath{root: "data"}, reflect.TypeOf(into), 0, false)
}

// value walks one value found at path; schema is the Go type it decodes
// into (nil when unknown), envelope marks the top level of an event.
func (w tokenWalk) value(at *tokenPath, schema reflect.Type, depth int, envelope bool) error {
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

func (w tokenWalk) object(at *tokenPath, schema reflect.Type, depth int, envelope bool) error {
	fields := fieldsOf(schema)
	seen := map[string]string{} // folded key → the key as first seen
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		here := &tokenPath{parent: at, key: key, index: -1}
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

func (w tokenWalk) array(at *tokenPath, schema reflect.Type, depth int) error {
	for i := 0; w.dec.More(); i++ {
		if err := w.value(&tokenPath{parent: at, index: i}, schema, depth, false); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // ']'
	return err
}

// checkName refuses an envelope key that is not an attribute name, and a
// data key that matches a field of the schema only when case is ignored.
func (w tokenWalk) checkName(at *tokenPath, key, folded string, fields schemaFields, envelope bool) {
	known := fields.folded[folded]
	if known == key {
		known = ""
	}
	switch {
	case envelope && !tokenAttributeName.MatchString(key) && known != "":
		w.p.add(at.String(), "attribute names are lowercase letters and digits (CloudEvents 1.0): did you mean %q?", known)
	case envelope && !tokenAttributeName.MatchString(key):
		w.p.add(at.String(), "attribute names are lowercase letters and digits (CloudEvents 1.0)")
	case known != "":
		w.p.add(at.String(), "is not a field: did you mean %q? (field names are case-sensitive)", known)
	}
}
