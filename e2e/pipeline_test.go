package e2e

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/shared/deadletter"
)

func byRecipient(mail []emailtest.Parsed) map[string][]emailtest.Parsed {
	out := map[string][]emailtest.Parsed{}
	for _, m := range mail {
		out[m.To] = append(out[m.To], m)
	}
	return out
}

func subjects(mail []emailtest.Parsed) []string {
	var out []string
	for _, m := range mail {
		out = append(out, m.Subject)
	}
	slices.Sort(out)
	return out
}

func TestSampleOrderEmailsEachRecipientOnceInTheirLanguage(t *testing.T) {
	t.Parallel()
	p := startPipeline(t)
	created := sample(t, "order.created.json", nil)

	ack := p.publish(t, "orders.created", "evt-2026-11-30-0001", created)
	require.False(t, ack.Duplicate)
	p.settle(t)

	got := byRecipient(p.mail(t))
	require.Len(t, got, 2, "one email per recipient with the email channel")
	require.Len(t, got["olga@zarya.example"], 1)
	require.Len(t, got["compras@frutasdelsur.example"], 1)

	olga := got["olga@zarya.example"][0]
	require.Equal(t, "Заказ на закупку PO-2026-0042 от Frutas del Sur S.L.", olga.Subject, "Olga's locale is ru")
	require.Contains(t, olga.Text, "Здравствуйте, Ольга Петрова!")
	require.Contains(t, olga.Text, "Итого:       183,48\u00a0€")

	compras := got["compras@frutasdelsur.example"][0]
	require.Equal(t, "Pedido de compra PO-2026-0042 de Frutas del Sur S.L.", compras.Subject, "no recipient locale: the order's, es")
	require.Contains(t, compras.Text, "Hola, Compras:")
	require.Contains(t, compras.Text, "Proveedor:  Молочная ферма «Заря»")

	// The same event id again: the ORDERS duplicate window drops it.
	ack = p.publish(t, "orders.created", "evt-2026-11-30-0001", created)
	require.True(t, ack.Duplicate)
	// The same order under a new event id: the router plans the same dedupe
	// keys, and NOTIFY's duplicate window drops the deliveries.
	p.publish(t, "orders.created", "evt-2026-11-30-0001-retry", sample(t, "order.created.json", func(m map[string]any) {
		m["id"] = "evt-2026-11-30-0001-retry"
	}))
	p.settle(t)
	require.Len(t, p.mail(t), 2, "a republished event sends nothing new")
	_, metrics := p.get(t, "/metrics")
	require.Regexp(t, `herald_router_documents_total\{tenant="acme",type="purchase_order"\} 2`, metrics,
		"the router asked for the document twice; DOCS kept one request")
	require.Regexp(t, `herald_documents_total\{outcome="rendered",tenant="acme",type="purchase_order"\} 1`, metrics)

	// An edited order is a new revision: a new email per recipient.
	p.publish(t, "orders.updated", "evt-2026-11-30-0002", sample(t, "order.updated.json", nil))
	p.settle(t)
	all := p.mail(t)
	require.Len(t, all, 4)
	require.Equal(t, []string{
		"Pedido de compra PO-2026-0042 (revisión 2) de Frutas del Sur S.L.",
		"Pedido de compra PO-2026-0042 de Frutas del Sur S.L.",
		"Заказ на закупку PO-2026-0042 (редакция 2) от Frutas del Sur S.L.",
		"Заказ на закупку PO-2026-0042 от Frutas del Sur S.L.",
	}, subjects(all))
	for _, m := range byRecipient(all)["olga@zarya.example"] {
		if strings.Contains(m.Subject, "редакция 2") {
			require.Contains(t, m.Text, "Итого:       199,98\u00a0€", "the revision's totals")
		}
	}
}

