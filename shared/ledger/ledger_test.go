package ledger_test

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/report"
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
	fresh.Order, fresh.Document, fresh.Recipient = "PO-2026-0042", "purchase_order", "olga+orders@zarya.example"
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
	require.Equal(t, []string{"PO-2026-0042", "purchase_order", "olga+orders@zarya.example"}, []string{got.Order, got.Document, got.Recipient},
		"kept by every writer that read the entry first")
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

func open(t *testing.T) (*ledger.Ledger, jetstream.KeyValue) {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	l, err := ledger.Open(heraldtest.Context(t), n.JS)
	require.NoError(t, err)
	idx, err := n.JS.KeyValue(heraldtest.Context(t), ledger.RetryBucket)
	require.NoError(t, err)
	return l, idx
}

// indexed lists the ledger keys (tenant.digest) the retry index names,
// less the index's own mark of completeness.
func indexed(t *testing.T, idx jetstream.KeyValue) []string {
	t.Helper()
	keys, err := idx.Keys(heraldtest.Context(t))
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	require.NoError(t, err)
	if keys = slices.DeleteFunc(keys, func(k string) bool { return !strings.Contains(k, ".") }); len(keys) == 0 {
		return nil
	}
	return keys
}

func retryable(t *testing.T, l *ledger.Ledger) []string {
	t.Helper()
	var got []string
	require.NoError(t, l.EachRetryable(heraldtest.Context(t), func(e ledger.Entry) bool {
		got = append(got, e.DedupeKey)
		return true
	}))
	return got
}

// The retry index names an entry exactly while it is failed-but-retryable.
func TestRetryIndexFollowsTheEntry(t *testing.T) {
	t.Parallel()
	l, idx := open(t)
	ctx := heraldtest.Context(t)
	e, err := l.Get(ctx, "acme", key)
	require.NoError(t, err)
	steps := []struct {
		state     ledger.State
		retryable bool
		indexed   bool
	}{
		{ledger.Sending, false, false},
		{ledger.Retrying, true, false},
		{ledger.Failed, true, true},    // out of tries
		{ledger.Failed, true, true},    // written again as is: stays
		{ledger.Retrying, true, false}, // resent by the sweep
		{ledger.Failed, true, true},
		{ledger.Sending, false, false}, // redriven, claimed
		{ledger.Delivered, false, false},
	}
	for i, s := range steps {
		e.State, e.Retryable = s.state, s.retryable
		require.NoError(t, l.Put(ctx, &e), "step %d", i)
		want := []string(nil)
		if s.indexed {
			want = []string{ledger.Key("acme", key)}
		}
		require.Equal(t, want, indexed(t, idx), "step %d: %s", i, s.state)
		if s.indexed {
			require.Equal(t, []string{key}, retryable(t, l), "step %d", i)
		}
		// Each step as the next writer sees it: read back from the ledger.
		e, err = l.Get(ctx, "acme", key)
		require.NoError(t, err)
	}
}

// Index keys naming no retryable entry are dropped once they are old
// enough that no Put can still be between its two writes.
func TestEachRetryableDropsStaleIndexKeys(t *testing.T) {
	t.Parallel()
	l, idx := open(t)
	ctx := heraldtest.Context(t)
	delivered := ledger.Entry{DedupeKey: key, Tenant: "acme", State: ledger.Delivered}
	require.NoError(t, l.Put(ctx, &delivered))
	for _, k := range []string{ledger.Key("acme", key), ledger.Key("acme", "never written")} {
		_, err := idx.Put(ctx, k, nil)
		require.NoError(t, err)
	}

	require.Empty(t, retryable(t, l))
	require.Len(t, indexed(t, idx), 2, "fresh keys may belong to a Put under way: kept")

	ledger.SetSettle(l, 0)
	require.Empty(t, retryable(t, l))
	require.Empty(t, indexed(t, idx))
}

// Retire takes an entry out of the index, unless it was indexed again
// since the sweep read it.
func TestRetireIsRevisionChecked(t *testing.T) {
	t.Parallel()
	l, idx := open(t)
	ctx := heraldtest.Context(t)
	e := ledger.Entry{DedupeKey: key, Tenant: "acme", State: ledger.Failed, Retryable: true}
	require.NoError(t, l.Put(ctx, &e))
	read, err := l.Get(ctx, "acme", key)
	require.NoError(t, err)
	require.ErrorContains(t, l.Retire(ctx, read), "not read from delivery_retries")

	var seen []ledger.Entry
	require.NoError(t, l.EachRetryable(ctx, func(e ledger.Entry) bool { seen = append(seen, e); return true }))
	require.Len(t, seen, 1)
	_, err = idx.Put(ctx, ledger.Key("acme", key), nil) // a newer failure indexed it again
	require.NoError(t, err)
	require.NoError(t, l.Retire(ctx, seen[0]))
	require.Len(t, indexed(t, idx), 1, "the newer failure stays indexed")

	seen = nil
	require.NoError(t, l.EachRetryable(ctx, func(e ledger.Entry) bool { seen = append(seen, e); return true }))
	require.NoError(t, l.Retire(ctx, seen[0]))
	require.Empty(t, indexed(t, idx))
	got, err := l.Get(ctx, "acme", key)
	require.NoError(t, err)
	require.Equal(t, ledger.Failed, got.State, "retired from the index, still failed")
}

