package recipient_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/resource"
)

// Erasing a subscriber leaves no revision naming her in any of the
// directory's buckets — her profile (the address she had before too), her
// preferences, her topic memberships (a past one included), her place in
// an account — while the others' records stand; a second erasure finds
// nothing and is no error.
func TestEraseLeavesNoRevisionOfTheSubscriber(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	dir, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	old := olga()
	old.Email = "olga.before@zarya.example"
	for _, s := range []recipient.Subscriber{old, olga(), {Tenant: "acme", ID: "u-ivan", Email: "ivan@zarya.example"}} {
		_, err = dir.Subscribers.Put(ctx, s.Normalize())
		require.NoError(t, err)
	}
	_, err = dir.PutAccount(ctx, recipient.Account{Tenant: "acme", ID: "zarya", Members: []recipient.Member{
		{Subscriber: "u-olga", Roles: []string{"sales"}}, {Subscriber: "u-ivan", Roles: []string{"sales"}}}})
	require.NoError(t, err)
	for _, topic := range []string{"warehouse-sevilla", "alerts-all"} {
		_, err = dir.Memberships.Put(ctx, recipient.Membership{Tenant: "acme", Topic: topic, Subscriber: "u-olga"})
		require.NoError(t, err)
	}
	_, err = dir.Memberships.Put(ctx, recipient.Membership{Tenant: "acme", Topic: "alerts-all", Subscriber: "u-ivan"})
	require.NoError(t, err)
	require.NoError(t, dir.Memberships.Delete(ctx, recipient.MembershipKey("acme", "alerts-all", "u-olga")), "a topic she left")
	_, err = dir.SetPreferences(ctx, "acme", "u-olga", recipient.Choices{"alerts": {event.ChannelSMS: false}}, nil, false)
	require.NoError(t, err)

	addresses, err := dir.Addresses(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"olga.before@zarya.example", "olga@zarya.example", "+79161234567"}, addresses)

	erased, err := dir.Erase(resource.WithActor(ctx, "key:k1"), "acme", "u-olga", false)
	require.NoError(t, err)
	require.Equal(t, recipient.Erased{Profile: 1, Preferences: 1, TopicMemberships: 2, Accounts: 1}, erased)

	token := recipient.Token("u-olga")
	for _, stream := range []string{"KV_subscribers", "KV_accounts", "KV_topic_members", "KV_preferences"} {
		for _, m := range heraldtest.StreamMessages(t, n.JS, stream) {
			for _, trace := range []string{"u-olga", token, "olga", "+79161234567"} {
				require.NotContains(t, string(m.Data), trace, "%s revision %d (%s)", stream, m.Sequence, m.Subject)
			}
			require.False(t, strings.HasSuffix(m.Subject, "."+token) && len(m.Data) > 0, "%s keeps %s", stream, m.Subject)
		}
	}
	_, _, err = dir.Subscribers.Get(ctx, recipient.SubscriberKey("acme", "u-olga"))
	require.ErrorIs(t, err, recipient.ErrNoSubscriber)
	zarya, _, err := dir.Accounts.Get(ctx, recipient.AccountKey("acme", "zarya"))
	require.NoError(t, err)
	require.Equal(t, []string{"u-ivan"}, zarya.In(nil), "the account stands, without her")
	_, _, err = dir.Memberships.Get(ctx, recipient.MembershipKey("acme", "alerts-all", "u-ivan"))
	require.NoError(t, err, "another's membership stands")
	addresses, err = dir.Addresses(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Empty(t, addresses)

	again, err := dir.Erase(ctx, "acme", "u-olga", false)
	require.NoError(t, err)
	require.Equal(t, recipient.Erased{}, again, "nothing left")
	_, err = dir.Erase(ctx, "acme", "u\x00olga", false)
	require.ErrorIs(t, err, recipient.ErrInvalid)
}
