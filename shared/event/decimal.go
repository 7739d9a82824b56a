package event

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// Decimal is an exact decimal number carried as a JSON string ("183.48").
// JSON numbers are refused: a float cannot hold money exactly.
type Decimal string

var decimalPattern = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// UnmarshalJSON accepts only strings, with a message a publisher can act on.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' && string(b) != "null" {
		return fmt.Errorf("decimal %s must be a JSON string such as \"183.48\", not a number", b)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*d = Decimal(s)
	return nil
}

// Valid reports whether d is a plain decimal: optional minus, digits,
// optional fraction. No exponent, no grouping, no currency sign.
func (d Decimal) Valid() bool { return decimalPattern.MatchString(string(d)) }

func (d Decimal) check(p *problems, field string, required bool) {
	switch {
	case d == "" && required:
		p.add(field, "is required")
	case d != "" && !d.Valid():
		p.add(field, "%q is not a decimal such as \"183.48\"", string(d))
	}
}
