package event

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf16"
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

// keyScan checks the keys of one JSON value, recording findings in p. It
// reads the raw bytes of a value its caller has already parsed, so it
// knows them to be valid JSON (Decode decodes the event first, decodeData
// the data) and only has to find where each token starts and ends:
// json.Decoder.Token, which the walk used to read, allocated for every
// token and cost more than decoding the event itself.
type keyScan struct {
	b    []byte
	at   int // the offset of the next byte to read
	p    *problems
	root string   // the top level's name ("" for an event, "data" for its data)
	path []step   // where the value being read sits, built into a field name only when a problem is reported there
	keys [][]byte // the keys read so far in each object being read, outermost first
	// typed makes the walk also find each value encoding/json cannot
	// decode into its field (a number for a decimal string), recording
	// where it is in mistyped.
	typed    bool
	mistyped []span
}

// span is where a value lies in the walked bytes.
type span struct{ start, end int }

func newKeyScan(b []byte, p *problems, root string) keyScan {
	return keyScan{b: b, p: p, root: root, path: make([]step, 0, 8), keys: make([][]byte, 0, 16)}
}

// step is one step of a path: an object's key, or an array's index.
type step struct {
	key   []byte // the key as decoded
	index int    // the index in an array; -1 for a key
}

// checkEnvelopeKeys walks a whole event: envelope keys must be CloudEvents
// attribute names, and no object anywhere may repeat a key, exactly or
// differing only in case.
func checkEnvelopeKeys(p *problems, payload []byte) error {
	s := newKeyScan(payload, p, "")
	return s.value(envelopeSchema, 0, true)
}

var envelopeSchema = reflect.TypeFor[Event]()

// checkDataKeys walks an event's data against the shape it decodes into:
// besides repeated keys, a key that names one of its fields only when case
// is ignored is refused, because encoding/json would accept it silently.
func checkDataKeys(p *problems, data []byte, into any) error {
	s := newKeyScan(data, p, "data")
	return s.value(reflect.TypeOf(into), 0, false)
}

// value reads one value; schema is the Go type it decodes into (nil when
// unknown), envelope marks the top level of an event.
func (s *keyScan) value(schema reflect.Type, depth int, envelope bool) error {
	s.space()
	if s.at == len(s.b) {
		return s.broken()
	}
	if s.typed && schema != nil {
		if mistyped, err := s.checkType(schema); mistyped || err != nil {
			return err
		}
	}
	switch s.b[s.at] {
	case '{', '[':
		if depth >= maxDepth {
			return fmt.Errorf("%s: nested deeper than %d levels", orTop(s.where()), maxDepth)
		}
		if s.b[s.at] == '{' {
			return s.object(schema, depth+1, envelope)
		}
		return s.array(elem(schema), depth+1)
	case '"':
		text, err := s.text()
		if err != nil {
			return err
		}
		if decodesToReplacement(text) {
			s.p.add(orTop(s.where()), "contains U+FFFD or an unpaired \\u surrogate escape: text must be valid Unicode")
		}
		return nil
	}
	return s.literal()
}

func (s *keyScan) object(schema reflect.Type, depth int, envelope bool) error {
	fields := fieldsOf(schema)
	seen := objectKeys{start: len(s.keys)}
	s.at++ // '{'
	for {
		if s.next('}') {
			s.keys = s.keys[:seen.start]
			return nil
		}
		key, err := s.key()
		if err != nil {
			return err
		}
		s.path = append(s.path, step{key: key, index: -1})
		switch first, ok := s.previous(&seen, key); {
		case ok && bytes.Equal(first, key):
			s.p.add(s.where(), "appears twice in one object (keys must be unique)")
		case ok:
			s.p.add(s.where(), "differs only in case from %s in the same object (keys are case-sensitive and must be unique)", quote(string(first)))
		}
		s.remember(&seen, key)
		s.checkName(key, fields, envelope)
		if envelope && string(key) == "data" {
			// The data is walked against its own shape when it is
			// decoded (checkDataKeys), which depends on the type.
			err = s.skip()
		} else {
			err = s.value(fields.types[string(key)], depth, false)
		}
		if err != nil {
			return err
		}
		s.path = s.path[:len(s.path)-1]
	}
}

func (s *keyScan) array(schema reflect.Type, depth int) error {
	s.at++ // '['
	s.path = append(s.path, step{})
	for i := 0; !s.next(']'); i++ {
		s.path[len(s.path)-1].index = i
		if err := s.value(schema, depth, false); err != nil {
			return err
		}
	}
	s.path = s.path[:len(s.path)-1]
	return nil
}

// next passes the comma before a member or element, if any, and reports
// whether end, which closes the object or array, comes next (and passes it).
func (s *keyScan) next(end byte) bool {
	s.space()
	if s.at < len(s.b) && s.b[s.at] == ',' {
		s.at++
		s.space()
	}
	if s.at < len(s.b) && s.b[s.at] == end {
		s.at++
		return true
	}
	return false
}

