package event_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
)

// spoil applies each edit to the sample order, each replacing exactly one
// occurrence.
func spoil(t *testing.T, edits ...[2]string) []byte {
	t.Helper()
	s := sampleText(t)
	for _, e := range edits {
		require.Equal(t, 1, strings.Count(s, e[0]), "the sample must contain %q once", e[0])
		s = strings.Replace(s, e[0], e[1], 1)
	}
	return []byte(s)
}

// problemsOf is the list a *ValidationError names.
func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	var invalid *event.ValidationError
	require.True(t, errors.As(err, &invalid), "want a ValidationError, got %v", err)
	return invalid.Problems
}

// One reason names every field at fault: a value of the wrong JSON type
// does not hide the faults after it, in the data or in the envelope.
func TestAReasonNamesEveryFieldAtFault(t *testing.T) {
	t.Parallel()
	payload := spoil(t,
		[2]string{`"net": "166.80"`, `"net": 166.80`},
		[2]string{`"email": "compras@frutasdelsur.example"`, `"email": "compras@frutasdelsur.example", "Email": "ceo@frutasdelsur.example"`},
		[2]string{`"currency": "EUR"`, `"currency": "eur"`},
	)
	_, _, err := event.Read(payload)
	require.Equal(t, []string{
		`data.order.totals.net: must be a JSON string such as "183.48", not a number`,
		`data.recipients[1].Email: differs only in case from "email" in the same object (keys are case-sensitive and must be unique)`,
		`data.recipients[1].Email: is not a field: did you mean "email"? (field names are case-sensitive)`,
		`data.order.currency: "eur" must be an ISO 4217 code such as EUR`,
	}, problemsOf(t, err))

	// With the envelope at fault too, its problems come first.
	_, _, err = event.Read(spoil(t, [2]string{`"tenant": "acme"`, `"tenant": "ac me"`}, [2]string{`"revision": 1`, `"revision": "1"`},
		[2]string{`"issued_at": "2026-11-30T09:00:00Z"`, `"issued_at": "yesterday"`}))
	require.Equal(t, []string{
		`tenant: "ac me" must be 1-64 letters, digits, '-' or '_'`,
		`data.order.revision: JSON string where int was expected`,
		`data.order.issued_at: "yesterday" is not an RFC 3339 time such as "2026-11-30T09:00:00Z"`,
	}, problemsOf(t, err))
}

// A mistyped value is one problem: the field, decoded as absent, is not
// also "required", nor is anything inside it.
func TestAMistypedValueIsOneProblem(t *testing.T) {
	t.Parallel()
	_, _, err := event.Read(spoil(t, [2]string{`"totals": { "net": "166.80", "tax": "16.68", "gross": "183.48" }`, `"totals": "183.48"`},
		[2]string{`"channels": ["email"] }`, `"channels": "email" }`}))
	require.Equal(t, []string{
		`data.order.totals: JSON string where event.Totals was expected`,
		`data.recipients[1].channels: JSON string where []event.Channel was expected`,
	}, problemsOf(t, err))
}

// Read decodes what it validates: the data of an order event is an order,
// of an inventory event a stock level; either mode reads alike.
func TestReadDecodesTheDataByItsFamily(t *testing.T) {
	t.Parallel()
	ev, data, err := event.Read([]byte(sampleText(t)))
	require.NoError(t, err)
	require.Equal(t, "evt-2026-11-30-0001", ev.ID)
	require.Equal(t, "PO-2026-0042", data.Order.Order.ID)
	require.Nil(t, data.Stock)

	header, body, err := event.Binary([]byte(sampleText(t)))
	require.NoError(t, err)
	binary, data, err := event.ReadMsg(header, body)
	require.NoError(t, err)
	require.Equal(t, ev.ID, binary.ID)
	require.Equal(t, "PO-2026-0042", data.Order.Order.ID)
}

// The README's broken example — what `herald publish --no-validate` sends
// to show the DLQ — is refused, its reason naming both of its faults.
func TestTheBrokenExampleIsRefusedNamingEachFault(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../examples/events/broken.order.created.json")
	require.NoError(t, err)
	_, _, err = event.Read(raw)
	require.Error(t, err)
	require.Contains(t, err.Error(), `data.order.totals.net: must be a JSON string such as "183.48", not a number`)
	require.Contains(t, err.Error(), `data.recipients[1].Email: is not a field`)
}
