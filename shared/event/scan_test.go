package event

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// findings is what a walk reports about one JSON value: its problems in
// order, how many more were left out, and the error that stopped it.
type findings struct {
	Problems []string
	More     int
	Err      string
}

func scanEnvelope(payload []byte) findings {
	var p problems
	return findingsOf(p, checkEnvelopeKeys(&p, payload))
}

func tokenEnvelope(payload []byte) findings {
	var p problems
	return findingsOf(p, tokenEnvelopeKeys(&p, payload))
}

func scanData(data []byte) findings {
	var p problems
	return findingsOf(p, checkDataKeys(&p, data, new(OrderData)))
}

func tokenData(data []byte) findings {
	var p problems
	return findingsOf(p, tokenDataKeys(&p, data, new(OrderData)))
}

func findingsOf(p problems, err error) findings {
	f := findings{Problems: p.list, More: p.more}
	if err != nil {
		f.Err = err.Error()
	}
	return f
}

// requireSameFindings walks a valid JSON value both ways, as an event and
// as an order's data, and requires the scan to report what the token walk
// reports, word for word and in the same order.
func requireSameFindings(t testing.TB, payload []byte) {
	t.Helper()
	if !json.Valid(payload) {
		return // the scan's callers parse first: it never sees anything else
	}
	if want, got := tokenEnvelope(payload), scanEnvelope(payload); !equalFindings(want, got) {
		t.Fatalf("envelope of %q:\ntoken walk %+v\nscan       %+v", payload, want, got)
	}
	if want, got := tokenData(payload), scanData(payload); !equalFindings(want, got) {
		t.Fatalf("data %q:\ntoken walk %+v\nscan       %+v", payload, want, got)
	}
}

func equalFindings(a, b findings) bool {
	return strings.Join(a.Problems, "\n") == strings.Join(b.Problems, "\n") && len(a.Problems) == len(b.Problems) &&
		a.More == b.More && a.Err == b.Err
}