// An entry the sweep cannot read does not hide the others from it.
func TestEachRetryableSkipsUnreadableEntries(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	l, err := ledger.Open(ctx, n.JS)
	require.NoError(t, err)
	for _, k := range []string{"a", "b"} {
		e := ledger.Entry{DedupeKey: k, Tenant: "acme", State: ledger.Failed, Retryable: true}
		require.NoError(t, l.Put(ctx, &e))
	}
	kv, err := n.JS.KeyValue(ctx, ledger.Bucket)
	require.NoError(t, err)
	_, err = kv.Put(ctx, ledger.Key("acme", "a"), []byte("{not json"))
	require.NoError(t, err)

	var got []string
	err = l.EachRetryable(ctx, func(e ledger.Entry) bool { got = append(got, e.DedupeKey); return true })
	require.ErrorContains(t, err, "ledger: entry "+ledger.Key("acme", "a"))
	require.Equal(t, []string{"b"}, got)
}

// Entries an older Herald left failed-but-retryable, before the index
// existed, are found once by a full scan; from then on only the index is read.
func TestEachRetryableIndexesWhatAnOlderHeraldLeft(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	kv, err := n.JS.KeyValue(ctx, ledger.Bucket)
	require.NoError(t, err)
	_, err = kv.Put(ctx, ledger.Key("acme", key), []byte(`{"dedupe_key":"`+key+`","tenant":"acme","state":"failed","retryable":true}`))
	require.NoError(t, err)
	l, err := ledger.Open(ctx, n.JS)
	require.NoError(t, err)

	require.Equal(t, []string{key}, retryable(t, l))
	idx, err := n.JS.KeyValue(ctx, ledger.RetryBucket)
	require.NoError(t, err)
	require.Equal(t, []string{ledger.Key("acme", key)}, indexed(t, idx))

	// Left behind again, with the index complete: not looked for.
	_, err = kv.Put(ctx, ledger.Key("acme", "other"), []byte(`{"dedupe_key":"other","tenant":"acme","state":"failed","retryable":true}`))
	require.NoError(t, err)
	require.Equal(t, []string{key}, retryable(t, l))
}

// The write that settles an entry is its outcome; claims before it, and
// writes after it in the same state (a provider's report kept, a resend
// counted), are not. Failing again after a resend is a new outcome.
func TestOnlyTheSettlingWriteIsAnOutcome(t *testing.T) {
	t.Parallel()
	l, _ := open(t)
	ctx := heraldtest.Context(t)
	var outcomes []bool
	put := func(e *ledger.Entry) {
		t.Helper()
		require.NoError(t, l.Put(ctx, e))
		read, err := l.Get(ctx, "acme", "k1")
		require.NoError(t, err)
		require.Equal(t, e.Outcome(), read.Outcome(), "as written, so as read")
		outcomes = append(outcomes, read.Outcome())
	}
	e := ledger.Entry{DedupeKey: "k1", Tenant: "acme", NotificationID: "ntf_1", State: ledger.Sending}
	put(&e) // claimed
	e.State, e.Retryable = ledger.Failed, true
	put(&e) // out of tries
	e.Resends++
	put(&e) // the sweep resends it
	e.State = ledger.Sending
	put(&e) // claimed again
	e.State, e.Retryable = ledger.Delivered, false
	put(&e)
	delivered := e.SettledAt
	e.Reports = append(e.Reports, report.Report{Provider: "ses", EventID: "ev1", Kind: report.Delivered})
	put(&e) // the provider's report, kept
	require.Equal(t, []bool{false, true, false, false, true, false}, outcomes)
	require.Equal(t, delivered, e.SettledAt, "settled when delivered, not when the report came")

	created := ledger.Entry{DedupeKey: "k2", Tenant: "acme", NotificationID: "ntf_2", State: ledger.Suppressed}
	require.NoError(t, l.Put(ctx, &created))
	require.True(t, created.Outcome(), "settled by the write that created it")
}
