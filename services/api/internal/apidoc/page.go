package apidoc

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// File is the page written, from the module's root.
const File = "docs/api-reference.md"

// RegenerateCommand writes docs/api-reference.md again.
const RegenerateCommand = "go generate ./services/api/internal/apidoc/"

// methods are the HTTP methods a path's operations are listed in.
var methods = []string{"get", "post", "put", "patch", "delete"}

// route is one operation and where it is served.
type route struct {
	method, path string
	op           *operation
}

// Page renders the OpenAPI document raw as the reference page.
func Page(raw []byte) ([]byte, error) {
	doc, err := parse(raw)
	if err != nil {
		return nil, err
	}
	byTag := routesByTag(doc)
	tags := slices.Sorted(maps.Keys(byTag))
	var b bytes.Buffer
	writeIntro(&b, doc)
	writeErrors(&b, doc)
	writeIndex(&b, tags, byTag)
	for _, tag := range tags {
		fmt.Fprintf(&b, "\n## %s\n", tag)
		for _, r := range byTag[tag] {
			writeOperation(&b, doc, r)
		}
	}
	writeSchemas(&b, doc)
	return b.Bytes(), nil
}

// WritePage writes the reference of the API this module builds into its
// docs, dir being any directory of the module.
func WritePage(dir string) error {
	root, err := moduleRoot(dir)
	if err != nil {
		return err
	}
	raw, err := Document()
	if err != nil {
		return err
	}
	page, err := Page(raw)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(File)), page, 0o644); err != nil {
		return fmt.Errorf("writing the API reference: %w", err)
	}
	return nil
}

// moduleRoot is the directory of the go.mod dir is under.
func moduleRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("finding the module of %s: %w", dir, err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", abs)
		}
	}
}

// routesByTag groups the operations by their first tag, each group by
// path, then method.
func routesByTag(doc *document) map[string][]route {
	byTag := map[string][]route{}
	for _, path := range slices.Sorted(maps.Keys(doc.Paths)) {
		for _, m := range methods {
			op := doc.Paths[path][m]
			if op == nil {
				continue
			}
			tag := "Untagged"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			byTag[tag] = append(byTag[tag], route{method: strings.ToUpper(m), path: path, op: op})
		}
	}
	return byTag
}

func writeIntro(b *bytes.Buffer, doc *document) {
	fmt.Fprintf(b, "# HTTP API reference\n\n"+
		"<!-- Generated from the API's OpenAPI document by `%s`; do not edit. -->\n\n"+
		"%s\n\n"+
		"This is %s's OpenAPI document, version %s, as Herald serves it at `/v1/openapi.json`: every route, "+
		"what it takes and what it answers. [api.md](api.md) shows how to use them, with examples that run. "+
		"A test fails when this page differs from what `%s` writes.\n\n",
		RegenerateCommand, text(doc.Info.Description), doc.Info.Title, doc.Info.Version, RegenerateCommand)
	for _, name := range slices.Sorted(maps.Keys(doc.Components.SecuritySchemes)) {
		fmt.Fprintf(b, "Authentication (`%s`): %s\n", name, text(doc.Components.SecuritySchemes[name].Description))
	}
	b.WriteString("Each route names the scope its key needs, or the token it takes.\n")
}

// writeIndex lists every route with its summary and scope.
func writeIndex(b *bytes.Buffer, tags []string, byTag map[string][]route) {
	b.WriteString("\n## Routes\n\n| Group | Route | Summary | Scope |\n| --- | --- | --- | --- |\n")
	for _, tag := range tags {
		for _, r := range byTag[tag] {
			fmt.Fprintf(b, "| [%s](#%s) | [`%s %s`](#%s) | %s | %s |\n", cell(tag), anchor(tag),
				r.method, r.path, anchor(r.method+" "+r.path), cell(r.op.Summary), scopes(r.op))
		}
	}
}

