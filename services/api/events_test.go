package api_test

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// An event without a tenant is the key's tenant's: it is published on the
// subject its type implies, with the tenant filled in and every other byte
// as sent, under a Nats-Msg-Id no other tenant can guess (event.MsgID: the
// tenant, the id and a digest of the bytes).
func TestPublishedEventCarriesTheKeysTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	body := edit(t, sampleOrder(t), "\n  \"tenant\": \"acme\",", "")

	got := b.do(t, http.MethodPost, "/v1/events", acmeSend, body)
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	require.JSONEq(t, `{"id":"evt-2026-11-30-0001","tenant":"acme","subject":"orders.created.acme","stream":"ORDERS",
		"sequence":1,"duplicate":false}`, got.body)
	require.Empty(t, got.header.Get("Idempotent-Replayed"))

	msgs := heraldtest.StreamMessages(t, b.nats.JS, "ORDERS")
	require.Len(t, msgs, 1)
	require.Equal(t, "orders.created.acme", msgs[0].Subject)
	require.Equal(t, `{"tenant":"acme",`+string(body[1:]), string(msgs[0].Data))
	require.Equal(t, event.MsgID("acme", "evt-2026-11-30-0001", msgs[0].Data), msgs[0].Header.Get(jetstream.MsgIDHeader))
	ev, err := event.Decode(msgs[0].Data)
	require.NoError(t, err)
	require.Equal(t, "acme", ev.Tenant)
}

// Stripe's semantics: the same key and body answer as the first time and
// publish nothing; the same key with another body is refused.
func TestIdempotencyKeyReplaysTheFirstAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	body := sampleOrder(t)

	first := b.do(t, http.MethodPost, "/v1/events", acmeSend, body, "Idempotency-Key", "order 42, take 1")
	require.Equal(t, http.StatusAccepted, first.status, first.body)
	again := b.do(t, http.MethodPost, "/v1/events", acmeSend, body, "Idempotency-Key", "order 42, take 1")
	require.Equal(t, first.status, again.status)
	require.Equal(t, first.body, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))

	other := edit(t, body, `"revision": 1`, `"revision": 2`)
	reused := b.do(t, http.MethodPost, "/v1/events", acmeSend, other, "Idempotency-Key", "order 42, take 1")
	require.Equal(t, http.StatusUnprocessableEntity, reused.status, reused.body)
	require.Equal(t, "application/problem+json", reused.header.Get("Content-Type"))
	require.Contains(t, reused.body, "Idempotency-Key was used with another request")

	msgs := heraldtest.StreamMessages(t, b.nats.JS, "ORDERS")
	require.Len(t, msgs, 1, "one publish for one key")
	require.Equal(t, event.MsgID("acme", "evt-2026-11-30-0001", body), msgs[0].Header.Get(jetstream.MsgIDHeader), "the event's, not the key's")

	// Without a key, the event id is the key: the same again replays.
	first = b.do(t, http.MethodPost, "/v1/events", acmeSend, other)
	require.Equal(t, http.StatusAccepted, first.status, first.body)
	again = b.do(t, http.MethodPost, "/v1/events", acmeSend, other)
	require.Equal(t, first.body, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Len(t, heraldtest.StreamMessages(t, b.nats.JS, "ORDERS"), 2)
}

// Two tenants using the same key (here: the same event id) are two
// requests, and two messages.
func TestTenantsNeverShareAKey(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	body := edit(t, sampleOrder(t), "\n  \"tenant\": \"acme\",", "")
	for _, key := range []string{acmeSend, globexSend} {
		got := b.do(t, http.MethodPost, "/v1/events", key, body)
		require.Equal(t, http.StatusAccepted, got.status, got.body)
		require.Empty(t, got.header.Get("Idempotent-Replayed"))
	}
	msgs := heraldtest.StreamMessages(t, b.nats.JS, "ORDERS")
	require.Len(t, msgs, 2)
	require.Equal(t, event.MsgID("globex", "evt-2026-11-30-0001", msgs[1].Data), msgs[1].Header.Get(jetstream.MsgIDHeader))
}

