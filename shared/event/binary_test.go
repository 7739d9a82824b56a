package event_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
)

// binarySample is the sample order in binary mode as the CloudEvents Go
// SDK's NATS binding writes it, written out by hand so the converter
// (event.Binary) is not the only witness of what binary mode looks like.
func binarySample(t *testing.T) (nats.Header, []byte) {
	t.Helper()
	h := nats.Header{}
	h.Set("ce-specversion", "1.0")
	h.Set("ce-id", "evt-2026-11-30-0001")
	h.Set("ce-source", "/erp/purchasing")
	h.Set("ce-type", "order.created")
	h.Set("ce-time", "2026-11-30T09:00:00Z")
	h.Set("ce-datacontenttype", "application/json")
	h.Set("ce-tenant", "acme")
	h.Set("Nats-Msg-Id", "evt-2026-11-30-0001")
	return h, sampleData(t)
}

// sampleData is the sample order's data, as its own JSON document.
func sampleData(t *testing.T) []byte {
	t.Helper()
	return encode(t, sample(t)["data"].(map[string]any))
}

func TestBinaryModeDecodesToTheEventStructuredModeDoes(t *testing.T) {
	t.Parallel()
	for _, file := range event.SampleEvents(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			payload, err := os.ReadFile(file)
			require.NoError(t, err)
			want, err := event.Decode(payload)
			require.NoError(t, err)

			header, body, err := event.Binary(payload)
			require.NoError(t, err)
			require.Equal(t, []string{want.Tenant}, header["ce-tenant"])
			require.Equal(t, []string{"application/json"}, header["content-type"])
			require.True(t, event.IsBinary(header))
			got, err := event.DecodeMsg(nats.Header(header), body)
			require.NoError(t, err)
			require.Equal(t, want, got)
			requireSameData(t, want, got)
		})
	}
	t.Run("as the Go SDK writes it", func(t *testing.T) {
		t.Parallel()
		want, err := event.Decode(encode(t, sample(t)))
		require.NoError(t, err)
		got, err := event.DecodeMsg(binarySample(t))
		require.NoError(t, err)
		require.Equal(t, want, got)
		requireSameData(t, want, got)
	})
}

// requireSameData: the data of both reads the same, as its type implies.
func requireSameData(t *testing.T, want, got event.Event) {
	t.Helper()
	if strings.HasPrefix(want.Type, "inventory.") {
		w, err := want.StockData()
		require.NoError(t, err)
		g, err := got.StockData()
		require.NoError(t, err)
		require.Equal(t, w, g)
		return
	}
	w, err := want.OrderData()
	require.NoError(t, err)
	g, err := got.OrderData()
	require.NoError(t, err)
	require.Equal(t, w, g)
}

func TestDecodeMsgIsStructuredWithoutCESpecVersion(t *testing.T) {
	t.Parallel()
	payload := encode(t, sample(t))
	for name, h := range map[string]nats.Header{
		"no header":                  nil,
		"only Nats-Msg-Id":           {"Nats-Msg-Id": {"evt-2026-11-30-0001"}},
		"ce- headers but no version": {"ce-id": {"other"}, "ce-tenant": {"victim"}},
	} {
		require.False(t, event.IsBinary(h), name)
		ev, err := event.DecodeMsg(h, payload)
		require.NoError(t, err, name)
		require.Equal(t, "acme", ev.Tenant, name)
		require.Equal(t, "evt-2026-11-30-0001", ev.ID, name)
	}
}

