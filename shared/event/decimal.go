package event

import (
	"encoding/json"
	"reflect"
	"regexp"
	"unicode/utf8"
)

// Decimal is an exact decimal number carried as a JSON string ("183.48").
// JSON numbers are refused: a float cannot hold money exactly.
type Decimal string

var decimalPattern = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// UnmarshalJSON accepts only strings. Anything else is an
// UnmarshalTypeError naming the JSON kind, not the value: encoding/json adds
// the field's path, and a publisher's bytes never reach the error.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' && string(b) != "null" {
		return &json.UnmarshalTypeError{Value: jsonKind(b[0]), Type: reflect.TypeFor[Decimal]()}
	}
	if text, ok := plainString(b); ok {
		*d = Decimal(text)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*d = Decimal(s)
	return nil
}

// plainString returns the text of a JSON string that decodes to itself:
// printable ASCII, no escapes. Every decimal is one, and taking it as it
// stands spares a json.Unmarshal per amount.
func plainString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	for _, c := range b[1 : len(b)-1] {
		if c < ' ' || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(b[1 : len(b)-1]), true
}

// Valid reports whether d is a plain decimal: optional minus, digits,
// optional fraction. No exponent, no grouping, no currency sign.
func (d Decimal) Valid() bool { return decimalPattern.MatchString(string(d)) }

func (d Decimal) check(p *problems, field string, required bool) {
	switch {
	case d == "" && required:
		p.add(field, "is required")
	case d != "" && !d.Valid():
		p.add(field, "%s is not a decimal such as \"183.48\"", quote(string(d)))
	}
}

// jsonKind names the kind of JSON value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	}
	return "number"
}