func TestEventsAreRefusedWithAProblem(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	order := sampleOrder(t)
	for _, c := range []struct {
		name   string
		key    string
		body   []byte
		status int
		says   string
	}{
		{"no key", "", order, http.StatusUnauthorized, "an API key is required"},
		{"an unknown key", "hk_nobody_x", order, http.StatusUnauthorized, "not valid"},
		{"a key without the send scope", acmeRead, order, http.StatusForbidden, "lacks the scope send"},
		{"another tenant's event", globexSend, order, http.StatusForbidden, `the event's tenant \"acme\" is not the API key's`},
		{"not JSON", acmeSend, []byte(`{"specversion":`), http.StatusBadRequest, "malformed event: not valid JSON"},
		{"an unknown data member", acmeSend, edit(t, order, `"currency": "EUR",`, `"currency": "EUR", "colour": "red",`),
			http.StatusUnprocessableEntity, `unknown field \"colour\"`},
		{"an unknown attribute", acmeSend, edit(t, order, `"specversion": "1.0",`, `"specversion": "1.0", "partitionkey": "x",`),
			http.StatusUnprocessableEntity, "partitionkey"},
		{"an attribute in capitals", acmeSend, edit(t, order, `"source"`, `"Source"`),
			http.StatusUnprocessableEntity, "lowercase letters and digits"},
		{"an invalid order", acmeSend, edit(t, order, `"kind": "purchase"`, `"kind": "barter"`),
			http.StatusUnprocessableEntity, `\"barter\" must be \"purchase\" or \"sales\"`},
		{"a type without a stream", acmeSend, edit(t, order, `"type": "order.created"`, `"type": "invoice.paid"`),
			http.StatusUnprocessableEntity, `family \"invoice\" has no stream`},
	} {
		got := b.do(t, http.MethodPost, "/v1/events", c.key, c.body)
		require.Equal(t, c.status, got.status, "%s: %s", c.name, got.body)
		require.Equal(t, "application/problem+json", got.header.Get("Content-Type"), c.name)
		require.Contains(t, got.body, c.says, c.name)
		if c.key != "" {
			require.NotContains(t, got.body, c.key, "%s: the key is never repeated", c.name)
		}
	}
	got := b.do(t, http.MethodPost, "/v1/events", "", order)
	require.Equal(t, `Bearer realm="herald"`, got.header.Get("WWW-Authenticate"))
	require.Empty(t, heraldtest.StreamMessages(t, b.nats.JS, "ORDERS"), "nothing refused is published")
}

// The cap is api.max_body_bytes: a body of exactly that size goes through,
// one byte more is refused before it is decoded.
func TestBodiesAreCapped(t *testing.T) {
	t.Parallel()
	const limit = 4096
	b := setup(t, api.Config{MaxBodyBytes: limit})
	order := sampleOrder(t)
	exact := append(order, strings.Repeat(" ", limit-len(order))...)

	got := b.do(t, http.MethodPost, "/v1/events", acmeSend, append(exact, ' '))
	require.Equal(t, http.StatusRequestEntityTooLarge, got.status, got.body)
	require.Equal(t, "application/problem+json", got.header.Get("Content-Type"))
	require.Contains(t, got.body, "larger than 4096 bytes")

	got = b.do(t, http.MethodPost, "/v1/events", acmeSend, exact)
	require.Equal(t, http.StatusAccepted, got.status, got.body)
}

// An admin key publishes for any tenant, which the event must then name.
func TestAnAdminKeyPublishesForTheTenantTheEventNames(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	got := b.do(t, http.MethodPost, "/v1/events", adminKey, sampleOrder(t))
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	var accepted api.EventAccepted
	require.NoError(t, json.Unmarshal([]byte(got.body), &accepted))
	require.Equal(t, "acme", accepted.Tenant)

	got = b.do(t, http.MethodPost, "/v1/events", adminKey, edit(t, sampleOrder(t), "\n  \"tenant\": \"acme\",", ""))
	require.Equal(t, http.StatusUnprocessableEntity, got.status, got.body)
	require.Contains(t, got.body, "is required")
}