func TestMalformedEventsAreDeadLetteredAndTheRestDelivered(t *testing.T) {
	t.Parallel()
	p := startPipeline(t)
	bad := []struct {
		name, reason string
		payload      []byte
	}{
		{"bad JSON", "malformed event: not valid JSON", []byte(`{"specversion":"1.0","id":`)},
		{"missing tenant", "tenant: is required", sample(t, "order.created.json", func(m map[string]any) {
			m["id"] = "evt-no-tenant"
			delete(m, "tenant")
		})},
		{"missing recipients", "data.recipients: at least one recipient is required", sample(t, "order.created.json", func(m map[string]any) {
			m["id"] = "evt-no-recipients"
			delete(m["data"].(map[string]any), "recipients")
		})},
	}
	for i, b := range bad {
		p.publish(t, "orders.created", "bad-"+string(rune('a'+i)), b.payload)
	}
	// An event type no route knows is acknowledged and counted, not an error.
	p.publish(t, "orders.cancelled", "evt-cancelled", sample(t, "order.created.json", func(m map[string]any) {
		m["id"], m["type"] = "evt-cancelled", "order.cancelled"
	}))
	// A good event after them all still goes out.
	p.publish(t, "orders.created", "evt-2026-11-30-0001", sample(t, "order.created.json", nil))
	p.settle(t)

	require.Len(t, p.mail(t), 2, "the good event is delivered to both recipients")

	// Each bad event is in the DLQ, byte for byte, with its reason. (The
	// router works on several events at once, so the order may differ.)
	entries := map[string]*jetstream.RawStreamMsg{}
	for _, e := range p.streamMessages(t, "DLQ") {
		entries[e.Header.Get(deadletter.HeaderMsgID)] = e
	}
	require.Len(t, entries, len(bad))
	sequences := map[uint64]string{}
	for i, b := range bad {
		e := entries["bad-"+string(rune('a'+i))]
		require.NotNil(t, e, b.name)
		require.Equal(t, "dlq.ORDERS.router", e.Subject)
		require.Equal(t, b.payload, e.Data, b.name)
		require.Contains(t, e.Header.Get(deadletter.HeaderReason), b.reason, b.name)
		require.Equal(t, "ORDERS", e.Header.Get(deadletter.HeaderStream))
		require.Equal(t, "router", e.Header.Get(deadletter.HeaderConsumer))
		require.Equal(t, "orders.created", e.Header.Get(deadletter.HeaderSubject))
		require.Equal(t, "1", e.Header.Get(deadletter.HeaderDeliveries))
		require.Equal(t, strconv.Itoa(i+1), e.Header.Get(deadletter.HeaderSequence))
		sequences[uint64(i+1)] = b.reason
	}

	// ...and terminated: the server's advisories, kept in ADVISORIES, carry
	// the reason and the original's stream sequence.
	advisories := p.streamMessages(t, "ADVISORIES")
	require.Len(t, advisories, len(bad))
	for _, a := range advisories {
		var adv struct {
			StreamSeq uint64 `json:"stream_seq"`
			Reason    string `json:"reason"`
		}
		require.NoError(t, json.Unmarshal(a.Data, &adv))
		require.Equal(t, "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.ORDERS.router", a.Subject)
		require.Contains(t, adv.Reason, sequences[adv.StreamSeq])
	}

	// The router counted what it saw.
	status, metrics := p.get(t, "/metrics")
	require.Equal(t, 200, status)
	require.Regexp(t, `herald_router_events_total\{outcome="invalid",tenant="",type="order.created"\} 1`, metrics)
	require.Regexp(t, `herald_router_events_total\{outcome="invalid",tenant="acme",type="order.created"\} 1`, metrics)
	require.Regexp(t, `herald_router_events_total\{outcome="invalid",tenant="",type=""\} 1`, metrics)
	require.Regexp(t, `herald_router_events_total\{outcome="unrouted",tenant="acme",type="order.cancelled"\} 1`, metrics)
	require.Regexp(t, `herald_router_events_total\{outcome="routed",tenant="acme",type="order.created"\} 1`, metrics)
	require.Regexp(t, `herald_deliveries_total\{channel="email",outcome="delivered",provider="maildir",tenant="acme"\} 2`, metrics)

	status, ready := p.get(t, "/readyz")
	require.Equal(t, 200, status, ready)
	require.JSONEq(t, `{"status":"ready","checks":{"nats":"ok","redis":"ok","streams":"ok","stores":"ok","history":"ok"}}`, ready)
}
