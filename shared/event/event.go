package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
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

// problems collects validation findings under a field path prefix.
type problems struct {
	list []string
}

func (p *problems) add(field, format string, args ...any) {
	p.list = append(p.list, field+": "+fmt.Sprintf(format, args...))
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &ValidationError{Problems: p.list}
}

var tenantPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidTenant reports whether s can be a tenant: it becomes a NATS subject
// token and part of KV keys, so only letters, digits, '-' and '_' are allowed.
func ValidTenant(s string) bool { return tenantPattern.MatchString(s) }

// Decode parses a structured-mode CloudEvent and validates its envelope:
// specversion, id, source, type and tenant. The data is validated by
// OrderData or StockData, because which shape applies depends on the type.
func Decode(payload []byte) (Event, error) {
	var ev Event
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&ev); err != nil {
		return Event{}, fmt.Errorf("%w: %s", ErrMalformed, describeJSONError(err))
	}
	if dec.More() {
		return Event{}, fmt.Errorf("%w: trailing data after the JSON object", ErrMalformed)
	}
	return ev, ev.validate()
}

func (ev Event) validate() error {
	var p problems
	switch {
	case ev.SpecVersion == "":
		p.add("specversion", "is required (want %q)", SpecVersion)
	case ev.SpecVersion != SpecVersion:
		p.add("specversion", "%q is not supported (want %q)", ev.SpecVersion, SpecVersion)
	}
	requireText(&p, "id", ev.ID, 256)
	requireText(&p, "source", ev.Source, 1024)
	requireText(&p, "type", ev.Type, 256)
	switch {
	case ev.Tenant == "":
		p.add("tenant", "is required")
	case !ValidTenant(ev.Tenant):
		p.add("tenant", "%q must be 1-64 letters, digits, '-' or '_'", ev.Tenant)
	}
	if ct := ev.DataContentType; ct != "" && !strings.HasPrefix(ct, "application/json") {
		p.add("datacontenttype", "%q is not supported (want application/json)", ct)
	}
	return p.err()
}

// requireText checks a required identifier: present, bounded, printable.
func requireText(p *problems, field, value string, maxLen int) {
	switch {
	case strings.TrimSpace(value) == "":
		p.add(field, "is required")
	case len(value) > maxLen:
		p.add(field, "is longer than %d bytes", maxLen)
	case strings.ContainsFunc(value, isControl):
		p.add(field, "contains control characters")
	}
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// describeJSONError turns encoding/json errors into a sentence a publisher
// can act on, keeping the offset where the JSON broke.
func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("not valid JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q: JSON %s where %s was expected", typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "not valid JSON: the payload ends before the JSON is complete"
	case errors.Is(err, io.EOF):
		return "empty payload"
	default:
		return err.Error()
	}
}