// A stock event goes to INVENTORY, its data checked as stock.
func TestAStockEventGoesToINVENTORY(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	stock, err := os.ReadFile("../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	got := b.do(t, http.MethodPost, "/v1/events", acmeSend, stock)
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	require.Len(t, heraldtest.StreamMessages(t, b.nats.JS, "INVENTORY"), 1)

	got = b.do(t, http.MethodPost, "/v1/events", acmeSend, edit(t, stock, `"warehouse": "SEV-01"`, `"warehous": "SEV-01"`))
	require.Equal(t, http.StatusUnprocessableEntity, got.status, got.body)
	require.Contains(t, got.body, `{"message":"is required","location":"body.data.stock.warehouse"}`)
}

// A confirmation or a cancellation is accepted with its order's id and
// kind alone, published on its own subject; without its kind it is refused
// naming the field.
func TestAnOrderSignalNeedsOnlyItsOrdersIDAndKind(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	for _, name := range []string{"confirmed", "cancelled"} {
		signal, err := os.ReadFile("../../examples/events/order." + name + ".json")
		require.NoError(t, err)
		got := b.do(t, http.MethodPost, "/v1/events", acmeSend, signal)
		require.Equal(t, http.StatusAccepted, got.status, got.body)
		require.Contains(t, got.body, `"subject":"orders.`+name+`.acme"`)

		got = b.do(t, http.MethodPost, "/v1/events", acmeSend, edit(t, signal, `, "kind": "purchase"`, ""))
		require.Equal(t, http.StatusUnprocessableEntity, got.status, got.body)
		require.Contains(t, got.body, `{"message":"\"\" must be \"purchase\" or \"sales\"","location":"body.data.order.kind"}`)
	}
	require.Len(t, heraldtest.StreamMessages(t, b.nats.JS, "ORDERS"), 2)
}

// binaryOrder is the sample order in binary content mode over HTTP: its
// attributes as ce- headers (spelt as Go's http.Header spells them, Ce-Id),
// without a tenant, and its data as the body.
func binaryOrder(t *testing.T) ([]string, []byte) {
	t.Helper()
	var structured struct {
		Data json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(sampleOrder(t), &structured))
	return []string{"Content-Type", "application/json", "Ce-Specversion", "1.0", "Ce-Id", "evt-2026-11-30-0001",
		"Ce-Source", "/erp/purchasing", "Ce-Type", "order.created", "Ce-Time", "2026-11-30T09:00:00Z"}, structured.Data
}

// An event in binary mode is published in binary mode, to the same subject
// as the same event in structured mode, with the key's tenant filled in,
// and decodes to the same event. Its Nats-Msg-Id digests the bytes
// published, the data; the router routes it once whichever mode came first.
func TestABinaryModeEventIsPublishedAsSent(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	headers, data := binaryOrder(t)
	got := b.do(t, http.MethodPost, "/v1/events", acmeSend, data, headers...)
	require.Equal(t, http.StatusAccepted, got.status, got.body)
	require.JSONEq(t, `{"id":"evt-2026-11-30-0001","tenant":"acme","subject":"orders.created.acme","stream":"ORDERS",
		"sequence":1,"duplicate":false}`, got.body)

	msgs := heraldtest.StreamMessages(t, b.nats.JS, "ORDERS")
	require.Len(t, msgs, 1)
	msg := msgs[0]
	require.Equal(t, "orders.created.acme", msg.Subject)
	require.Equal(t, event.MsgID("acme", "evt-2026-11-30-0001", data), msg.Header.Get(jetstream.MsgIDHeader))
	require.Equal(t, "acme", msg.Header.Get("ce-tenant"))
	require.Equal(t, "application/json", msg.Header.Get("content-type"))
	require.Empty(t, msg.Header.Get("Authorization"), "nothing but the event's headers is forwarded")
	require.Equal(t, data, msg.Data, "the data as sent")
	got2, err := event.DecodeMsg(msg.Header, msg.Data)
	require.NoError(t, err)
	want, err := event.Decode(sampleOrder(t))
	require.NoError(t, err)
	require.Equal(t, want, got2)

}

func TestBinaryModeEventsAreRefusedWithAProblem(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	headers, data := binaryOrder(t)
	with := func(extra ...string) []string { return append(slices.Clone(headers), extra...) }
	for _, c := range []struct {
		name    string
		key     string
		headers []string
		body    []byte
		status  int
		says    string
	}{
		{"no id", acmeSend, with("Ce-Id", ""), data, http.StatusUnprocessableEntity, `{"message":"is required","location":"header.ce-id"}`},
		{"another tenant's event", acmeSend, with("Ce-Tenant", "globex"), data, http.StatusForbidden, `the event's tenant \"globex\" is not the API key's`},
		{"an unknown attribute", acmeSend, with("Ce-Partitionkey", "x"), data, http.StatusUnprocessableEntity, `"location":"header.ce-partitionkey"`},
		{"a type without a stream", acmeSend, with("Ce-Type", "invoice.paid"), data, http.StatusUnprocessableEntity, `family \"invoice\" has no stream`},
		{"an unknown data member", acmeSend, headers, edit(t, data, `"currency": "EUR",`, `"currency": "EUR", "colour": "red",`),
			http.StatusUnprocessableEntity, `unknown field \"colour\"`},
		{"an invalid order", acmeSend, headers, edit(t, data, `"kind": "purchase"`, `"kind": "barter"`),
			http.StatusUnprocessableEntity, `"location":"body.order.kind"`},
		{"a body that is not JSON", acmeSend, headers, []byte(`order=42`), http.StatusUnprocessableEntity,
			`the message body is not JSON (content-type application/json): not valid JSON at byte 1`},
		{"XML data", acmeSend, with("Content-Type", "application/xml"), data, http.StatusUnprocessableEntity, `"location":"header.content-type"`},
		{"ce- headers with a structured Content-Type: the body is the event", acmeSend, with("Content-Type", "application/cloudevents+json"), data,
			http.StatusUnprocessableEntity, `{"message":"is required (want \"1.0\")","location":"body.specversion"}`},
	} {
		got := b.do(t, http.MethodPost, "/v1/events", c.key, c.body, c.headers...)
		require.Equal(t, c.status, got.status, "%s: %s", c.name, got.body)
		require.Contains(t, got.body, c.says, c.name)
	}
	require.Empty(t, heraldtest.StreamMessages(t, b.nats.JS, "ORDERS"), "nothing refused is published")

	// An Idempotency-Key is bound to the attributes too, not only the body.
	first := b.do(t, http.MethodPost, "/v1/events", acmeSend, data, with("Idempotency-Key", "k1")...)
	require.Equal(t, http.StatusAccepted, first.status, first.body)
	other := b.do(t, http.MethodPost, "/v1/events", acmeSend, data, with("Idempotency-Key", "k1", "Ce-Type", "order.updated")...)
	require.Equal(t, http.StatusUnprocessableEntity, other.status, other.body)
	require.Contains(t, other.body, "Idempotency-Key was used with another request")
}
