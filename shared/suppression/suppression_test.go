package suppression_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/suppression"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// An address is suppressed per tenant, compared without case or spaces,
// listed newest first, and lifted.
func TestAddressesAreSuppressedPerTenantUntilRemoved(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	s, err := suppression.Open(ctx, n.JS)
	require.NoError(t, err)

	e, err := s.Add(ctx, suppression.Entry{Tenant: "acme", Address: " Buyer@Example.com ", Reason: suppression.HardBounce,
		Detail: "550 5.1.1 user unknown", Source: "sendgrid:ev-1"})
	require.NoError(t, err)
	require.Equal(t, "buyer@example.com", e.Address)
	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Address: "+15551234567", Reason: suppression.Manual, Source: "cli"})
	require.NoError(t, err)

	got, err := s.Get(ctx, "acme", "BUYER@example.com")
	require.NoError(t, err)
	require.Equal(t, suppression.HardBounce, got.Reason)
	require.Equal(t, "550 5.1.1 user unknown", got.Detail)
	_, err = s.Get(ctx, "globex", "buyer@example.com")
	require.ErrorIs(t, err, suppression.ErrNotFound, "another tenant's suppression is not this one's")

	list, err := s.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "+15551234567", list[0].Address, "newest first")
	other, err := s.List(ctx, "globex")
	require.NoError(t, err)
	require.Empty(t, other)

	require.NoError(t, s.Remove(ctx, "acme", "buyer@example.com"))
	_, err = s.Get(ctx, "acme", "buyer@example.com")
	require.ErrorIs(t, err, suppression.ErrNotFound)
	require.ErrorIs(t, s.Remove(ctx, "acme", "buyer@example.com"), suppression.ErrNotFound)
	list, err = s.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 1)
}

// An entry needs a tenant, an address and a known reason, and says which
// field is wrong.
func TestAnInvalidEntryIsRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	s, err := suppression.Open(ctx, n.JS)
	require.NoError(t, err)
	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Address: " ", Reason: suppression.Manual})
	require.ErrorContains(t, err, "address")
	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Address: "a@example.com", Reason: "bounced"})
	require.ErrorContains(t, err, `reason: "bounced" is not one of hard_bounce, complaint, manual`)
}

// The cache answers as the store does, from memory: what was suppressed
// before it began, and what is added or lifted after, within moments.
func TestTheCacheFollowsTheBucket(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	s, err := suppression.Open(ctx, n.JS)
	require.NoError(t, err)
	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Address: "old@example.com", Reason: suppression.Complaint})
	require.NoError(t, err)
	c, err := suppression.Watch(ctx, n.JS)
	require.NoError(t, err)
	t.Cleanup(c.Stop)

	e, err := c.Get(ctx, "acme", "OLD@example.com")
	require.NoError(t, err)
	require.Equal(t, suppression.Complaint, e.Reason)
	_, err = c.Get(ctx, "globex", "old@example.com")
	require.ErrorIs(t, err, suppression.ErrNotFound)

	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Address: "new@example.com", Reason: suppression.HardBounce})
	require.NoError(t, err)
	require.NoError(t, s.Remove(ctx, "acme", "old@example.com"))
	require.Eventually(t, func() bool {
		_, errNew := c.Get(ctx, "acme", "new@example.com")
		_, errOld := c.Get(ctx, "acme", "old@example.com")
		return errNew == nil && errors.Is(errOld, suppression.ErrNotFound)
	}, 5*time.Second, 5*time.Millisecond)
}