// writeErrors describes the problems routes answer with, once for all.
func writeErrors(b *bytes.Buffer, doc *document) {
	type problem struct {
		meaning string
		headers map[string]*header
		body    []string
	}
	problems := map[string]*problem{}
	for _, path := range doc.Paths {
		for _, op := range path {
			for status, resp := range op.Responses {
				if !isError(status) {
					continue
				}
				p := problems[status]
				if p == nil {
					p = &problem{meaning: resp.Description, headers: map[string]*header{}}
					problems[status] = p
				}
				for name, h := range resp.Headers {
					p.headers[name] = h
				}
				for ct, c := range resp.Content {
					p.body = appendNew(p.body, "`"+ct+"` "+typeOf(c.Schema))
				}
			}
		}
	}
	b.WriteString("\n## Errors\n\nA route answers an error with a problem document; each route lists the statuses it may answer.\n\n" +
		"| Status | Meaning | Headers | Body |\n| --- | --- | --- | --- |\n")
	for _, status := range slices.Sorted(maps.Keys(problems)) {
		p := problems[status]
		slices.Sort(p.body)
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", status, cell(p.meaning), headers(p.headers), strings.Join(p.body, ", "))
	}
}

// writeOperation writes one route: what it does, who may call it, what it
// takes and what it answers.
func writeOperation(b *bytes.Buffer, doc *document, r route) {
	op := r.op
	fmt.Fprintf(b, "\n### %s %s\n\n**%s** · %s\n", r.method, r.path, text(op.Summary), scopeLine(op))
	if op.Description != "" {
		fmt.Fprintf(b, "\n%s\n", text(op.Description))
	}
	writeParameters(b, op.Parameters)
	writeRequestBody(b, doc, op)
	writeResponses(b, op)
}

func writeParameters(b *bytes.Buffer, params []parameter) {
	if len(params) == 0 {
		return
	}
	b.WriteString("\n| Parameter | In | Type | Required | Description |\n| --- | --- | --- | --- | --- |\n")
	for _, p := range params {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", p.Name, p.In, typeOf(p.Schema), yesNo(p.Required),
			cell(describe(cmp.Or(p.Description, descriptionOf(p.Schema)), p.Schema)))
	}
}

// writeRequestBody names the body's schema per content type, then lists
// the fields of each object schema it names, one level deep.
func writeRequestBody(b *bytes.Buffer, doc *document, op *operation) {
	body := op.RequestBody
	if body == nil {
		return
	}
	var kinds, named []string
	for _, ct := range slices.Sorted(maps.Keys(body.Content)) {
		s := body.Content[ct].Schema
		kinds = append(kinds, fmt.Sprintf("`%s`: %s", ct, typeOf(s)))
		for _, alt := range alternatives(s) {
			if alt.Ref != "" {
				named = appendNew(named, refName(alt.Ref))
			}
		}
	}
	required := "optional"
	if body.Required {
		required = "required"
	}
	fmt.Fprintf(b, "\nRequest body (%s): %s.\n", required, strings.Join(kinds, "; "))
	for _, alt := range unnamedAlternatives(body.Content) {
		if alt.Description != "" {
			fmt.Fprintf(b, "\nThe %s: %s\n", typeOf(alt), text(alt.Description))
		}
	}
	for _, name := range named {
		s := doc.Components.Schemas[name]
		if s == nil || len(s.Properties) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n%s fields:\n", link(name))
		writeFields(b, s)
	}
}

// unnamedAlternatives are the body schemas no component names, which the
// page can only describe where they appear.
func unnamedAlternatives(content map[string]*content) []*schema {
	var out []*schema
	for _, ct := range slices.Sorted(maps.Keys(content)) {
		for _, alt := range alternatives(content[ct].Schema) {
			if alt.Ref == "" {
				out = append(out, alt)
			}
		}
	}
	return out
}

