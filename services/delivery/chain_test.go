package delivery

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/provider"
)

// scripted answers each Send with the next of its results.
type scripted struct {
	receipt provider.Receipt
	err     error
	calls   int
}

func (s *scripted) Send(context.Context, email.Message) (provider.Receipt, error) {
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
			var c chain
			for i, p := range tt.providers {
				c.providers = append(c.providers, Provider{Name: "p" + string(rune('0'+i)), Provider: p})
			}
			result := c.send(context.Background(), email.Message{})
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
