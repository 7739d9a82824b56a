package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/heraldhq/herald/shared/provider"
)

// scripted answers each Send with the next of its results.
type scripted struct {
	receipt provider.Receipt
	err     error
	calls   int
}

func (s *scripted) Send(context.Context) (provider.Receipt, error) {
	s.calls++
	return s.receipt, s.err
}

func TestChainTry(t *testing.T) {
	t.Parallel()
	ok := func(id string) *scripted { return &scripted{receipt: provider.Receipt{MessageID: id}} }
	transient := func(msg string) *scripted { return &scripted{err: errors.New(msg)} }
	permanent := func(msg string) *scripted { return &scripted{err: provider.Permanentf("%s", msg)} }
	tests := []struct {
		name      string
		providers []*scripted
		calls     []int
		provider  string // who accepted
		permanent bool
		errText   string
		failures  string // when accepted: what failed before
	}{
		{name: "first accepts", providers: []*scripted{ok("a-1"), ok("b-1")}, calls: []int{1, 0}, provider: "p0", failures: "<nil>"},
		{name: "transient moves to the next", providers: []*scripted{transient("503"), ok("b-1")}, calls: []int{1, 1}, provider: "p1",
			failures: "p0: 503"},
		{name: "accepted without a message id is a failure", providers: []*scripted{ok(""), ok("b-1")}, calls: []int{1, 1}, provider: "p1",
			failures: "p0: accepted without a message id"},
		{name: "all transient", providers: []*scripted{transient("503"), transient("timeout")}, calls: []int{1, 1},
			errText: "p0: 503\np1: timeout"},
		{name: "permanent stops the pass", providers: []*scripted{permanent("400 invalid address"), ok("b-1")}, calls: []int{1, 0},
			permanent: true, errText: "p0: permanent: 400 invalid address"},
		{name: "permanent after a transient", providers: []*scripted{transient("503"), permanent("401 bad key")}, calls: []int{1, 1},
			permanent: true, errText: "p0: 503\np1: permanent: 401 bad key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls []Call
			for i, p := range tt.providers {
				calls = append(calls, Call{Provider: "p" + string(rune('0'+i)), Send: p.Send})
			}
			result := chain{}.send(context.Background(), calls)
			for i, p := range tt.providers {
				require.Equal(t, tt.calls[i], p.calls, "calls to p%d", i)
			}
			if tt.errText != "" {
				require.False(t, result.Accepted)
				require.EqualError(t, result.Failures, tt.errText)
				require.Equal(t, tt.permanent, provider.IsPermanent(result.Failures))
				return
			}
			require.True(t, result.Accepted)
			require.Equal(t, tt.provider, result.Receipt.Provider)
			require.Equal(t, tt.failures, fmt.Sprint(result.Failures))
		})
	}
}

// A provider that keeps failing transiently is skipped, without being
// called, once its circuit opens; the chain moves on to the next at once,
// and after the cool-down one probe closes the circuit again.
func TestBreakerSkipsAProviderThatKeepsFailing(t *testing.T) {
	t.Parallel()
	b, err := newBreakers("email", 3, 50*time.Millisecond, slog.New(slog.DiscardHandler), noop.NewMeterProvider(), func(p string) string { return p })
	require.NoError(t, err)
	var noted []string // what the process shares for the console
	b.note = func(channel, breaker, state string) { noted = append(noted, channel+" "+breaker+" "+state) }
	c := chain{breakers: b}
	down, backup := &scripted{err: errors.New("503")}, &scripted{receipt: provider.Receipt{MessageID: "b"}}
	calls := []Call{{Provider: "down", Send: down.Send}, {Provider: "backup", Send: backup.Send}}
	for range 3 {
		require.True(t, c.send(context.Background(), calls).Accepted)
	}
	require.Equal(t, 3, down.calls)

	result := c.send(context.Background(), calls)
	require.True(t, result.Accepted)
	require.Equal(t, 3, down.calls, "open: skipped, not called")
	require.ErrorContains(t, result.Failures, "down: skipped: its circuit is open after 3 failures in a row")
	require.False(t, provider.IsAmbiguous(result.Failures), "nothing was sent")

	// A permanent refusal says nothing of the provider's health.
	refusing := &scripted{err: provider.Permanentf("invalid address")}
	for range 5 {
		c.send(context.Background(), []Call{{Provider: "refusing", Send: refusing.Send}})
	}
	require.Equal(t, 5, refusing.calls)

	time.Sleep(60 * time.Millisecond) // the cool-down: a probe goes through
	down.err, down.receipt = nil, provider.Receipt{MessageID: "d"}
	require.Equal(t, "down", c.send(context.Background(), calls).Receipt.Provider)
	require.Equal(t, 4, down.calls)
	require.Equal(t, []string{"email down open", "email down half-open", "email down closed"}, noted)
}
