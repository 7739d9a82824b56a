package apidoc

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// typeOf is a schema's type as a reader says it: a named schema links to
// its section, a list says what it holds.
func typeOf(s *schema) string {
	if s == nil {
		return "any"
	}
	if s.Ref != "" {
		return link(refName(s.Ref))
	}
	if alts := cmpOr(s.AnyOf, s.OneOf); len(alts) > 0 {
		var out []string
		for _, alt := range alts {
			out = append(out, typeOf(alt))
		}
		return strings.Join(out, " or ")
	}
	var out []string
	for _, t := range s.Type {
		if t != "null" {
			out = append(out, typeName(t, s))
		}
	}
	if len(out) == 0 {
		out = append(out, "any")
	}
	if slices.Contains(s.Type, "null") {
		out = append(out, "null")
	}
	return strings.Join(out, " or ")
}

// typeName is one JSON type of s.
func typeName(t string, s *schema) string {
	switch {
	case t == "array":
		return "list of " + typeOf(s.Items)
	case t == "object":
		if v := valuesOf(s); v != nil {
			return "map of string to " + typeOf(v)
		}
		return "object"
	case s.ContentEncoding != "":
		return t + " (" + s.ContentEncoding + ")"
	case s.Format != "" && t == "string":
		return t + " (" + s.Format + ")"
	}
	return t
}

// valuesOf is the schema of an object's values, when it says one.
func valuesOf(s *schema) *schema {
	var v schema
	if len(s.AdditionalProperties) == 0 || json.Unmarshal(s.AdditionalProperties, &v) != nil {
		return nil
	}
	if v.Ref == "" && len(v.Type) == 0 && len(v.AnyOf) == 0 && len(v.OneOf) == 0 {
		return nil
	}
	return &v
}

func cmpOr(a, b []*schema) []*schema {
	if len(a) > 0 {
		return a
	}
	return b
}

// alternatives are the schemas a body may be: s, or each of its anyOf.
func alternatives(s *schema) []*schema {
	if s == nil {
		return nil
	}
	if alts := cmpOr(s.AnyOf, s.OneOf); len(alts) > 0 {
		return alts
	}
	return []*schema{s}
}

// refName is the component a $ref names.
func refName(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

func descriptionOf(s *schema) string {
	if s == nil {
		return ""
	}
	return s.Description
}

// describe is a description followed by what the schema allows: its
// values, default and bounds.
func describe(desc string, s *schema) string {
	parts := []string{strings.TrimSpace(desc)}
	if s != nil {
		parts = append(parts, constraints(s)...)
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

func constraints(s *schema) []string {
	var out []string
	if len(s.Enum) > 0 {
		var vals []string
		for _, v := range s.Enum {
			vals = append(vals, "`"+value(v)+"`")
		}
		out = append(out, "One of "+strings.Join(vals, ", ")+".")
	}
	if s.Default != nil {
		out = append(out, "Default `"+value(s.Default)+"`.")
	}
	if s.Minimum != nil {
		out = append(out, "At least "+number(*s.Minimum)+".")
	}
	if s.Maximum != nil {
		out = append(out, "At most "+number(*s.Maximum)+".")
	}
	if s.MinLength != nil && *s.MinLength > 0 {
		out = append(out, fmt.Sprintf("At least %d characters.", *s.MinLength))
	}
	if s.MaxLength != nil {
		out = append(out, fmt.Sprintf("At most %d characters.", *s.MaxLength))
	}
	if s.MaxItems != nil {
		out = append(out, fmt.Sprintf("At most %d items.", *s.MaxItems))
	}
	if s.Pattern != "" {
		out = append(out, "Matches `"+s.Pattern+"`.")
	}
	return out
}

// value is a JSON value as the reader would write it.
func value(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// text is prose from the document as Markdown: what Markdown would take
// for HTML or emphasis outside code spans is escaped (an underscore
// within a word is no emphasis).
func text(s string) string {
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.NewReplacer("<", "&lt;", ">", "&gt;", "*", `\*`).Replace(parts[i])
	}
	return strings.Join(parts, "`")
}

// cell is prose for a table cell: one line, its pipes escaped (in code
// spans too, as GitHub's tables need).
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(text(s)), " "), "|", `\|`)
}
