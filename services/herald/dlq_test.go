package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// The list's last line says how much it left out, and show prints a
// payload too large for its entry from where it was kept.
func TestDLQListAndShow(t *testing.T) {
	n := heraldtest.StartNATSWithStreams(t)
	t.Setenv("NATS_URL", n.Server.URL())
	t.Setenv("HERALD_CONFIG", "")
	ctx := heraldtest.Context(t)
	big := `{"tenant":"acme","note":"` + strings.Repeat("x", int(n.Conn.MaxPayload())-100) + `"}`
	for i := range 1234 {
		data := fmt.Sprintf(`{"tenant":"acme","n":%d}`, i)
		if i == 0 {
			data = big
		}
		original := &jetstream.RawStreamMsg{Subject: "orders.created", Sequence: uint64(i + 1), Data: []byte(data)}
		require.NoError(t, deadletter.Copy(ctx, n.JS, "ORDERS", "router", original, 1, "invalid: no order"))
	}

	out, err := herald(t, "dlq", "list")
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(out, "\n100 of 1,234 entries (--limit 0 lists all)\n"), out)
	require.Equal(t, 1+100+1, strings.Count(out, "\n"), "a header, 100 entries, the count")
	out, err = herald(t, "dlq", "list", "--limit", "0", "--tenant", "acme")
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(out, "\n1,234 entries\n"), out[len(out)-40:])

	out, err = herald(t, "dlq", "show", "1")
	require.NoError(t, err)
	head, payload, ok := strings.Cut(out, "\n\n")
	require.True(t, ok, "headers, a blank line, the payload")
	require.Contains(t, head, "Herald-Payload-Object: ORDERS/1\n")
	require.Contains(t, head, "read from object store dlq_payloads as ORDERS/1")
	require.True(t, strings.HasPrefix(payload, "{\n  \"note\": \"xxxxxxxx"), "the payload, pretty-printed: %.60q", payload)
	require.True(t, strings.HasSuffix(payload, "x\",\n  \"tenant\": \"acme\"\n}\n"), "the payload, pretty-printed, in full")
}

// With nothing to list, --json prints an empty array, which a script can
// iterate, not null.
func TestDLQListAsJSONOfNothingIsAnEmptyArray(t *testing.T) {
	n := heraldtest.StartNATSWithStreams(t)
	t.Setenv("NATS_URL", n.Server.URL())
	t.Setenv("HERALD_CONFIG", "")
	out, err := herald(t, "dlq", "list", "--json")
	require.NoError(t, err)
	require.Equal(t, "[]\n", out)
}
