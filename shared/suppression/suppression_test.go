package suppression_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/event"
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

	got, err := s.Get(ctx, "acme", "", "BUYER@example.com", "")
	require.NoError(t, err)
	require.Equal(t, suppression.HardBounce, got.Reason)
	require.Equal(t, "550 5.1.1 user unknown", got.Detail)
	_, err = s.Get(ctx, "globex", "", "buyer@example.com", "")
	require.ErrorIs(t, err, suppression.ErrNotFound, "another tenant's suppression is not this one's")

	list, err := s.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "+15551234567", list[0].Address, "newest first")
	other, err := s.List(ctx, "globex")
	require.NoError(t, err)
	require.Empty(t, other)

	require.NoError(t, s.Remove(ctx, "acme", "", "buyer@example.com", ""))
	_, err = s.Get(ctx, "acme", "", "buyer@example.com", "")
	require.ErrorIs(t, err, suppression.ErrNotFound)
	require.ErrorIs(t, s.Remove(ctx, "acme", "", "buyer@example.com", ""), suppression.ErrNotFound)
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

	e, err := c.Blocks(ctx, "acme", event.ChannelEmail, "OLD@example.com", "")
	require.NoError(t, err)
	require.Equal(t, suppression.Complaint, e.Reason)
	_, err = c.Blocks(ctx, "globex", event.ChannelEmail, "old@example.com", "")
	require.ErrorIs(t, err, suppression.ErrNotFound)

	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Address: "new@example.com", Reason: suppression.HardBounce})
	require.NoError(t, err)
	require.NoError(t, s.Remove(ctx, "acme", "", "old@example.com", ""))
	require.Eventually(t, func() bool {
		_, errNew := c.Blocks(ctx, "acme", event.ChannelEmail, "new@example.com", "")
		_, errOld := c.Blocks(ctx, "acme", event.ChannelEmail, "old@example.com", "")
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

	for _, blocks := range []func(ctx context.Context, tenant string, channel event.Channel, address, category string) (suppression.Entry, error){s.Blocks, c.Blocks} {
		e, err := blocks(ctx, "acme", event.ChannelEmail, "Olga@zarya.example", "alerts")
		require.NoError(t, err)
		require.Equal(t, "alerts", e.Category)
		_, err = blocks(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "documents")
		require.ErrorIs(t, err, suppression.ErrNotFound, "another category is sent")
		_, err = blocks(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "")
		require.ErrorIs(t, err, suppression.ErrNotFound, "an uncategorised notification is sent")
	}
	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Address: "olga@zarya.example", Reason: suppression.HardBounce})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		e, err := c.Blocks(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "documents")
		return err == nil && e.Reason == suppression.HardBounce
	}, 5*time.Second, 5*time.Millisecond, "an entry for all blocks every category")

	list, err := s.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.NoError(t, s.Remove(ctx, "acme", "", "olga@zarya.example", ""))
	_, err = s.Blocks(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "alerts")
	require.NoError(t, err, "the unsubscribe outlives the bounce's lifting")
	require.ErrorIs(t, s.Remove(ctx, "acme", "", "olga@zarya.example", "documents"), suppression.ErrNotFound)
}

// An entry for a channel holds back that channel only: a number that
// bounced by SMS still hears on WhatsApp. An entry for every channel holds
// back them all. Each is lifted on its own.
func TestAnEntryForAChannelBlocksThatChannelOnly(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	s, err := suppression.Open(ctx, n.JS)
	require.NoError(t, err)
	c, err := suppression.Watch(ctx, n.JS)
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Channel: event.ChannelSMS, Address: "+34600111222", Reason: suppression.HardBounce})
	require.NoError(t, err)
	_, err = s.Add(ctx, suppression.Entry{Tenant: "acme", Address: "+34600333444", Reason: suppression.Manual})
	require.NoError(t, err)

	for name, blocks := range map[string]func(ctx context.Context, tenant string, channel event.Channel, address, category string) (suppression.Entry, error){
		"Store": s.Blocks, "Cache": c.Blocks,
	} {
		require.EventuallyWithT(t, func(collect *assert.CollectT) {
			e, err := blocks(ctx, "acme", event.ChannelSMS, "+34600111222", "alerts")
			require.NoError(collect, err, name)
			require.Equal(collect, event.ChannelSMS, e.Channel)
			for _, ch := range []event.Channel{event.ChannelSMS, event.ChannelWhatsApp} {
				e, err := blocks(ctx, "acme", ch, "+34600333444", "")
				require.NoError(collect, err, "%s: an entry for every channel holds back %s", name, ch)
				require.Empty(collect, e.Channel)
			}
		}, 5*time.Second, 5*time.Millisecond)
		_, err = blocks(ctx, "acme", event.ChannelWhatsApp, "+34600111222", "alerts")
		require.ErrorIs(t, err, suppression.ErrNotFound, "%s: WhatsApp to the number that bounced by SMS is sent", name)
	}

	require.ErrorIs(t, s.Remove(ctx, "acme", "", "+34600111222", ""), suppression.ErrNotFound, "no entry for every channel")
	require.NoError(t, s.Remove(ctx, "acme", event.ChannelSMS, "+34600111222", ""))
	_, err = s.Blocks(ctx, "acme", event.ChannelSMS, "+34600111222", "")
	require.ErrorIs(t, err, suppression.ErrNotFound)
}