// TestScanReportsEveryKindOfFinding names each finding the walk can make,
// with the exact words and path it is reported with, and checks that the
// token walk it replaced says the same.
func TestScanReportsEveryKindOfFinding(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 40) + strings.Repeat("]", 40)
	tests := []struct {
		name     string
		envelope bool // walk as an event; else as an order's data
		payload  string
		want     findings
	}{
		{"nothing to report", true, `{"specversion":"1.0","tenant":"acme","data":{"x":1,"X":2}}`, findings{}},
		{"a key twice", true, `{"tenant":"a","tenant":"b"}`,
			findings{Problems: []string{"tenant: appears twice in one object (keys must be unique)"}}},
		{"a key twice, once escaped", true, `{"tenant":"a","\u0074enant":"b"}`,
			findings{Problems: []string{"tenant: appears twice in one object (keys must be unique)"}}},
		{"keys differing in case, against the last seen", false, `{"order":{"kind":1,"Kind":2,"KIND":3}}`,
			findings{Problems: []string{
				`data.order.Kind: differs only in case from "kind" in the same object (keys are case-sensitive and must be unique)`,
				`data.order.Kind: is not a field: did you mean "kind"? (field names are case-sensitive)`,
				`data.order.KIND: differs only in case from "Kind" in the same object (keys are case-sensitive and must be unique)`,
				`data.order.KIND: is not a field: did you mean "kind"? (field names are case-sensitive)`,
			}}},
		{"keys that fold alike only in Unicode", false, `{"ſku":1,"SKU":2}`,
			findings{Problems: []string{`data.SKU: differs only in case from "ſku" in the same object (keys are case-sensitive and must be unique)`}}},
		{"keys that decode alike from bytes that are not UTF-8", false, "{\"a\xff\":1,\"a\xfe\":2}",
			findings{Problems: []string{`data."a�": appears twice in one object (keys must be unique)`}}},
		{"an upper-case attribute that names a field", true, `{"TENANT":"a"}`,
			findings{Problems: []string{`TENANT: attribute names are lowercase letters and digits (CloudEvents 1.0): did you mean "tenant"?`}}},
		{"a long s that folds to a field", true, `{"ſource":"/s"}`,
			findings{Problems: []string{`"ſource": attribute names are lowercase letters and digits (CloudEvents 1.0): did you mean "source"?`}}},
		{"an attribute name with an underscore", true, `{"my_ext":"x"}`,
			findings{Problems: []string{`my_ext: attribute names are lowercase letters and digits (CloudEvents 1.0)`}}},
		{"an empty attribute name", true, `{"":"x"}`,
			findings{Problems: []string{`"": attribute names are lowercase letters and digits (CloudEvents 1.0)`}}},
		{"a data key that is a field only ignoring case", false, `{"recipients":[{},{"Email":"x"}]}`,
			findings{Problems: []string{`data.recipients[1].Email: is not a field: did you mean "email"? (field names are case-sensitive)`}}},
		{"a lone surrogate escape", false, `{"order":{"id":"PO-\ud800"}}`,
			findings{Problems: []string{`data.order.id: contains U+FFFD or an unpaired \u surrogate escape: text must be valid Unicode`}}},
		{"a low surrogate first", false, `{"x":"\udc00\ud800"}`,
			findings{Problems: []string{`data.x: contains U+FFFD or an unpaired \u surrogate escape: text must be valid Unicode`}}},
		{"an escaped U+FFFD, deep in an array", false, `{"x":[1,["\uFFFD"]]}`,
			findings{Problems: []string{`data.x[1][0]: contains U+FFFD or an unpaired \u surrogate escape: text must be valid Unicode`}}},
		{"a U+FFFD as it is", false, `{"x":"�"}`,
			findings{Problems: []string{`data.x: contains U+FFFD or an unpaired \u surrogate escape: text must be valid Unicode`}}},
		{"a byte that is not UTF-8", false, "[\"\xff\"]",
			findings{Problems: []string{`data[0]: contains U+FFFD or an unpaired \u surrogate escape: text must be valid Unicode`}}},
		{"text at the top level", true, `"\ud800"`,
			findings{Problems: []string{`(top level): contains U+FFFD or an unpaired \u surrogate escape: text must be valid Unicode`}}},
		{"a surrogate pair and other escapes", false, `{"x":"\ud83d\ude00 \" \\ \/ \n \u00e9"}`, findings{}},
		{"nested too deep", true, `{"ext":` + deep + `}`, findings{Err: "ext" + strings.Repeat("[0]", 31) + ": nested deeper than 32 levels"}},
		{"nested too deep at the top", false, deep, findings{Err: "data" + strings.Repeat("[0]", 32) + ": nested deeper than 32 levels"}},
		{"data is not walked inside the envelope", true, `{"data":{"a":"\ud800","a":` + deep + `}}`, findings{}},
		{"a key that is not a plain name, in a path", false, `{"a b":{"c.d":"\ud800"}}`,
			findings{Problems: []string{`data."a b"."c.d": contains U+FFFD or an unpaired \u surrogate escape: text must be valid Unicode`}}},
		{"too many problems", false, `{"x":[` + strings.TrimSuffix(strings.Repeat(`"\ud800",`, 25), ",") + `]}`,
			findings{Problems: func() []string {
				var list []string
				for i := range maxProblems {
					list = append(list, "data.x["+strconv.Itoa(i)+"]: contains U+FFFD or an unpaired \\u surrogate escape: text must be valid Unicode")
				}
				return list
			}(), More: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			walk, reference := scanData, tokenData
			if tt.envelope {
				walk, reference = scanEnvelope, tokenEnvelope
			}
			got := walk([]byte(tt.payload))
			require.Equal(t, tt.want.Problems, got.Problems)
			require.Equal(t, tt.want.More, got.More)
			require.Equal(t, tt.want.Err, got.Err)
			require.Equal(t, reference([]byte(tt.payload)), got, "the token walk reports otherwise")
		})
	}
}

