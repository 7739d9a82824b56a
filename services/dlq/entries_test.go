package dlq_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// deadLetter writes an entry for a message of stream seq on subject.
func (b *bundle) deadLetter(t *testing.T, stream string, seq uint64, subject string, data []byte, header nats.Header) {
	t.Helper()
	original := &jetstream.RawStreamMsg{Subject: subject, Sequence: seq, Data: data, Header: header}
	require.NoError(t, deadletter.Copy(heraldtest.Context(t), b.nats.JS, stream, "worker", original, 1, "invalid"))
}

func (b *bundle) entries(t *testing.T) *dlq.Entries {
	t.Helper()
	x, err := dlq.OpenEntries(heraldtest.Context(t), b.nats.JS)
	require.NoError(t, err)
	return x
}

// A list cut at its limit says how many entries the filter selects in all,
// whether the stream can count them (a subject filter) or they must be read
// (a tenant).
func TestListSaysHowManyEntriesItLeftOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 5 {
		tenant := "acme"
		if i%2 == 1 {
			tenant = "globex"
		}
		b.deadLetter(t, "ORDERS", uint64(i+1), "orders.created", []byte(fmt.Sprintf(`{"tenant":%q}`, tenant)), nil)
	}
	b.deadLetter(t, "NOTIFY", 1, "notify.email.normal.acme", []byte(`{"tenant":"acme"}`), nil)
	x := b.entries(t)
	ctx := heraldtest.Context(t)

	for _, tc := range []struct {
		name          string
		filter        dlq.Filter
		limit         int
		listed, total int
	}{
		{"all, cut", dlq.Filter{}, 2, 2, 6},
		{"one stream, cut", dlq.Filter{Stream: "ORDERS"}, 4, 4, 5},
		{"a tenant, cut", dlq.Filter{Tenant: "acme"}, 1, 1, 4},
		{"a tenant, in full", dlq.Filter{Stream: "ORDERS", Tenant: "globex"}, 10, 2, 2},
		{"no limit", dlq.Filter{}, 0, 6, 6},
	} {
		list, total, err := x.List(ctx, tc.filter, tc.limit)
		require.NoError(t, err, tc.name)
		require.Len(t, list, tc.listed, tc.name)
		require.Equal(t, tc.total, total, tc.name)
	}
}

// An entry whose payload was too large for it reads, redrives and purges
// as any other: the payload comes from, and goes with, its object.
func TestAnEntryWithAKeptPayloadIsReadRedrivenAndPurged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	data := padded(int(b.nats.Conn.MaxPayload()) - 2048)
	b.deadLetter(t, "ORDERS", 7, "orders.created", data, nats.Header{"Ce-Type": {"order.created"}})
	x := b.entries(t)
	e, err := x.Get(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, "ORDERS/7", e.PayloadObject)
	require.Empty(t, e.Data)
	got, err := x.Payload(ctx, e)
	require.NoError(t, err)
	require.Equal(t, data, got)

	_, err = x.Redrive(ctx, e)
	require.NoError(t, err)
	orders := heraldtest.StreamMessages(t, b.nats.JS, "ORDERS")
	require.Len(t, orders, 1)
	require.Equal(t, data, orders[0].Data, "the original bytes, back on their subject")
	require.Equal(t, "orders.created", orders[0].Subject, "not the DLQ's subject, which a read by sequence names in Nats-Subject")
	require.Equal(t, "order.created", orders[0].Header.Get("Ce-Type"))

	require.NoError(t, x.Delete(ctx, e))
	_, err = x.Get(ctx, 1)
	require.ErrorContains(t, err, "no entry 1")
	store, err := b.nats.JS.ObjectStore(ctx, deadletter.PayloadBucket)
	require.NoError(t, err)
	_, err = store.GetInfo(ctx, "ORDERS/7")
	require.ErrorIs(t, err, jetstream.ErrObjectNotFound, "purged with its entry")
}

// A payload larger than max_payload (kept when the server allowed more)
// cannot be published again as is: redrive says so, and publishes nothing.
func TestRedriveRefusesAPayloadOverMaxPayload(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	b.deadLetter(t, "ORDERS", 8, "orders.created", padded(int(b.nats.Conn.MaxPayload())+1), nil)
	x := b.entries(t)
	e, err := x.Get(ctx, 1)
	require.NoError(t, err)
	_, err = x.Redrive(ctx, e)
	require.ErrorIs(t, err, dlq.ErrTooLarge)
	require.ErrorContains(t, err, "entry 1 cannot be redriven")
	require.ErrorContains(t, err, "over the server's max_payload")
	require.Empty(t, heraldtest.StreamMessages(t, b.nats.JS, "ORDERS"))
	e, err = x.Get(ctx, 1)
	require.NoError(t, err)
	require.Nil(t, e.Redriven)
}