// key reads an object's key and the colon after it, returning the key as
// encoding/json decodes it: the bytes themselves unless escaped or not
// UTF-8 (which decodes to U+FFFD, so "a\xff" and "a\xfe" are one key).
func (s *keyScan) key() ([]byte, error) {
	s.space()
	start := s.at
	text, err := s.text()
	if err != nil {
		return nil, err
	}
	quoted := s.b[start:s.at]
	s.space()
	if s.at == len(s.b) || s.b[s.at] != ':' {
		return nil, s.broken()
	}
	s.at++
	if bytes.IndexByte(text, '\\') < 0 && utf8.Valid(text) {
		return text, nil
	}
	var key string
	if err := json.Unmarshal(quoted, &key); err != nil {
		return nil, err
	}
	return []byte(key), nil
}

// text reads a string, returning what is between its quotes, undecoded.
func (s *keyScan) text() ([]byte, error) {
	if s.at == len(s.b) || s.b[s.at] != '"' {
		return nil, s.broken()
	}
	start := s.at + 1
	for from := start; ; {
		i := bytes.IndexByte(s.b[from:], '"')
		if i < 0 {
			return nil, s.broken()
		}
		end := from + i
		escapes := 0
		for j := end - 1; j >= start && s.b[j] == '\\'; j-- {
			escapes++
		}
		if escapes%2 == 0 {
			s.at = end + 1
			return s.b[start:end], nil
		}
		from = end + 1
	}
}

// literal passes a number, true, false or null.
func (s *keyScan) literal() error {
	start := s.at
	for s.at < len(s.b) && !isSpace(s.b[s.at]) && s.b[s.at] != ',' && s.b[s.at] != ']' && s.b[s.at] != '}' {
		s.at++
	}
	if s.at == start {
		return s.broken()
	}
	return nil
}

// skip passes a value, unchecked.
func (s *keyScan) skip() error {
	depth := 0
	for {
		s.space()
		if s.at == len(s.b) {
			return s.broken()
		}
		switch s.b[s.at] {
		case '{', '[':
			depth++
			s.at++
		case '}', ']':
			depth--
			s.at++
		case ',', ':':
			s.at++
			continue
		case '"':
			if _, err := s.text(); err != nil {
				return err
			}
		default:
			if err := s.literal(); err != nil {
				return err
			}
		}
		if depth <= 0 {
			return nil
		}
	}
}

