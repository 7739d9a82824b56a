package quota_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/quota"
)

// An hourly cap of 10, taken from by two replicas, each with its own
// connection: 6, then 4 more, are taken; one more is refused whole,
// counting nothing, and told what is left and when the hour ends; what is
// given back can be taken again; the next hour starts at zero.
func TestAnHourlyCapIsSharedAndAllOrNone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	nc, err := nats.Connect(b.n.Server.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	replicas := []*quota.Counter{b.counter, quota.New(js)}
	at := time.Date(2026, 12, 1, 10, 42, 0, 0, time.UTC)
	take := func(replica, n int) quota.Taken {
		t.Helper()
		got, err := replicas[replica].TakeHourly(ctx, "acme", "redelivered", int64(n), 10, at)
		require.NoError(t, err)
		return got
	}

	got := take(0, 6)
	require.True(t, got.OK)
	require.EqualValues(t, 4, got.Remaining)
	require.Equal(t, time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC), got.Reset)
	lastFour := take(1, 4)
	require.True(t, lastFour.OK, "the other replica sees the same count")
	require.Zero(t, lastFour.Remaining)

	got = take(0, 1)
	require.False(t, got.OK)
	require.Zero(t, got.Remaining)
	require.EqualValues(t, 10, got.Max)
	total, err := b.counter.Get(ctx, "quota.acme.redelivered.2026-12-01T10")
	require.NoError(t, err)
	require.EqualValues(t, 10, total, "a refusal counts nothing")

	require.NoError(t, replicas[1].GiveBack(ctx, lastFour))
	got = take(0, 5)
	require.False(t, got.OK, "five do not fit in the four given back")
	require.EqualValues(t, 4, got.Remaining)
	require.True(t, take(1, 4).OK)

	at = at.Add(time.Hour)
	got = take(0, 10)
	require.True(t, got.OK, "a new hour, a new count")
}
