package event

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Binary content mode, as the CloudEvents NATS and HTTP protocol bindings
// define it: each attribute travels in a header named ce-<attribute>, the
// data's media type in content-type, and the message body is the data.
//
// Header names are matched ignoring case, in NATS as in HTTP: NATS headers
// are case-sensitive, but a publisher that writes Ce-Id (as Go's
// http.Header and many HTTP-minded clients do) means the id, and refusing
// it would only turn a working event into a dead letter. What case would
// make ambiguous is refused instead: an attribute in two headers that
// differ only in case (ce-tenant and Ce-Tenant), or with two values.

const (
	headerPrefix      = "ce-"
	specVersionHeader = "ce-specversion"
	contentTypeHeader = "content-type"
)

// IsBinary reports whether a message with this header is an event in binary
// content mode: it has a ce-specversion header, in any case. A message
// without one is in structured mode, its body the whole event.
func IsBinary(header map[string][]string) bool {
	for k := range header {
		if len(k) == len(specVersionHeader) && strings.EqualFold(k, specVersionHeader) {
			return true
		}
	}
	return false
}

// DecodeMsg decodes an event from a message in either content mode: binary
// when its header has ce-specversion (DecodeBinary), else structured
// (Decode of its body). It takes a nats.Header or an http.Header as it is.
func DecodeMsg(header map[string][]string, body []byte) (Event, error) {
	var p problems
	ev, err := decodeMsg(&p, header, body)
	if err != nil {
		return Event{}, err
	}
	return ev, p.err()
}

// decodeMsg is DecodeMsg with the envelope's problems left in p.
func decodeMsg(p *problems, header map[string][]string, body []byte) (Event, error) {
	if IsBinary(header) {
		return decodeBinary(p, header, body), nil
	}
	return decode(p, body)
}

// DecodeBinary decodes and validates an event in binary content mode: the
// attributes from the ce- headers, the data from the body. It makes the
// Event that Decode makes of the same event in structured mode, validated
// by the same rules, and a *ValidationError names each header at fault
// (ce-tenant: is required). Headers without the ce- prefix, but for
// content-type, are not the event's and are ignored; ce- headers naming an
// attribute Herald does not read are ignored, as unknown members are in
// structured mode, and so are subject and dataschema, which Herald does not
// read in either mode.
func DecodeBinary(header map[string][]string, body []byte) (Event, error) {
	var p problems
	ev := decodeBinary(&p, header, body)
	return ev, p.err()
}

func decodeBinary(p *problems, header map[string][]string, body []byte) Event {
	attrs := readAttributes(p, header)
	ev := Event{
		SpecVersion: attrs[specVersionHeader].value, ID: attrs["ce-id"].value, Source: attrs["ce-source"].value,
		Type: attrs["ce-type"].value, Tenant: attrs["ce-tenant"].value,
	}
	if t, ok := attrs["ce-time"]; ok {
		if err := ev.Time.UnmarshalText([]byte(t.value)); err != nil {
			p.add("ce-time", "%s is not an RFC 3339 time such as \"2026-11-30T09:00:00Z\"", quote(t.value))
		}
	}
	ev.validate(p, naming{prefix: headerPrefix})
	ctField := ev.contentType(p, attrs)
	if dataIsJSON(ev.DataContentType) {
		ev.Data = readData(p, body, ctField, ev.DataContentType)
	}
	return ev
}

// attribute is one ce- header as read: its name as the publisher wrote it,
// and its value.
type attribute struct{ header, value string }

// readAttributes returns the ce- headers and content-type by their names in
// lower case, refusing those that are not one attribute with one value.
// Names are read in sorted order, so the same header makes the same reason.
func readAttributes(p *problems, header map[string][]string) map[string]attribute {
	attrs := make(map[string]attribute, len(header))
	for _, k := range slices.Sorted(maps.Keys(header)) {
		name := strings.ToLower(k)
		if name != contentTypeHeader && !strings.HasPrefix(name, headerPrefix) {
			continue
		}
		if !checkAttributeName(p, k, name) {
			continue
		}
		values := header[k]
		if len(values) == 0 {
			continue
		}
		if first, ok := attrs[name]; ok {
			p.add(name, "appears twice, as %s and %s (header names are matched ignoring case; send each attribute once)", quote(first.header), quote(k))
			continue
		}
		if len(values) > 1 {
			p.add(name, "has %d values (send each attribute once)", len(values))
			continue
		}
		if checkHeaderValue(p, name, values[0]) {
			attrs[name] = attribute{header: k, value: values[0]}
		}
	}
	return attrs
}

// checkAttributeName refuses a ce- header that cannot name an attribute:
// CloudEvents names are letters and digits (lowercase, which the header's
// case does not matter to here), and the data is the body, never a header.
func checkAttributeName(p *problems, header, name string) bool {
	if name == contentTypeHeader {
		return true
	}
	attr := strings.TrimPrefix(name, headerPrefix)
	switch {
	case !isAttributeName([]byte(attr)):
		p.add(headerName(header), "attribute names are letters and digits (CloudEvents 1.0)")
		return false
	case attr == "data":
		p.add(name, "is not an attribute: in binary mode the data is the message body")
		return false
	}
	return true
}

