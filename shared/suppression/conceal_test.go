package suppression_test

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/suppression"
)

// A concealed suppression keeps holding its address back — on the channel
// it bounced on, in the cache the workers ask — while no revision the
// bucket keeps, nor the listing, says the address; other addresses' and
// other tenants' entries are untouched, and concealing again counts none.
func TestAConcealedSuppressionStillBlocksWithoutTheAddress(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	s, err := suppression.Open(ctx, n.JS)
	require.NoError(t, err)
	for _, e := range []suppression.Entry{
		{Tenant: "acme", Channel: event.ChannelEmail, Address: "olga@zarya.example", Reason: suppression.Manual, Detail: "first"},
		{Tenant: "acme", Channel: event.ChannelEmail, Address: "Olga@Zarya.example", Reason: suppression.HardBounce,
			Detail: "550 5.1.1 <olga@zarya.example>: user unknown", Source: "ses:ev-1"},
		{Tenant: "acme", Address: "+79161234567", Reason: suppression.Unsubscribed, Category: "alerts"},
		{Tenant: "acme", Address: "ivan@zarya.example", Reason: suppression.Manual},
		{Tenant: "globex", Address: "olga@zarya.example", Reason: suppression.Manual},
	} {
		_, err := s.Add(ctx, e)
		require.NoError(t, err)
	}
	hash := func(a string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte("key:"+a))) }
	mask := func(text string) string { return strings.ReplaceAll(text, "olga@zarya.example", "[erased]") }

	n1, err := s.Conceal(ctx, "acme", []string{"olga@zarya.example", "+79161234567"}, hash, mask)
	require.NoError(t, err)
	require.Equal(t, 2, n1)

	for _, m := range heraldtest.StreamMessages(t, n.JS, "KV_suppressions") {
		if strings.HasPrefix(m.Subject, "$KV.suppressions.acme.") {
			require.NotContains(t, string(m.Data), "olga@", "revision %d", m.Sequence)
			require.NotContains(t, string(m.Data), "+7916", "revision %d", m.Sequence)
		}
	}
	e, err := s.Blocks(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "")
	require.NoError(t, err, "still suppressed")
	require.True(t, e.Concealed())
	require.Equal(t, hash("olga@zarya.example"), e.AddressHash, "the normalized address's")
	require.Equal(t, "550 5.1.1 <[erased]>: user unknown", e.Detail)
	require.Equal(t, suppression.HardBounce, e.Reason)
	_, err = s.Blocks(ctx, "acme", event.ChannelSMS, "+79161234567", "alerts")
	require.NoError(t, err, "the category's entry too")
	cache, err := suppression.Watch(ctx, n.JS)
	require.NoError(t, err)
	defer cache.Stop()
	_, err = cache.Blocks(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "")
	require.NoError(t, err, "the workers' cache reads it as suppressing")

	list, err := s.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 3)
	for _, e := range list {
		require.NotContains(t, e.Address, "olga")
	}
	ivan, err := s.Get(ctx, "acme", "", "ivan@zarya.example", "")
	require.NoError(t, err)
	require.Equal(t, "ivan@zarya.example", ivan.Address)
	other, err := s.Get(ctx, "globex", "", "olga@zarya.example", "")
	require.NoError(t, err)
	require.Equal(t, "olga@zarya.example", other.Address, "another tenant's own entry")

	again, err := s.Conceal(ctx, "acme", []string{"olga@zarya.example", "+79161234567"}, hash, mask)
	require.NoError(t, err)
	require.Zero(t, again)
}
