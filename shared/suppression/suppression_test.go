package suppression_test

import (
	"testing"

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