// headerName names a header in a problem: as written when it is a plain
// header name, else quoted.
func headerName(h string) string {
	for _, c := range []byte(h) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return quote(h)
		}
	}
	return h
}

// checkHeaderValue holds a header's value to what structured mode holds a
// JSON string to: valid UTF-8, without U+FFFD.
func checkHeaderValue(p *problems, name, value string) bool {
	switch {
	case !utf8.ValidString(value):
		p.add(name, "is not valid UTF-8")
		return false
	case strings.ContainsRune(value, utf8.RuneError):
		p.add(name, "contains U+FFFD: text must be valid Unicode")
		return false
	}
	return true
}

// contentType sets the data's media type from content-type, where the
// bindings put it, or ce-datacontenttype, where the Go SDK's NATS binding
// does; two that disagree are refused. It returns the header's name, for
// problems about the data.
func (ev *Event) contentType(p *problems, attrs map[string]attribute) string {
	ct, hasCT := attrs[contentTypeHeader]
	dct, hasDCT := attrs["ce-datacontenttype"]
	field := contentTypeHeader
	switch {
	case hasCT && hasDCT && ct.value != dct.value:
		p.add("ce-datacontenttype", "%s differs from content-type %s (send one, or the same in both)", quote(dct.value), quote(ct.value))
	case !hasCT && hasDCT:
		field = "ce-datacontenttype"
	}
	ev.DataContentType = cmp.Or(ct.value, dct.value)
	if strings.HasPrefix(strings.ToLower(ev.DataContentType), "application/cloudevents") {
		p.add(field, "%s is a whole event in structured mode, but ce-specversion makes this message binary mode: "+
			"publish the event as the body without ce- headers, or its data as the body with content-type application/json", quote(ev.DataContentType))
		return field
	}
	checkContentType(p, field, ev.DataContentType)
	return field
}

// readData returns the body as an event's data, as Decode would hold it: a
// JSON value, without the space around it. A body that is not JSON is a
// problem, not a malformed event, so the reason lists the headers' faults
// too. An empty body is no data, which OrderData and StockData refuse.
func readData(p *problems, body []byte, ctField, ct string) json.RawMessage {
	if len(bytes.Trim(body, " \t\r\n")) == 0 {
		return nil
	}
	said := "content-type " + cmp.Or(ct, "absent, so JSON")
	if ctField != contentTypeHeader {
		said = ctField + " " + ct
	}
	if err := checkUTF8(body); err != nil {
		p.add("data", "the message body is not JSON (%s): %s", said, strings.TrimPrefix(err.Error(), ErrMalformed.Error()+": "))
		return nil
	}
	var data json.RawMessage
	if err := json.Unmarshal(body, &data); err != nil {
		p.add("data", "the message body is not JSON (%s): %s", said, describeJSONError(err))
		return nil
	}
	return data
}

// Binary converts an event in structured mode to binary content mode: each
// attribute becomes a ce- header (datacontenttype becomes content-type) and
// the data the body. It checks the shape only (a JSON object whose
// attributes are strings, numbers or booleans), not the event: DecodeBinary
// of what it returns reads what Decode of payload reads.
func Binary(payload []byte) (header map[string][]string, body []byte, err error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(payload, &members); err != nil {
		return nil, nil, fmt.Errorf("%w: %s", ErrMalformed, describeJSONError(err))
	}
	header = make(map[string][]string, len(members))
	for _, name := range slices.Sorted(maps.Keys(members)) {
		raw := members[name]
		switch name {
		case "data":
			body = raw
			continue
		case "data_base64":
			return nil, nil, errors.New("data_base64: Herald reads JSON data only")
		}
		value, ok, err := attributeValue(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", quote(name), err)
		}
		if !ok {
			continue
		}
		key := headerPrefix + name
		if name == "datacontenttype" {
			key = contentTypeHeader
		}
		header[key] = []string{value}
	}
	return header, body, nil
}

// attributeValue is an attribute's JSON value as a header's text; ok is
// false for null, which is no attribute.
func attributeValue(raw json.RawMessage) (string, bool, error) {
	switch {
	case string(raw) == "null":
		return "", false, nil
	case raw[0] == '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err == nil, err
	case raw[0] == '{' || raw[0] == '[':
		return "", false, errors.New("an attribute is a string, a number or a boolean, not an object or array")
	case string(raw) == "true" || string(raw) == "false":
		return string(raw), true, nil
	}
	if _, err := strconv.ParseInt(string(raw), 10, 32); err != nil {
		return "", false, errors.New("an attribute number is a CloudEvents integer (32 bits, no fraction)")
	}
	return string(raw), true, nil
}