// Entries written before suppressions had channels — keyed by a digest of
// the address alone, with no channel in their value — still hold back
// every channel, are listed, and are lifted as entries for every channel.
func TestEntriesWrittenBeforeChannelsStillBlock(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	kv, err := n.JS.KeyValue(ctx, suppression.Bucket)
	require.NoError(t, err)
	sum := sha256.Sum256([]byte("+34600111222"))
	_, err = kv.Put(ctx, "acme."+hex.EncodeToString(sum[:16]),
		[]byte(`{"tenant":"acme","address":"+34600111222","reason":"hard_bounce","detail":"error 30005","source":"twilio event SM1:undelivered:30005","created_at":"2026-01-05T10:00:00Z"}`))
	require.NoError(t, err)
	s, err := suppression.Open(ctx, n.JS)
	require.NoError(t, err)
	c, err := suppression.Watch(ctx, n.JS)
	require.NoError(t, err)
	t.Cleanup(c.Stop)

	for _, ch := range []event.Channel{event.ChannelSMS, event.ChannelWhatsApp} {
		e, err := s.Blocks(ctx, "acme", ch, "+34600111222", "")
		require.NoError(t, err, ch)
		require.Equal(t, "error 30005", e.Detail)
		_, err = c.Blocks(ctx, "acme", ch, "+34600111222", "alerts")
		require.NoError(t, err, ch)
	}
	list, err := s.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Empty(t, list[0].Channel)
	require.NoError(t, s.Remove(ctx, "acme", "", "+34600111222", ""))
	_, err = s.Blocks(ctx, "acme", event.ChannelSMS, "+34600111222", "")
	require.ErrorIs(t, err, suppression.ErrNotFound)
}

// An address is one its channel sends to, and no text of an entry holds a
// control character: each refusal names the field.
func TestAnEntrysAddressAndTextsAreChecked(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	s, err := suppression.Open(ctx, n.JS)
	require.NoError(t, err)
	entry := func(change func(*suppression.Entry)) suppression.Entry {
		e := suppression.Entry{Tenant: "acme", Address: "olga@zarya.example", Reason: suppression.Manual, Detail: "asked by phone", Source: "cli"}
		change(&e)
		return e
	}
	for name, tc := range map[string]struct {
		entry suppression.Entry
		field string
	}{
		"EscapeInTheAddress":       {entry(func(e *suppression.Entry) { e.Address = "olga@zarya.example\x1b[2J" }), "address"},
		"NULInTheAddress":          {entry(func(e *suppression.Entry) { e.Address = "olga\x00@zarya.example" }), "address"},
		"NotAnAddress":             {entry(func(e *suppression.Entry) { e.Address = "olga" }), "address"},
		"DisplayName":              {entry(func(e *suppression.Entry) { e.Address = "Olga <olga@zarya.example>" }), "address"},
		"PhoneForEmail":            {entry(func(e *suppression.Entry) { e.Channel, e.Address = event.ChannelEmail, "+34600111222" }), "address"},
		"EmailForSMS":              {entry(func(e *suppression.Entry) { e.Channel = event.ChannelSMS }), "address"},
		"NotE164ForWhatsApp":       {entry(func(e *suppression.Entry) { e.Channel, e.Address = event.ChannelWhatsApp, "600 111 222" }), "address"},
		"Webhook":                  {entry(func(e *suppression.Entry) { e.Channel, e.Address = event.ChannelWebhook, "https://zarya.example/hook" }), "channel"},
		"EscapeInTheDetail":        {entry(func(e *suppression.Entry) { e.Detail = "\x1b]0;pwned\x07\x1b[2J" }), "detail"},
		"NULInTheDetail":           {entry(func(e *suppression.Entry) { e.Detail = "asked\x00" }), "detail"},
		"LineSeparatorInTheSource": {entry(func(e *suppression.Entry) { e.Source = "cli\u2028forged" }), "source"},
		"NotATenant":               {entry(func(e *suppression.Entry) { e.Tenant = "acme.x" }), "tenant"},
	} {
		_, err := s.Add(ctx, tc.entry)
		require.ErrorIs(t, err, suppression.ErrInvalid, name)
		require.ErrorContains(t, err, tc.field, name)
	}
	list, err := s.List(ctx, "acme")
	require.NoError(t, err)
	require.Empty(t, list, "nothing refused is kept")

	for _, ok := range []suppression.Entry{
		entry(func(e *suppression.Entry) {}),
		entry(func(e *suppression.Entry) { e.Address = "+34600111222" }),
		entry(func(e *suppression.Entry) { e.Channel, e.Address = event.ChannelWhatsApp, "+34600111222" }),
		entry(func(e *suppression.Entry) { e.Channel, e.Address = event.ChannelEmail, " Olga@Zarya.example " }),
	} {
		_, err := s.Add(ctx, ok)
		require.NoError(t, err)
	}
}
