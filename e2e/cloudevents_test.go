package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	cejsm "github.com/cloudevents/sdk-go/protocol/nats_jetstream/v2"
	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// A publisher using the official CloudEvents Go SDK and its NATS JetStream
// binding is understood in both content modes: structured (the event is
// the body) and binary (the attributes are ce- headers, the data the
// body). Each valid event notifies exactly its recipients; a binary event
// that is invalid is dead-lettered with its reason and its headers, so it
// can be redriven once fixed.
func TestCloudEventsSDKStructuredAndBinaryModes(t *testing.T) {
	t.Parallel()
	p := startPipeline(t)
	sender, err := cejsm.NewSenderFromConn(p.nc, "ORDERS", "orders.created", nil)
	require.NoError(t, err)
	client, err := cloudevents.NewClient(sender)
	require.NoError(t, err)
	ctx := heraldtest.Context(t)
	send := func(ctx context.Context, e cloudevents.Event) {
		t.Helper()
		res := client.Send(ctx, e)
		require.True(t, cloudevents.IsACK(res), "%v", res)
	}

	send(binding.WithForceStructured(ctx), sdkEvent(t, "evt-ce-structured", "PO-CE-STRUCTURED", nil))
	send(binding.WithForceBinary(ctx), sdkEvent(t, "evt-ce-binary", "PO-CE-BINARY", nil))
	noTenant := sdkEvent(t, "evt-ce-no-tenant", "PO-CE-NO-TENANT", nil)
	noTenant.SetExtension("tenant", nil) // removes it
	send(binding.WithForceBinary(ctx), noTenant)
	send(binding.WithForceBinary(ctx), sdkEvent(t, "evt-ce-bad-key", "PO-CE-BAD-KEY", func(data map[string]any) {
		r := data["recipients"].([]any)[1].(map[string]any)
		r["Email"] = r["email"]
		delete(r, "email")
	}))
	p.settle(t)

	require.Equal(t, []string{
		"Pedido de compra PO-CE-BINARY de Frutas del Sur S.L.",
		"Pedido de compra PO-CE-STRUCTURED de Frutas del Sur S.L.",
		"Заказ на закупку PO-CE-BINARY от Frutas del Sur S.L.",
		"Заказ на закупку PO-CE-STRUCTURED от Frutas del Sur S.L.",
	}, subjects(p.mail(t)), "each valid event emails each of its two recipients once, whatever its mode")

	entries := map[string]*jetstream.RawStreamMsg{}
	for _, e := range p.streamMessages(t, "DLQ") {
		entries[e.Header.Get("ce-id")] = e
	}
	require.Len(t, entries, 2, "only the invalid events are dead-lettered")
	for id, reason := range map[string]string{
		"evt-ce-no-tenant": "invalid event: ce-tenant: is required",
		"evt-ce-bad-key":   `invalid event: data.recipients[1].Email: is not a field: did you mean "email"? (field names are case-sensitive)`,
	} {
		e := entries[id]
		require.NotNil(t, e, id)
		require.Equal(t, "dlq.ORDERS.router", e.Subject, id)
		require.Equal(t, reason, e.Header.Get(deadletter.HeaderReason), id)
		require.Equal(t, "1.0", e.Header.Get("ce-specversion"), "%s: the entry keeps the attributes, for a redrive", id)
		require.True(t, json.Valid(e.Data), "%s: the entry keeps the data", id)
		require.Contains(t, string(e.Data), `"PO-CE-`, id)
	}
}

// sdkEvent is the sample order as a publisher builds it with the SDK, under
// its own event and order ids, its data edited.
func sdkEvent(t *testing.T, id, orderID string, edit func(data map[string]any)) cloudevents.Event {
	t.Helper()
	var structured struct {
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(sample(t, "order.created.json", nil), &structured))
	structured.Data["order"].(map[string]any)["id"] = orderID
	if edit != nil {
		edit(structured.Data)
	}
	e := cloudevents.NewEvent()
	e.SetID(id)
	e.SetSource("/erp/purchasing")
	e.SetType("order.created")
	e.SetTime(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	e.SetExtension("tenant", "acme")
	require.NoError(t, e.SetData(cloudevents.ApplicationJSON, structured.Data))
	require.True(t, strings.HasPrefix(e.DataContentType(), "application/json"))
	return e
}
