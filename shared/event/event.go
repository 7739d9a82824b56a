package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// SpecVersion is the only CloudEvents version Herald accepts.
const SpecVersion = "1.0"

// ErrMalformed marks a payload that is not a JSON CloudEvent at all.
var ErrMalformed = errors.New("malformed event")

// Event is a CloudEvent as Herald receives it. Data stays raw until the
// caller asks for it in the shape its type implies (OrderData, StockData).
type Event struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Time            time.Time       `json:"time,omitzero"`
	DataContentType string          `json:"datacontenttype,omitempty"`
	Tenant          string          `json:"tenant"`
	Data            json.RawMessage `json:"data,omitempty"`
}

// ValidationError lists every problem found in an event, so one dead letter
// tells the publisher all that must change.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	return "invalid event: " + strings.Join(e.Problems, "; ")
}

// maxProblems bounds a ValidationError: an event with a thousand bad
// recipients makes a reason a person can read and a DLQ header can hold.
const maxProblems = 20

// problems collects validation findings under a field path prefix.
type problems struct {
	list []string
	more int
	// mistyped are the fields whose value was of the wrong JSON type
	// (already a problem): decoded as absent, they are not also reported
	// as missing or as holding a bad value.
	mistyped []string
}

func (p *problems) add(field, format string, args ...any) {
	if p.under(field) {
		return
	}
	if len(p.list) == maxProblems {
		p.more++
		return
	}
	p.list = append(p.list, field+": "+fmt.Sprintf(format, args...))
}

// addErr adds a walk's error, which names its field first ("data.x:
// nested deeper than 32 levels").
func (p *problems) addErr(err error) {
	field, msg, _ := strings.Cut(err.Error(), ": ")
	p.add(field, "%s", msg)
}

// under reports whether field is, or lies inside, a mistyped value.
func (p *problems) under(field string) bool {
	for _, m := range p.mistyped {
		if field == m || (strings.HasPrefix(field, m) && (field[len(m)] == '.' || field[len(m)] == '[')) {
			return true
		}
	}
	return false
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	list := p.list
	if p.more > 0 {
		list = append(list, fmt.Sprintf("and %d more problems", p.more))
	}
	return &ValidationError{Problems: list}
}

var tenantPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidTenant reports whether s can be a tenant: it becomes a NATS subject
// token and part of KV keys, so only letters, digits, '-' and '_' are allowed.
func ValidTenant(s string) bool { return tenantPattern.MatchString(s) }

// Decode parses a structured-mode CloudEvent and validates its envelope:
// specversion, id, source, type and tenant. The data is validated by
// OrderData or StockData, because which shape applies depends on the type.
//
// Parsing is strict where encoding/json is lenient: bytes that are not
// UTF-8, a key repeated in one object (exactly or in another case) and an
// envelope key that is not a CloudEvents attribute name are refused, so
// Herald never reads an event differently from a gateway in front of it.
func Decode(payload []byte) (Event, error) { return DecodeMsg(nil, payload) }

// decode is Decode with the envelope's problems left in p; the error is
// for a payload that is no event at all (ErrMalformed).
func decode(p *problems, payload []byte) (Event, error) {
	if err := checkUTF8(payload); err != nil {
		return Event{}, err
	}
	var ev Event
	if err := json.Unmarshal(payload, &ev); err != nil {
		return Event{}, whyMalformed(payload)
	}
	if err := checkEnvelopeKeys(p, payload); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	ev.validate(p, structured)
	checkContentType(p, "datacontenttype", ev.DataContentType)
	return ev, nil
}

// whyMalformed says what is wrong with a payload json.Unmarshal refused:
// a fault in its one JSON value, or data after it. Read as a stream, the
// value's faults are told apart from trailing data (Unmarshal calls both a
// syntax error), at a cost only malformed events pay.
func whyMalformed(payload []byte) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(new(Event)); err != nil {
		return fmt.Errorf("%w: %s", ErrMalformed, describeJSONError(err))
	}
	return fmt.Errorf("%w: trailing data after the JSON object", ErrMalformed)
}

// naming says where an attribute sits in the message, for a problem to
// name it as the publisher wrote it: a JSON member in structured mode
// ("tenant"), a ce- header in binary mode ("ce-tenant").
type naming struct{ prefix string }

var structured = naming{}