func TestBinaryHeaderNamesAreMatchedIgnoringCase(t *testing.T) {
	t.Parallel()
	want, err := event.Decode(encode(t, sample(t)))
	require.NoError(t, err)
	for name, spell := range map[string]func(string) string{
		"Ce-Id, as http.Header writes it": http.CanonicalHeaderKey,
		"CE-ID":                           strings.ToUpper,
		"ce-id":                           strings.ToLower,
	} {
		h, body := binarySample(t)
		respelled := nats.Header{}
		for k, v := range h {
			respelled[spell(k)] = v
		}
		got, err := event.DecodeMsg(respelled, body)
		require.NoError(t, err, name)
		require.Equal(t, want, got, name)
	}
	// An http.Header, canonical keys and all, is a header too.
	h, body := binarySample(t)
	hh := http.Header{}
	for k, v := range h {
		hh.Set(k, v[0])
	}
	got, err := event.DecodeMsg(hh, body)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestDecodeBinaryRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(h nats.Header, body *[]byte)
		reason string // a fragment the error must contain
	}{
		{"no tenant", func(h nats.Header, _ *[]byte) { h.Del("ce-tenant") }, "ce-tenant: is required"},
		{"tenant with a dot", func(h nats.Header, _ *[]byte) { h.Set("ce-tenant", "acme.eu") }, `ce-tenant: "acme.eu" must be 1-64 letters`},
		{"no id", func(h nats.Header, _ *[]byte) { h.Del("ce-id") }, "ce-id: is required"},
		{"blank id", func(h nats.Header, _ *[]byte) { h.Set("ce-id", " ") }, "ce-id: is required"},
		{"id with a slash", func(h nats.Header, _ *[]byte) { h.Set("ce-id", "../evt") }, `ce-id: "../evt" may contain only letters, digits`},
		{"id too long", func(h nats.Header, _ *[]byte) { h.Set("ce-id", strings.Repeat("x", 257)) }, "ce-id: is longer than 256 bytes"},
		{"no source", func(h nats.Header, _ *[]byte) { h.Del("ce-source") }, "ce-source: is required"},
		{"source with a control", func(h nats.Header, _ *[]byte) { h.Set("ce-source", "/erp\x00") }, "ce-source: contains control characters"},
		{"no type", func(h nats.Header, _ *[]byte) { h.Del("ce-type") }, "ce-type: is required"},
		{"empty specversion", func(h nats.Header, _ *[]byte) { h.Set("ce-specversion", "") }, `ce-specversion: is required (want "1.0")`},
		{"old specversion", func(h nats.Header, _ *[]byte) { h.Set("ce-specversion", "0.3") }, `ce-specversion: "0.3" is not supported`},
		{"a time that is not RFC 3339", func(h nats.Header, _ *[]byte) { h.Set("ce-time", "30/11/2026") }, `ce-time: "30/11/2026" is not an RFC 3339 time`},
		{"value not UTF-8", func(h nats.Header, _ *[]byte) { h.Set("ce-source", "/erp\xff") }, "ce-source: is not valid UTF-8"},
		{"value with U+FFFD", func(h nats.Header, _ *[]byte) { h.Set("ce-tenant", "acme\uFFFD") }, "ce-tenant: contains U+FFFD"},
		{"an attribute twice, in two cases", func(h nats.Header, _ *[]byte) { h["Ce-Tenant"] = []string{"victim"} },
			`ce-tenant: appears twice, as "Ce-Tenant" and "ce-tenant"`},
		{"an attribute with two values", func(h nats.Header, _ *[]byte) { h.Add("ce-tenant", "victim") }, "ce-tenant: has 2 values"},
		{"content-type twice, in two cases", func(h nats.Header, _ *[]byte) {
			h["Content-Type"], h["content-type"] = []string{"application/json"}, []string{"application/json"}
		}, `content-type: appears twice`},
		{"an extension name that is not letters and digits", func(h nats.Header, _ *[]byte) { h.Set("ce-my_ext", "x") },
			"ce-my_ext: attribute names are letters and digits (CloudEvents 1.0)"},
		{"a header named ce-", func(h nats.Header, _ *[]byte) { h.Set("ce-", "x") }, "ce-: attribute names are letters and digits"},
		{"the data as a header", func(h nats.Header, _ *[]byte) { h.Set("ce-data", "{}") }, "ce-data: is not an attribute: in binary mode the data is the message body"},
		{"XML data", func(h nats.Header, _ *[]byte) { h.Del("ce-datacontenttype"); h.Set("content-type", "application/xml") },
			`content-type: "application/xml" is not supported (want application/json)`},
		{"XML data, as the Go SDK says it", func(h nats.Header, _ *[]byte) { h.Set("ce-datacontenttype", "text/xml") },
			`ce-datacontenttype: "text/xml" is not supported (want application/json)`},
		{"content types that disagree", func(h nats.Header, _ *[]byte) { h.Set("content-type", "application/xml") },
			`ce-datacontenttype: "application/json" differs from content-type "application/xml"`},
		{"a structured event sent as binary", func(h nats.Header, _ *[]byte) {
			h.Del("ce-datacontenttype")
			h.Set("content-type", "application/cloudevents+json")
		}, "content-type: \"application/cloudevents+json\" is a whole event in structured mode, but ce-specversion makes this message binary mode"},
		{"a body that is not JSON", func(_ nats.Header, b *[]byte) { *b = []byte(`order=PO-1`) },
			"data: the message body is not JSON (ce-datacontenttype application/json): not valid JSON at byte 1"},
		{"a body that is not JSON, without a content type", func(h nats.Header, b *[]byte) { h.Del("ce-datacontenttype"); *b = []byte(`{"order":`) },
			"data: the message body is not JSON (content-type absent, so JSON): not valid JSON at byte 9: unexpected end of JSON input"},
		{"a body that is not UTF-8", func(h nats.Header, b *[]byte) {
			h.Set("content-type", "application/json")
			*b = []byte("{\"a\":\"\xff\"}")
		},
			"data: the message body is not JSON (content-type application/json): not valid UTF-8 at byte 6"},
		{"a body after the JSON", func(_ nats.Header, b *[]byte) { *b = append(*b, []byte(` {}`)...) }, "data: the message body is not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, body := binarySample(t)
			tt.edit(h, &body)
			_, err := event.DecodeMsg(h, body)
			var verr *event.ValidationError
			require.True(t, errors.As(err, &verr), "want a ValidationError, got %v", err)
			require.Contains(t, err.Error(), tt.reason)
		})
	}
}

