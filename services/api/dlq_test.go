package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// deadLetter writes a DLQ entry for message seq of stream, as a consumer
// giving up on it does.
func (b *bundle) deadLetter(t *testing.T, stream, consumer string, seq uint64, subject, data, reason string) {
	t.Helper()
	original := &jetstream.RawStreamMsg{Subject: subject, Sequence: seq, Data: []byte(data),
		Header: nats.Header{"Ce-Type": {"order.created"}}}
	require.NoError(t, deadletter.Copy(heraldtest.Context(t), b.nats.JS, stream, consumer, original, 3, reason))
}

func TestTheDLQIsListedAsTheCLIListsIt(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	b.deadLetter(t, "ORDERS", "router", 4, "orders.created", `{"tenant":"acme"}`, "invalid event: no id")
	b.deadLetter(t, "ORDERS", "router", 5, "orders.created", `{"tenant":"globex"}`, `unknown tenant "globex"`)
	b.deadLetter(t, "NOTIFY", "email-normal", 9, "notify.email.normal.acme", `{"tenant":"acme"}`, "ses: address rejected")

	for name, c := range map[string]struct {
		query string
		seqs  []uint64
		total int
	}{
		"everything":          {"", []uint64{1, 2, 3}, 3},
		"a stream, cut":       {"?stream=ORDERS&limit=1", []uint64{1}, 2},
		"a stream's consumer": {"?stream=NOTIFY&consumer=email-normal", []uint64{3}, 1},
		"a tenant":            {"?tenant=acme", []uint64{1, 3}, 2},
		"a reason":            {"?reason=UNKNOWN%20tenant", []uint64{2}, 1},
	} {
		got := b.do(t, http.MethodGet, "/v1/dlq"+c.query, adminKey, nil)
		require.Equal(t, http.StatusOK, got.status, "%s: %s", name, got.body)
		var page struct {
			Entries []struct {
				Seq uint64 `json:"seq"`
			} `json:"entries"`
			Total int `json:"total"`
		}
		require.NoError(t, json.Unmarshal([]byte(got.body), &page))
		var seqs []uint64
		for _, e := range page.Entries {
			seqs = append(seqs, e.Seq)
		}
		require.Equal(t, c.seqs, seqs, name)
		require.Equal(t, c.total, page.Total, name)
	}
	got := b.do(t, http.MethodGet, "/v1/dlq?consumer=router", adminKey, nil)
	require.Equal(t, http.StatusUnprocessableEntity, got.status, got.body)
	require.Contains(t, got.body, "consumer needs stream")
}

func TestADeadLetterIsShownAndRedriven(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	b.deadLetter(t, "ORDERS", "router", 4, "orders.created", `{"tenant":"acme","id":"evt-1"}`, `tenant "acme" is suspended`)

	shown := b.do(t, http.MethodGet, "/v1/dlq/1", adminKey, nil)
	require.Equal(t, http.StatusOK, shown.status, shown.body)
	require.JSONEq(t, `{"tenant":"acme","id":"evt-1"}`, jsonField(t, shown.body, "payload"))
	require.Contains(t, shown.body, `"subject":"orders.created","original_seq":4,"deliveries":3,"tenant":"acme"`)
	require.Contains(t, jsonField(t, shown.body, "headers"), `"Ce-Type":["order.created"]`)

	redriven := b.do(t, http.MethodPost, "/v1/dlq/1/redrive", adminKey, nil)
	require.Equal(t, http.StatusAccepted, redriven.status, redriven.body)
	require.Contains(t, redriven.body, `"msg_id":"redrive:1:1","count":1`)
	orders := heraldtest.StreamMessages(t, b.nats.JS, "ORDERS")
	require.Len(t, orders, 1)
	require.Equal(t, "orders.created", orders[0].Subject)
	require.Equal(t, "redrive:1:1", orders[0].Header.Get("Nats-Msg-Id"))
	require.JSONEq(t, `{"tenant":"acme","id":"evt-1"}`, string(orders[0].Data))
	require.Contains(t, b.do(t, http.MethodGet, "/v1/dlq/1", adminKey, nil).body, `"msg_id":"redrive:1:1","count":1`)

	for _, path := range []string{"/v1/dlq/2", "/v1/dlq/2/redrive"} {
		method := http.MethodGet
		if path == "/v1/dlq/2/redrive" {
			method = http.MethodPost
		}
		got := b.do(t, method, path, adminKey, nil)
		require.Equal(t, http.StatusNotFound, got.status, "%s: %s", path, got.body)
		require.Contains(t, got.body, "no dead letter 2")
	}
	require.Len(t, heraldtest.StreamMessages(t, b.nats.JS, "ORDERS"), 1)
}

// An entry too large to publish again (kept while the server allowed
// larger messages) is a conflict to resolve by hand, not an outage to
// retry: 409, saying why, and nothing is published.
func TestARedriveOverMaxPayloadIsAConflict(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	b.deadLetter(t, "ORDERS", "router", 4, "orders.created", strings.Repeat("x", int(b.nats.Conn.MaxPayload())+1), "too big")
	got := b.do(t, http.MethodPost, "/v1/dlq/1/redrive", adminKey, nil)
	require.Equal(t, http.StatusConflict, got.status, got.body)
	require.Contains(t, got.body, "max_payload")
	require.Empty(t, heraldtest.StreamMessages(t, b.nats.JS, "ORDERS"))
}
