package event_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
)

func recipients(m map[string]any, rs ...map[string]any) {
	list := make([]any, len(rs))
	for i, r := range rs {
		list[i] = r
	}
	m["data"].(map[string]any)["recipients"] = list
}

func party(m map[string]any, side string) map[string]any {
	return m["data"].(map[string]any)["order"].(map[string]any)[side].(map[string]any)
}

// A recipient may name a subscriber, an account (in roles) or a topic
// instead of an address; channels are then optional.
func TestARecipientMayNamePeopleHeraldKeeps(t *testing.T) {
	t.Parallel()
	m := sample(t)
	recipients(m,
		map[string]any{"role": "warehouse", "subscriber": "u-olga"},
		map[string]any{"role": "supplier", "account": "zarya", "account_roles": []string{"sales"}},
		map[string]any{"role": "warehouse", "topic": "warehouse sevilla.*", "channels": []string{"sms"}},
	)
	ev, err := event.Decode(encode(t, m))
	require.NoError(t, err)
	data, err := ev.OrderData()
	require.NoError(t, err)
	ref, ok := data.Recipients[1].Reference()
	require.True(t, ok)
	require.Equal(t, event.Reference{Kind: "account", ID: "zarya", Roles: []string{"sales"}}, ref)
	require.Equal(t, `account "zarya" roles [sales]`, ref.String())
	ref, _ = data.Recipients[2].Reference()
	require.Equal(t, "warehouse sevilla.*", ref.ID, "an id is the publisher's own, opaque")
	_, ok = data.Recipients[0].Reference()
	require.True(t, ok)
}

// An order whose parties name their accounts needs no recipient list: the
// router finds the contacts.
func TestAnOrderWhosePartiesNameAccountsMayListNobody(t *testing.T) {
	t.Parallel()
	m := sample(t)
	recipients(m)
	_, _, err := event.Read(encode(t, m))
	require.ErrorContains(t, err, "data.recipients: at least one recipient is required")

	party(m, "supplier")["account"] = "zarya"
	ev, err := event.Decode(encode(t, m))
	require.NoError(t, err)
	data, err := ev.OrderData()
	require.NoError(t, err)
	require.Equal(t, "zarya", data.Order.Supplier.Account)

	party(m, "supplier")["account"] = "zar\x00ya"
	_, _, err = event.Read(encode(t, m))
	require.ErrorContains(t, err, "data.order.supplier.account: holds a character that is not printable")
}

func TestABadReferenceIsRefusedNamingItsField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		entry  map[string]any
		reason string
	}{
		{"two references", map[string]any{"subscriber": "u-olga", "topic": "t"}, "data.recipients[0].topic: a recipient names one of subscriber, account or topic, not several"},
		{"an id too long", map[string]any{"subscriber": strings.Repeat("u", 129)}, "data.recipients[0].subscriber: is longer than 128 bytes"},
		{"a control character in an id", map[string]any{"account": "zar\u200bya"}, "data.recipients[0].account: holds a character that is not printable"},
		{"account roles without an account", map[string]any{"subscriber": "u-olga", "account_roles": []string{"sales"}}, "data.recipients[0].account_roles: applies only to a recipient that names an account"},
		{"account roles alone", map[string]any{"account_roles": []string{"sales"}}, "data.recipients[0].account_roles: applies only"},
		{"a role that is not one", map[string]any{"account": "zarya", "account_roles": []string{"Sales Dept"}}, `data.recipients[0].account_roles: "Sales Dept" is not a role`},
		{"an address beside a reference", map[string]any{"subscriber": "u-olga", "email": "olga@zarya.example"}, "data.recipients[0].email: a recipient that names a subscriber has no address of its own"},
		{"an unknown channel", map[string]any{"topic": "t", "channels": []string{"pigeon"}}, `data.recipients[0].channels: "pigeon" is not a channel`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := sample(t)
			recipients(m, tc.entry)
			_, _, err := event.Read(encode(t, m))
			require.ErrorContains(t, err, tc.reason)
		})
	}
}