func TestDecodeBinaryListsEveryProblem(t *testing.T) {
	t.Parallel()
	h, _ := binarySample(t)
	h.Del("ce-tenant")
	h.Set("ce-id", "a/b")
	h.Set("ce-time", "yesterday")
	_, err := event.DecodeMsg(h, []byte(`not json`))
	var verr *event.ValidationError
	require.True(t, errors.As(err, &verr), "want a ValidationError, got %v", err)
	require.Len(t, verr.Problems, 4, err.Error())
	for _, field := range []string{"ce-time: ", "ce-id: ", "ce-tenant: ", "data: "} {
		require.Contains(t, err.Error(), field)
	}
}

func TestDecodeBinaryAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(h nats.Header, body *[]byte)
		ct   string // the DataContentType decoded
	}{
		{"content-type, as the binding's spec says", func(h nats.Header, _ *[]byte) {
			h.Del("ce-datacontenttype")
			h.Set("content-type", "application/json")
		}, "application/json"},
		{"both, the same", func(h nats.Header, _ *[]byte) { h.Set("content-type", "application/json") }, "application/json"},
		{"a charset", func(h nats.Header, _ *[]byte) { h.Set("ce-datacontenttype", "application/json; charset=utf-8") }, "application/json; charset=utf-8"},
		{"no content type: JSON", func(h nats.Header, _ *[]byte) { h.Del("ce-datacontenttype") }, ""},
		{"an extension Herald does not read", func(h nats.Header, _ *[]byte) { h.Set("ce-priority", "high"); h.Set("ce-traceparent", "00-x") }, "application/json"},
		{"subject and dataschema, which Herald does not read", func(h nats.Header, _ *[]byte) {
			h.Set("ce-subject", "PO-2026-0042")
			h.Set("ce-dataschema", "https://acme.example/schemas/order.json")
		}, "application/json"},
		{"space around the body", func(_ nats.Header, b *[]byte) { *b = append(append([]byte("\n  "), *b...), "\r\n"...) }, "application/json"},
		{"headers of other concerns", func(h nats.Header, _ *[]byte) { h.Set("traceparent", "00-x"); h.Set("Herald-Reason", "x") }, "application/json"},
	}
	want, err := event.Decode(encode(t, sample(t)))
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, body := binarySample(t)
			tt.edit(h, &body)
			got, err := event.DecodeMsg(h, body)
			require.NoError(t, err)
			require.Equal(t, tt.ct, got.DataContentType)
			got.DataContentType = want.DataContentType
			require.Equal(t, want, got)
		})
	}
}

func TestBinaryDataIsAsStrictAsStructured(t *testing.T) {
	t.Parallel()
	h, body := binarySample(t)
	body = []byte(strings.Replace(string(body), `"email":"compras@`, `"Email":"compras@`, 1))
	ev, err := event.DecodeMsg(h, body)
	require.NoError(t, err, "the attributes are fine; the data is not")
	_, err = ev.OrderData()
	require.ErrorContains(t, err, `data.recipients[1].Email: is not a field: did you mean "email"?`)

	h, _ = binarySample(t)
	ev, err = event.DecodeMsg(h, nil)
	require.NoError(t, err)
	_, err = ev.OrderData()
	require.ErrorContains(t, err, "data: is required")
}

func TestBinaryConvertsAttributes(t *testing.T) {
	t.Parallel()
	header, body, err := event.Binary([]byte(`{"specversion":"1.0","id":"x","count":3,"urgent":true,"gone":null,"data":{"a":1}}`))
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"ce-specversion": {"1.0"}, "ce-id": {"x"}, "ce-count": {"3"}, "ce-urgent": {"true"}}, header)
	require.JSONEq(t, `{"a":1}`, string(body))
	for payload, reason := range map[string]string{
		`{"id":"x","ext":{"a":1}}`:        `"ext": an attribute is a string, a number or a boolean`,
		`{"id":"x","ext":1.5}`:            `"ext": an attribute number is a CloudEvents integer`,
		`{"id":"x","data_base64":"eA=="}`: "data_base64: Herald reads JSON data only",
		`[1]`:                             "malformed event",
	} {
		_, _, err := event.Binary([]byte(payload))
		require.ErrorContains(t, err, reason, payload)
	}
}

// BenchmarkDecodeBinaryOrder is BenchmarkDecodeOrder for the same event in
// binary mode: the attributes from headers, the data from the body.
func BenchmarkDecodeBinaryOrder(b *testing.B) {
	payload, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(b, err)
	header, body, err := event.Binary(payload)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		ev, err := event.DecodeMsg(header, body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ev.OrderData(); err != nil {
			b.Fatal(err)
		}
	}
}
