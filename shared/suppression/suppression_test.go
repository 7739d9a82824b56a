package suppression_test

import (
	"context"
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

	got, err := s.Get(ctx, "acme", "BUYER@example.com", "")
	require.NoError(t, err)
	require.Equal(t, suppression.HardBounce, got.Reason)
	require.Equal(t, "550 5.1.1 user unknown", got.Detail)
	_, err = s.Get(ctx, "globex", "buyer@example.com", "")
	require.ErrorIs(t, err, suppression.ErrNotFound, "another tenant's suppression is not this one's")

	list, err := s.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "+15551234567", list[0].Address, "newest first")
	other, err := s.List(ctx, "globex")
	require.NoError(t, err)
	require.Empty(t, other)

	require.NoError(t, s.Remove(ctx, "acme", "buyer@example.com", ""))
	_, err = s.Get(ctx, "acme", "buyer@example.com", "")
	require.ErrorIs(t, err, suppression.ErrNotFound)
	require.ErrorIs(t, s.Remove(ctx, "acme", "buyer@example.com", ""), suppression.ErrNotFound)
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
	require.ErrorContains(t, err, `reason: "bounced" is not one of hard_bounce, complaint, manual, unsubscribed`)
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

	e, err := c.Blocks(ctx, "acme", "OLD@example.com", "")
	require.NoError(t, err)
	require.Equal(t, suppression.Complaint, e.Reason)
	_, err = c.Blocks(ctx, "globex", "old@example.com", "")
	require.ErrorIs(t, err, suppression.ErrNotFound)

	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Address: "new@example.com", Reason: suppression.HardBounce})
	require.NoError(t, err)
	require.NoError(t, s.Remove(ctx, "acme", "old@example.com", ""))
	require.Eventually(t, func() bool {
		_, errNew := c.Blocks(ctx, "acme", "new@example.com", "")
		_, errOld := c.Blocks(ctx, "acme", "old@example.com", "")
		return errNew == nil && errors.Is(errOld, suppression.ErrNotFound)
	}, 5*time.Second, 5*time.Millisecond)
}

// An unsubscribe holds back one category's notifications and no other's;
// an entry for all holds back every category's. Both are listed, and each
// is lifted on its own.
func TestACategoryEntryBlocksThatCategoryOnly(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	s, err := suppression.Open(ctx, n.JS)
	require.NoError(t, err)
	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Address: "olga@zarya.example", Reason: suppression.Unsubscribed, Category: "alerts"})
	require.NoError(t, err)
	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Address: "x@zarya.example", Reason: suppression.Manual, Category: "no.dots"})
	require.ErrorIs(t, err, suppression.ErrInvalid)
	require.ErrorContains(t, err, "category")
	c, err := suppression.Watch(ctx, n.JS)
	require.NoError(t, err)
	t.Cleanup(c.Stop)

	for _, blocks := range []func(ctx context.Context, tenant, address, category string) (suppression.Entry, error){s.Blocks, c.Blocks} {
		e, err := blocks(ctx, "acme", "Olga@zarya.example", "alerts")
		require.NoError(t, err)
		require.Equal(t, "alerts", e.Category)
		_, err = blocks(ctx, "acme", "olga@zarya.example", "documents")
		require.ErrorIs(t, err, suppression.ErrNotFound, "another category is sent")
		_, err = blocks(ctx, "acme", "olga@zarya.example", "")
		require.ErrorIs(t, err, suppression.ErrNotFound, "an uncategorised notification is sent")
	}
	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Address: "olga@zarya.example", Reason: suppression.HardBounce})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		e, err := c.Blocks(ctx, "acme", "olga@zarya.example", "documents")
		return err == nil && e.Reason == suppression.HardBounce
	}, 5*time.Second, 5*time.Millisecond, "an entry for all blocks every category")

	list, err := s.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.NoError(t, s.Remove(ctx, "acme", "olga@zarya.example", ""))
	_, err = s.Blocks(ctx, "acme", "olga@zarya.example", "alerts")
	require.NoError(t, err, "the unsubscribe outlives the bounce's lifting")
	require.ErrorIs(t, s.Remove(ctx, "acme", "olga@zarya.example", "documents"), suppression.ErrNotFound)
}
