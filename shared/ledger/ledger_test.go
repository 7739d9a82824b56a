package ledger_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

const key = "acme:PO-2026-0042:1:purchase_order:email:olga+orders@zarya.example"

func TestKeyIsAValidKVKey(t *testing.T) {
	t.Parallel()
	k := ledger.Key("acme", key)
	require.Regexp(t, regexp.MustCompile(`^acme\.[0-9a-f]{64}$`), k)
	require.NotEqual(t, k, ledger.Key("acme", key+"x"))
}

func TestPutGetAndConflicts(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	l, err := ledger.Open(ctx, n.JS)
	require.NoError(t, err)

	fresh, err := l.Get(ctx, "acme", key)
	require.NoError(t, err)
	require.False(t, fresh.Exists())
	require.Equal(t, key, fresh.DedupeKey)

	fresh.State = ledger.Retrying
	fresh.Record(ledger.Attempt{Time: time.Now(), Delivery: 1, Error: "ses: HTTP 503"})
	require.NoError(t, l.Put(ctx, &fresh))
	require.True(t, fresh.Exists())

	// A second reader of the empty key loses the race to create it.
	racer := ledger.Entry{DedupeKey: key, Tenant: "acme", State: ledger.Delivered}
	require.ErrorIs(t, l.Put(ctx, &racer), ledger.ErrConflict)

	// Two readers of the same revision: the second writer conflicts.
	a, err := l.Get(ctx, "acme", key)
	require.NoError(t, err)
	b, err := l.Get(ctx, "acme", key)
	require.NoError(t, err)
	a.State, a.Provider, a.ProviderMessageID = ledger.Delivered, "sendgrid", "sg-1"
	a.Record(ledger.Attempt{Time: time.Now(), Delivery: 2, Provider: "sendgrid"})
	require.NoError(t, l.Put(ctx, &a))
	b.State = ledger.Failed
	require.ErrorIs(t, l.Put(ctx, &b), ledger.ErrConflict)

	got, err := l.Get(ctx, "acme", key)
	require.NoError(t, err)
	require.Equal(t, ledger.Delivered, got.State)
	require.Equal(t, "sg-1", got.ProviderMessageID)
	require.Equal(t, 2, got.Tries)
	require.Len(t, got.Attempts, 2)
	require.Equal(t, "ses: HTTP 503", got.Attempts[0].Error)
}

func TestAttemptsAreBounded(t *testing.T) {
	t.Parallel()
	var e ledger.Entry
	for i := range 30 {
		e.Record(ledger.Attempt{Delivery: uint64(i + 1)})
	}
	require.Equal(t, 30, e.Tries)
	require.Len(t, e.Attempts, ledger.MaxAttempts)
	require.Equal(t, uint64(30), e.Attempts[len(e.Attempts)-1].Delivery)
}
