package documents_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// waiting is a render request with n deliveries, for event id.
func waiting(n int, id string) documents.Request {
	req := documents.Request{Tenant: "acme", Type: "invoice", Object: documents.ObjectName("acme", "PO-1", "invoice", 1),
		Event: notification.EventRef{ID: id}}
	for i := range n {
		key := fmt.Sprintf("acme:PO-1:1:invoice:email:c%04d@example.com", i)
		req.Deliveries = append(req.Deliveries, notification.Delivery{ID: notification.ID(key), DedupeKey: key,
			Tenant: "acme", Channel: event.ChannelEmail, Event: notification.EventRef{ID: id}})
	}
	return req
}

func TestMsgIDNamesTheDocumentAndItsDeliveries(t *testing.T) {
	t.Parallel()
	req := waiting(3, "evt-1")
	id := documents.MsgID(req)
	require.Regexp(t, `^render:acme/PO-1/invoice-r1\.pdf:[0-9a-f]{32}$`, id)

	republished := waiting(3, "evt-2")
	republished.Deliveries[0], republished.Deliveries[2] = republished.Deliveries[2], republished.Deliveries[0]
	require.Equal(t, id, documents.MsgID(republished), "the same deliveries, in any order, from any event")
	require.NotEqual(t, id, documents.MsgID(waiting(4, "evt-1")), "another recipient is another request")
	require.NotEqual(t, id, documents.MsgID(waiting(2, "evt-1")))
}

func TestSplitFitsEachPartAndSplitsTheSameDeliveriesTheSameWay(t *testing.T) {
	t.Parallel()
	const maxPayload = 64 << 10
	parts, err := documents.Split(waiting(1000, "evt-1"), maxPayload)
	require.NoError(t, err)
	require.Greater(t, len(parts), 1)
	seen := map[string]bool{}
	for _, p := range parts {
		body, err := json.Marshal(p)
		require.NoError(t, err)
		require.NoError(t, documents.Fit("part", body, maxPayload))
		require.Equal(t, "acme/PO-1/invoice-r1.pdf", p.Object)
		for _, d := range p.Deliveries {
			require.False(t, seen[d.DedupeKey], d.DedupeKey)
			seen[d.DedupeKey] = true
		}
	}
	require.Len(t, seen, 1000)

	// Republished under a longer event id: every delivery is larger, yet
	// the parts hold the same deliveries and keep their ids.
	again, err := documents.Split(waiting(1000, "evt-1-republished"), maxPayload)
	require.NoError(t, err)
	require.Len(t, again, len(parts))
	for i := range parts {
		require.Equal(t, documents.MsgID(parts[i]), documents.MsgID(again[i]))
	}

	small, err := documents.Split(waiting(3, "evt-1"), maxPayload)
	require.NoError(t, err)
	require.Len(t, small, 1, "what fits is one request")
	require.Equal(t, waiting(3, "evt-1"), small[0])
}

func TestSplitRefusesADeliveryThatCanNeverFit(t *testing.T) {
	t.Parallel()
	req := waiting(2, "evt-1")
	body, err := json.Marshal(documents.Request{Tenant: req.Tenant, Type: req.Type, Object: req.Object, Event: req.Event,
		Deliveries: req.Deliveries[:1]})
	require.NoError(t, err)
	limit := int64(len(body)) + documents.Headroom

	parts, err := documents.Split(req, limit)
	require.NoError(t, err)
	require.Len(t, parts, 2, "exactly room for one delivery each")

	_, err = documents.Split(req, limit-1)
	require.ErrorIs(t, err, documents.ErrTooLarge)
	require.ErrorContains(t, err, "render request acme/PO-1/invoice-r1.pdf with a single delivery is ")
}
