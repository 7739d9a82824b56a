package recipient_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/resource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

func olga() recipient.Subscriber {
	return recipient.Subscriber{Tenant: "acme", ID: "u-olga", Name: "Olga", Email: "Olga@Zarya.example ",
		Phone: "+79161234567", WhatsApp: "+79161234567", Locale: "ru", Timezone: "Europe/Moscow",
		Data: json.RawMessage(`{"desk": 4}`)}
}

func TestASubscriberIsRefusedNamingEveryFieldAtFault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(*recipient.Subscriber)
		field string
	}{
		{"unknown time zone", func(s *recipient.Subscriber) { s.Timezone = "Mars/Olympus" }, "timezone: "},
		{"the process's own zone", func(s *recipient.Subscriber) { s.Timezone = "Local" }, "timezone: "},
		{"unknown locale", func(s *recipient.Subscriber) { s.Locale = "xx-QQ" }, "locale: "},
		{"malformed email", func(s *recipient.Subscriber) { s.Email = "olga@" }, "email: "},
		{"phone not E.164", func(s *recipient.Subscriber) { s.Phone = "8 916 123" }, "phone: "},
		{"whatsapp not E.164", func(s *recipient.Subscriber) { s.WhatsApp = "olga" }, "whatsapp: "},
		{"control character in the name", func(s *recipient.Subscriber) { s.Name = "Olga\r\nBcc: x@y" }, "name: "},
		{"control character in the id", func(s *recipient.Subscriber) { s.ID = "u\x00olga" }, "id: "},
		{"an id too long", func(s *recipient.Subscriber) { s.ID = strings.Repeat("u", 129) }, "id: "},
		{"escaped control character in data", func(s *recipient.Subscriber) { s.Data = json.RawMessage(`{"a":"\u001b[2J"}`) }, "data: "},
		{"data over 16 KiB", func(s *recipient.Subscriber) {
			s.Data = json.RawMessage(`{"a":"` + strings.Repeat("x", 16<<10) + `"}`)
		}, "data: "},
		{"data not JSON", func(s *recipient.Subscriber) { s.Data = json.RawMessage(`{`) }, "data: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := olga()
			tc.edit(&s)
			err := s.Normalize().Validate()
			require.ErrorIs(t, err, recipient.ErrInvalid)
			require.ErrorIs(t, err, resource.ErrInvalid)
			require.Contains(t, err.Error(), tc.field)
		})
	}
	require.NoError(t, olga().Normalize().Validate())
	require.Equal(t, "olga@zarya.example", olga().Normalize().Email, "kept case-folded, the form it is matched in")
}

// An id is opaque: whatever printable text it is, its key is one token of
// the tenant's own, so it never reaches another record or tenant.
func TestAnIDIsOneKeyTokenWhateverItHolds(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"u.olga", "*", ">", "a b", "acme.other", "Ольга/1", "x=y"} {
		key := recipient.SubscriberKey("acme", id)
		require.Equal(t, 1, strings.Count(key, "."), id)
		require.NotContains(t, key, "*", id)
		require.NotContains(t, key, ">", id)
		require.NotContains(t, key, " ", id)
		_, tok, _ := strings.Cut(key, ".")
		back, err := recipient.FromToken(tok)
		require.NoError(t, err)
		require.Equal(t, id, back)
	}
}

func TestPreferencesDecideCategoryByChannel(t *testing.T) {
	t.Parallel()
	own := recipient.Choices{"alerts": {event.ChannelSMS: false}}
	defaults := recipient.Choices{"alerts": {event.ChannelWhatsApp: false, event.ChannelEmail: true, event.ChannelSMS: true}, "digest": {event.ChannelEmail: false}}
	for _, tc := range []struct {
		category string
		channel  event.Channel
		required bool
		want     bool
	}{
		{"alerts", event.ChannelSMS, false, false},      // her own choice
		{"alerts", event.ChannelWhatsApp, false, false}, // the tenant's default
		{"alerts", event.ChannelEmail, false, true},     // the tenant's default, on
		{"digest", event.ChannelEmail, false, false},
		{"digest", event.ChannelSMS, false, true}, // nobody chose: on
		{"alerts", event.ChannelSMS, true, true},  // required: always
		{"", event.ChannelSMS, false, true},       // no category: nothing to choose against
	} {
		require.Equal(t, tc.want, recipient.Allows(own, defaults, tc.category, tc.channel, tc.required), "%s.%s required=%t", tc.category, tc.channel, tc.required)
	}
	own = own.Merge(recipient.Choices{"alerts": {event.ChannelSMS: true}})
	require.True(t, recipient.Allows(own, defaults, "alerts", event.ChannelSMS, false), "a later choice overrides")
}