// TestScanAgreesWithTokenWalkOnMutations splices fragments that make
// findings into the example events at random places, and walks every
// result that is still valid JSON both ways.
func TestScanAgreesWithTokenWalkOnMutations(t *testing.T) {
	t.Parallel()
	fragments := []string{`"id":"x",`, `"ID":1,`, `"Id":[],`, `"\u0069d":"y",`, `"ſource":"s",`, `"K":"\ud800",`,
		`"a":"\udc00",`, `"e":"\uFFFD",`, "\"k\xff\":1,", "\"v\":\"\xfe\",", `"n":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],`,
		`"data":{"a":1,"A":2},`, `"Email":"x",`, `"email":"x",`, `"recipients":[{"Role":"x"}],`, `"":0,`, " \t\r\n", `"\"":"\\",`}
	rng := rand.New(rand.NewPCG(16, 2026))
	for _, base := range examples(t) {
		requireSameFindings(t, base)
		for range 500 {
			b := base
			for range 1 + rng.IntN(4) {
				at := rng.IntN(len(b) + 1)
				b = append(b[:at:at], append([]byte(fragments[rng.IntN(len(fragments))]), b[at:]...)...)
			}
			requireSameFindings(t, b)
			if data, ok := dataOf(b); ok {
				requireSameFindings(t, data)
			}
		}
	}
}

// FuzzScanAgreesWithTokenWalk: on any valid JSON, the scan reports what
// the token walk reports. Seeded with the examples and FuzzDecode's corpus.
func FuzzScanAgreesWithTokenWalk(f *testing.F) {
	for _, b := range examples(f) {
		f.Add(b)
	}
	files, _ := filepath.Glob("testdata/fuzz/FuzzDecode/*")
	for _, file := range files {
		if b, ok := corpusEntry(file); ok {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		requireSameFindings(t, payload)
		if data, ok := dataOf(payload); ok {
			requireSameFindings(t, data)
		}
	})
}

// SampleEvents are the files of examples/events but those named broken.*,
// which are made to be refused (the README's tour dead-letters them). It is
// exported for the package's external tests.
func SampleEvents(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob("../../examples/events/*.json")
	require.NoError(tb, err)
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasPrefix(filepath.Base(f), "broken.") })
	require.NotEmpty(tb, files)
	return files
}

func examples(t testing.TB) [][]byte {
	var out [][]byte
	for _, file := range SampleEvents(t) {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

// dataOf is an event's data as Decode keeps it.
func dataOf(payload []byte) ([]byte, bool) {
	var ev struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(payload, &ev) != nil || len(ev.Data) == 0 {
		return nil, false
	}
	return ev.Data, true
}

// corpusEntry reads a one-value entry of a Go fuzz corpus ([]byte("…")).
func corpusEntry(file string) ([]byte, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, false
	}
	_, entry, _ := bytes.Cut(b, []byte("\n"))
	quoted, ok := strings.CutPrefix(strings.TrimSpace(string(entry)), "[]byte(")
	if !ok {
		return nil, false
	}
	s, err := strconv.Unquote(strings.TrimSuffix(quoted, ")"))
	return []byte(s), err == nil
}

// The walks run on every event: with nothing to report each allocates its
// two stacks (path and keys), and nothing per key or value.
func TestScanAllocatesOnlyItsStacks(t *testing.T) {
	payload, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	data, ok := dataOf(payload)
	require.True(t, ok)
	var p problems
	envelope := testing.AllocsPerRun(100, func() { _ = checkEnvelopeKeys(&p, payload) })
	order := testing.AllocsPerRun(100, func() { _ = checkDataKeys(&p, data, (*OrderData)(nil)) })
	require.Empty(t, p.list, "the example has something to report")
	require.LessOrEqual(t, envelope, 2.0)
	require.LessOrEqual(t, order, 2.0)
}