func (s *keyScan) space() {
	for s.at < len(s.b) && isSpace(s.b[s.at]) {
		s.at++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// broken is what the scan returns should its caller break the promise that
// the bytes are valid JSON.
func (s *keyScan) broken() error { return fmt.Errorf("not valid JSON at byte %d", s.at) }

// where names the value being read, as a field path.
func (s *keyScan) where() string {
	path := s.root
	for _, st := range s.path {
		if st.index >= 0 {
			path += "[" + strconv.Itoa(st.index) + "]"
		} else {
			path = join(path, string(st.key))
		}
	}
	return path
}

// objectKeys is what an object remembers of its keys to find one repeated:
// they are s.keys[start:], searched from the last, until there are so many
// that a map by folded key is cheaper.
type objectKeys struct {
	start  int
	folded map[string][]byte // folded key → the key as last seen
}

// manyKeys is where an object's keys go into a map: few objects have more,
// and comparing each key with every other would let one object of a
// hundred thousand keys take seconds.
const manyKeys = 32

// previous returns the last key of the object so far that folds like key.
func (s *keyScan) previous(o *objectKeys, key []byte) ([]byte, bool) {
	if o.folded != nil {
		first, ok := o.folded[fold(string(key))]
		return first, ok
	}
	for i := len(s.keys) - 1; i >= o.start; i-- {
		if foldEqual(s.keys[i], key) {
			return s.keys[i], true
		}
	}
	return nil, false
}

func (s *keyScan) remember(o *objectKeys, key []byte) {
	s.keys = append(s.keys, key)
	switch {
	case o.folded != nil:
		o.folded[fold(string(key))] = key
	case len(s.keys)-o.start > manyKeys:
		o.folded = make(map[string][]byte, 2*manyKeys)
		for _, k := range s.keys[o.start:] {
			o.folded[fold(string(k))] = k
		}
	}
}

// checkName refuses an envelope key that is not an attribute name, and a
// data key that matches a field of the schema only when case is ignored.
func (s *keyScan) checkName(key []byte, fields schemaFields, envelope bool) {
	known := s.field(key, fields)
	switch {
	case envelope && !isAttributeName(key) && known != "":
		s.p.add(s.where(), "attribute names are lowercase letters and digits (CloudEvents 1.0): did you mean %q?", known)
	case envelope && !isAttributeName(key):
		s.p.add(s.where(), "attribute names are lowercase letters and digits (CloudEvents 1.0)")
	case known != "":
		s.p.add(s.where(), "is not a field: did you mean %q? (field names are case-sensitive)", known)
	}
}

// field is the field of the schema that key names only when case is
// ignored; "" when it names one exactly, or none.
func (s *keyScan) field(key []byte, fields schemaFields) string {
	if len(fields.folded) == 0 {
		return ""
	}
	var known string
	if isASCII(key) {
		var buf [64]byte
		known = fields.folded[string(appendUpper(buf[:0], key))]
	} else {
		known = fields.folded[fold(string(key))]
	}
	if known == string(key) {
		return ""
	}
	return known
}

// isAttributeName reports what CloudEvents 1.0 allows as an attribute
// name: lowercase letters and digits, at least one.
func isAttributeName(key []byte) bool {
	for _, c := range key {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return len(key) > 0
}

// foldEqual reports fold(a) == fold(b), folding only keys that are not
// ASCII: those are rare, and one may fold to an ASCII key ("ſource").
func foldEqual(a, b []byte) bool {
	if isASCII(a) && isASCII(b) {
		return bytes.EqualFold(a, b)
	}
	return fold(string(a)) == fold(string(b))
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendUpper is fold for an ASCII key, without a new string.
func appendUpper(dst, key []byte) []byte {
	for _, c := range key {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// decodesToReplacement reports whether the text of a JSON string, between
// its quotes, decodes to text holding U+FFFD, as encoding/json decodes it:
// the character itself, escaped or not, a byte that is not UTF-8, or a \u
// escape of a surrogate that is not the first of a pair.
func decodesToReplacement(text []byte) bool {
	for i := 0; i < len(text); {
		switch c := text[i]; {
		case c == '\\' && i+1 < len(text) && text[i+1] == 'u':
			r := escapedRune(text[i:])
			i += 6
			if utf16.IsSurrogate(r) {
				if utf16.DecodeRune(r, escapedRune(text[i:])) == unicode.ReplacementChar {
					return true
				}
				i += 6
			} else if r == unicode.ReplacementChar {
				return true
			}
		case c == '\\':
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(text[i:])
			if r == utf8.RuneError {
				return true
			}
			i += n
		}
	}
	return false
}

// escapedRune is the rune of a \uXXXX escape at the start of b, or -1.
func escapedRune(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
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

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// checkType reports, and passes, a value encoding/json cannot decode into
// schema, as a problem named by the value's path: the wrong JSON kind, an
// integer that is not one, or what a type's own UnmarshalJSON refuses (a
// decimal that is not a string, a time that is not RFC 3339). null, which
// encoding/json decodes into anything as nothing, passes.
func (s *keyScan) checkType(schema reflect.Type) (bool, error) {
	for schema.Kind() == reflect.Pointer {
		schema = schema.Elem()
	}
	start := s.at
	end, err := s.end()
	if err != nil {
		return false, err
	}
	raw := s.b[start:end]
	why := typeFault(schema, raw)
	if why == "" {
		return false, nil
	}
	field := orTop(s.where())
	s.p.add(field, "%s", why)
	s.p.mistyped = append(s.p.mistyped, field)
	s.mistyped = append(s.mistyped, span{start, end})
	s.at = end
	return true, nil
}

// end is where the value at s.at ends.
func (s *keyScan) end() (int, error) {
	probe := *s
	if err := probe.skip(); err != nil {
		return 0, err
	}
	return probe.at, nil
}

// typeFault says why raw, one JSON value, does not decode into t; "" when
// it does.
func typeFault(t reflect.Type, raw []byte) string {
	kind := jsonKind(raw[0])
	switch {
	case string(raw) == "null":
		return ""
	case raw[0] == '"':
		kind = "string"
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw)
		var typ *json.UnmarshalTypeError
		switch {
		case err == nil:
			return ""
		case t == reflect.TypeFor[Decimal]():
			return fmt.Sprintf("must be a JSON string such as \"183.48\", not a %s", kind)
		case errors.As(err, &typ), kind != "string":
			return fmt.Sprintf("JSON %s where %s was expected", kind, t)
		}
		return describeJSONError(&time.ParseError{Value: string(raw)})
	}
	want := map[reflect.Kind]string{reflect.String: "string", reflect.Bool: "boolean", reflect.Struct: "object",
		reflect.Map: "object", reflect.Slice: "array", reflect.Array: "array"}[t.Kind()]
	switch {
	case t.Kind() == reflect.Interface:
		return ""
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		if kind == "number" && json.Unmarshal(raw, reflect.New(t).Interface()) == nil {
			return ""
		}
	case want == kind:
		return ""
	}
	return fmt.Sprintf("JSON %s where %s was expected", kind, t)
}

// withoutMistyped is the walked bytes with each mistyped value replaced by
// null, which decodes as the field's absence.
func (s *keyScan) withoutMistyped() []byte {
	out := make([]byte, 0, len(s.b))
	at := 0
	for _, m := range s.mistyped {
		out = append(append(out, s.b[at:m.start]...), "null"...)
		at = m.end
	}
	return append(out, s.b[at:]...)
}