// writeResponses lists the answers that are not errors in a table, and the
// errors' statuses after it.
func writeResponses(b *bytes.Buffer, op *operation) {
	var errs []string
	b.WriteString("\n| Answer | Meaning | Headers | Body |\n| --- | --- | --- | --- |\n")
	for _, status := range slices.Sorted(maps.Keys(op.Responses)) {
		resp := op.Responses[status]
		if isError(status) {
			errs = append(errs, "`"+status+"`")
			continue
		}
		var bodies []string
		for _, ct := range slices.Sorted(maps.Keys(resp.Content)) {
			bodies = append(bodies, typeOf(resp.Content[ct].Schema))
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", status, cell(resp.Description), headers(resp.Headers),
			cmp.Or(strings.Join(bodies, ", "), "none"))
	}
	if len(errs) > 0 {
		fmt.Fprintf(b, "\n[Errors](#errors): %s.\n", strings.Join(errs, ", "))
	}
}

// writeSchemas writes every schema the routes name, each with its fields.
func writeSchemas(b *bytes.Buffer, doc *document) {
	b.WriteString("\n## Schemas\n")
	for _, name := range slices.Sorted(maps.Keys(doc.Components.Schemas)) {
		s := doc.Components.Schemas[name]
		fmt.Fprintf(b, "\n### %s\n", schemaHeading(name))
		if s.Description != "" {
			fmt.Fprintf(b, "\n%s\n", text(s.Description))
		}
		if len(s.Properties) == 0 {
			fmt.Fprintf(b, "\nA value of type %s.\n", typeOf(&schema{Type: s.Type, Items: s.Items, AdditionalProperties: s.AdditionalProperties}))
			continue
		}
		writeFields(b, s)
	}
}

// writeFields is the table of an object schema's fields.
func writeFields(b *bytes.Buffer, s *schema) {
	b.WriteString("\n| Field | Type | Required | Description |\n| --- | --- | --- | --- |\n")
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		f := s.Properties[name]
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", name, typeOf(f), yesNo(slices.Contains(s.Required, name)),
			cell(describe(f.Description, f)))
	}
}

// schemaHeading is a schema's heading: its name, marked so that its anchor
// is not a tag's (the tag Tenants and the schema Tenants).
func schemaHeading(name string) string { return name + " schema" }

// link is a link to a schema's section.
func link(name string) string { return fmt.Sprintf("[%s](#%s)", name, anchor(schemaHeading(name))) }

// anchor is the id GitHub gives a heading: lower case, spaces as hyphens,
// other punctuation dropped.
func anchor(heading string) string {
	var id strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			id.WriteRune(r)
		case r == ' ':
			id.WriteRune('-')
		}
	}
	return id.String()
}

// scopes is what the route's security asks for, for the index.
func scopes(op *operation) string {
	var out []string
	for _, req := range op.Security {
		for _, name := range slices.Sorted(maps.Keys(req)) {
			for _, scope := range req[name] {
				out = append(out, "`"+scope+"`")
			}
			if len(req[name]) == 0 {
				// A scheme without scopes is a token, not a key.
				out = append(out, "`"+name+"` token")
			}
		}
	}
	return cmp.Or(strings.Join(out, ", "), "none")
}

// scopeLine says who may call the route.
func scopeLine(op *operation) string {
	if len(op.Security) == 0 {
		return "no key"
	}
	for _, req := range op.Security {
		for _, scopes := range req {
			if len(scopes) == 0 {
				return "no key: a " + strings.Join(slices.Sorted(maps.Keys(req)), ", ") + " token"
			}
		}
	}
	return "key with scope " + scopes(op)
}

// headers lists response headers with what each says.
func headers(hs map[string]*header) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(hs)) {
		h := hs[name]
		out = append(out, fmt.Sprintf("`%s`: %s", name, cell(cmp.Or(h.Description, descriptionOf(h.Schema)))))
	}
	return cmp.Or(strings.Join(out, "<br>"), "—")
}

func isError(status string) bool { return status >= "400" }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// appendNew appends s unless list holds it already.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