func (ev Event) validate(p *problems, n naming) {
	switch {
	case ev.SpecVersion == "":
		p.add(n.prefix+"specversion", "is required (want %q)", SpecVersion)
	case ev.SpecVersion != SpecVersion:
		p.add(n.prefix+"specversion", "%s is not supported (want %q)", quote(ev.SpecVersion), SpecVersion)
	}
	checkID(p, n.prefix+"id", ev.ID, 256)
	requireText(p, n.prefix+"source", ev.Source, 1024)
	requireText(p, n.prefix+"type", ev.Type, 256)
	switch {
	case ev.Tenant == "":
		p.add(n.prefix+"tenant", "is required")
	case !ValidTenant(ev.Tenant):
		p.add(n.prefix+"tenant", "%s must be 1-64 letters, digits, '-' or '_'", quote(ev.Tenant))
	}
}

// checkContentType refuses data Herald cannot read: it reads JSON only.
// No content type means JSON, as it does in the CloudEvents JSON format.
func checkContentType(p *problems, field, ct string) {
	if !dataIsJSON(ct) {
		p.add(field, "%s is not supported (want application/json)", quote(ct))
	}
}

func dataIsJSON(ct string) bool { return ct == "" || strings.HasPrefix(ct, "application/json") }

// requireText checks a required single-line text: present, bounded, free
// of control characters.
func requireText(p *problems, field, value string, maxLen int) {
	switch {
	case strings.TrimSpace(value) == "":
		p.add(field, "is required")
	case len(value) > maxLen:
		p.add(field, "is longer than %d bytes", maxLen)
	default:
		checkText(p, field, value)
	}
}

// checkText refuses control characters in text that may reach an email's
// headers or body: a CR or LF in a name ends a header line or forges a line
// of the body ("Bcc: …"), and no mail client shows the others.
func checkText(p *problems, field, value string) {
	if strings.ContainsFunc(value, isControl) {
		p.add(field, "contains control characters")
	}
}

// checkMultiline is checkText for a postal address, where line breaks are
// the address's own: LF is allowed, CR and every other control is not.
// Addresses are printed in documents only, never in an email.
func checkMultiline(p *problems, field, value string) {
	if strings.ContainsFunc(value, func(r rune) bool { return r != '\n' && isControl(r) }) {
		p.add(field, "contains control characters (only \\n, between lines, is allowed)")
	}
}

// idPattern is what an id that becomes part of a dedupe key, a
// Nats-Msg-Id or an object name may look like: no separators (':' splits
// a dedupe key, '/' an object name), no leading dot ("." and ".."), ASCII
// so that no two spellings of one id exist.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)

// ValidID reports whether s can be an order or event id of at most maxLen
// bytes: letters, digits, '-', '_' and '.', not starting with '.'.
func ValidID(s string, maxLen int) bool { return len(s) <= maxLen && idPattern.MatchString(s) }

func checkID(p *problems, field, value string, maxLen int) {
	switch {
	case strings.TrimSpace(value) == "":
		p.add(field, "is required")
	case len(value) > maxLen:
		p.add(field, "is longer than %d bytes", maxLen)
	case !ValidID(value, maxLen):
		p.add(field, "%s may contain only letters, digits, '-', '_' and '.', and must not start with '.'", quote(value))
	}
}

// maxQuoted bounds how much of a publisher's value an error repeats: enough
// to recognise it, never a megabyte of it in a log line or a DLQ header.
const maxQuoted = 64

// quote repeats a value in an error: Go-quoted (so control characters are
// visible), cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// describeJSONError turns encoding/json errors into a sentence a publisher
// can act on, keeping the offset where the JSON broke. Values are named by
// their kind or quoted short, never repeated raw.
func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tm *time.ParseError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("not valid JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ) && typ.Type == reflect.TypeFor[Decimal]():
		return fmt.Sprintf("field %q must be a JSON string such as \"183.48\", not a %s", typ.Field, typ.Value)
	case errors.As(err, &typ):
		kind, _, _ := strings.Cut(typ.Value, " ") // "number 1e999": the kind, not the value
		return fmt.Sprintf("field %q: JSON %s where %s was expected", typ.Field, kind, typ.Type)
	case errors.As(err, &tm):
		return fmt.Sprintf("%s is not an RFC 3339 time such as \"2026-11-30T09:00:00Z\"", quote(strings.Trim(tm.Value, `"`)))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "not valid JSON: the payload ends before the JSON is complete"
	case errors.Is(err, io.EOF):
		return "empty payload"
	default:
		return err.Error()
	}
}
