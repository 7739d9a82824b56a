package circuits_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/circuits"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// Two processes' changes are listed side by side; a breaker's latest state
// replaces its earlier one; Close writes what was queued.
func TestBoardsShareTheirBreakers(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	none, err := circuits.List(ctx, n.JS)
	require.NoError(t, err)
	require.Empty(t, none)

	a, err := circuits.Open(ctx, n.JS, "worker-a", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	b, err := circuits.Open(ctx, n.JS, "worker-b", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	a.Note("email", "ses", "open")
	a.Note("email", "ses", "half-open")
	b.Note("email", "acme/sendgrid", "open")
	a.Close()
	b.Close()

	list, err := circuits.List(ctx, n.JS)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, circuits.State{Channel: "email", Provider: "acme/sendgrid", Process: "worker-b", State: "open", Since: list[0].Since}, list[0])
	require.Equal(t, circuits.State{Channel: "email", Provider: "ses", Process: "worker-a", State: "half-open", Since: list[1].Since}, list[1])
	require.WithinDuration(t, time.Now(), list[1].Since, 10*time.Second)
}