func TestARequiredCategoryCannotBeSwitchedOff(t *testing.T) {
	t.Parallel()
	off := recipient.Choices{"alerts": {event.ChannelSMS: false}, "documents": {event.ChannelEmail: false}}
	err := off.Required([]string{"documents"})
	require.ErrorIs(t, err, recipient.ErrInvalid)
	require.Contains(t, err.Error(), "categories.documents")
	require.NoError(t, recipient.Choices{"documents": {event.ChannelEmail: true}}.Required([]string{"documents"}))
	require.Error(t, recipient.Choices{"alerts": {"pigeon": false}}.Check())
}

func TestAnAccountMemberMustBeASubscriber(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	dir, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	_, err = dir.Subscribers.Put(ctx, olga().Normalize())
	require.NoError(t, err)
	zarya := recipient.Account{Tenant: "acme", ID: "zarya", Name: "Zarya", Members: []recipient.Member{
		{Subscriber: "u-olga", Roles: []string{"Sales"}}, {Subscriber: "u-ghost", Roles: []string{"sales"}}}}
	_, err = dir.PutAccount(ctx, zarya)
	require.ErrorIs(t, err, recipient.ErrInvalid)
	require.Contains(t, err.Error(), `members[1].subscriber: "u-ghost" is not a subscriber`)
	_, _, err = dir.Accounts.Get(ctx, recipient.AccountKey("acme", "zarya"))
	require.ErrorIs(t, err, recipient.ErrNoAccount, "nothing half-written")

	zarya.Members = zarya.Members[:1]
	_, err = dir.PutAccount(ctx, zarya)
	require.NoError(t, err)
	got, _, err := dir.Accounts.Get(ctx, recipient.AccountKey("acme", "zarya"))
	require.NoError(t, err)
	require.Equal(t, []string{"u-olga"}, got.In([]string{"sales"}), "roles compared lowercased")
	require.Empty(t, got.In([]string{"accounts_payable"}))
	require.Equal(t, []string{"u-olga"}, got.In(nil), "no roles named: every member")
}

func TestPreferencesAreWrittenThroughOnePlaceThatKeepsRequiredOnes(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	dir, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	required := []string{"documents"}
	_, err = dir.SetPreferences(ctx, "acme", "u-olga", recipient.Choices{"alerts": {event.ChannelSMS: false}}, required, true)
	require.ErrorIs(t, err, recipient.ErrNoSubscriber, "no preferences for nobody")
	_, err = dir.Subscribers.Put(ctx, olga().Normalize())
	require.NoError(t, err)

	_, err = dir.SetPreferences(ctx, "acme", "u-olga", recipient.Choices{"alerts": {event.ChannelSMS: false}}, required, true)
	require.NoError(t, err)
	_, err = dir.SetPreferences(ctx, "acme", "u-olga", recipient.Choices{"alerts": {event.ChannelEmail: false}}, required, true)
	require.NoError(t, err)
	_, err = dir.SetPreferences(ctx, "acme", "u-olga", recipient.Choices{"documents": {event.ChannelEmail: false}}, required, true)
	require.ErrorContains(t, err, "categories.documents: is required")
	_, err = dir.SetPreferences(ctx, "acme", "", recipient.Choices{"alerts": {event.ChannelWhatsApp: false}}, required, true)
	require.NoError(t, err)

	own, defaults, err := dir.Choices(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Equal(t, "alerts.email=false, alerts.sms=false", own.String(), "merged, the refused change left out")
	require.Equal(t, "alerts.whatsapp=false", defaults.String())

	_, err = dir.SetPreferences(ctx, "acme", "u-olga", recipient.Choices{"alerts": {event.ChannelSMS: true}}, required, false)
	require.NoError(t, err)
	own, _, err = dir.Choices(ctx, "acme", "u-olga")
	require.NoError(t, err)
	require.Equal(t, "alerts.sms=true", own.String(), "replaced")
}
