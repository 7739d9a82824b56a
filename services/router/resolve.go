package router

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
)

// Directory is a deployment's recipients as the planner reads them — from
// memory, so that planning stays a pure function of the event and what the
// directory holds, and a table test gives it a fixed one. The router's is
// fed by watches of the recipient buckets (see watchDirectory).
type Directory interface {
	Subscriber(tenant, id string) (recipient.Subscriber, bool)
	Account(tenant, id string) (recipient.Account, bool)
	// Members are the ids of a topic's subscribers, sorted.
	Members(tenant, topic string) []string
	// Choices are a subscriber's own preferences and the tenant's
	// defaults; nil when none are set.
	Choices(tenant, subscriber string) (own, defaults recipient.Choices)
	// HasDevices says whether a subscriber registered a push device: one
	// without is not reached by push.
	HasDevices(tenant, subscriber string) bool
}

// nobody is the directory of a router given none: every reference names
// nobody.
type nobody struct{}

func (nobody) Subscriber(string, string) (recipient.Subscriber, bool) {
	return recipient.Subscriber{}, false
}
func (nobody) Account(string, string) (recipient.Account, bool) { return recipient.Account{}, false }
func (nobody) Members(string, string) []string                  { return nil }
func (nobody) Choices(string, string) (own, defaults recipient.Choices) {
	return nil, nil
}
func (nobody) HasDevices(string, string) bool { return false }

// lookup is a subscriber or an account an event named that the directory
// did not have.
type lookup struct {
	kind string // "subscriber" or "account"
	id   string
}

// target is one person a route reaches: a contact the event wrote out, or
// one of the tenant's subscribers an entry named (sub set).
type target struct {
	entry event.Recipient
	sub   *recipient.Subscriber
}

func (t target) address(ch event.Channel) string {
	if t.sub != nil {
		return t.sub.Address(ch)
	}
	return t.entry.Address(ch)
}

// has says whether t is reached on ch: an inline contact on the channels
// it lists; a subscriber on those they have an address for, of those the
// entry lists when it lists any.
func (t target) has(ch event.Channel) bool {
	if t.sub == nil {
		return slices.Contains(t.entry.Channels, ch)
	}
	return t.sub.Address(ch) != "" && (len(t.entry.Channels) == 0 || slices.Contains(t.entry.Channels, ch))
}

// locale is the subscriber's, then the entry's, then fallback (the
// order's or the stock's).
func (t target) locale(fallback string) string {
	if t.sub != nil {
		return cmp.Or(t.sub.Locale, t.entry.Locale, fallback)
	}
	return cmp.Or(t.entry.Locale, fallback)
}

func (t target) recipient(ch event.Channel) notification.Recipient {
	r := notification.Recipient{Name: t.entry.Name, Role: t.entry.Role, Address: t.address(ch)}
	if t.sub != nil {
		r.Name, r.Subscriber, r.Timezone = cmp.Or(t.sub.Name, t.entry.Name), t.sub.ID, t.sub.Timezone
	}
	return r
}

// each plans a route's deliveries to one entry of the event's list: the
// contact it writes out, or the people it names.
func (p *planner) each(r Route, entry event.Recipient, a about) {
	if !r.wants(entry.Role) {
		return
	}
	ref, ok := entry.Reference()
	if !ok {
		p.fanOut(r, target{entry: entry}, a)
		return
	}
	p.resolve(r, entry, ref, a)
}

// partyAccounts reaches, for each role the route wants that no entry of
// the event's list plays, the members of that order party's account in
// the route's account roles.
func (p *planner) partyAccounts(r Route, o event.Order, listed []event.Recipient, a about) {
	for _, role := range r.Roles {
		party, ok := partyOf(o, role)
		if !ok || party.Account == "" || slices.ContainsFunc(listed, func(e event.Recipient) bool {
			return strings.ToLower(strings.TrimSpace(e.Role)) == role
		}) {
			continue
		}
		p.resolve(r, event.Recipient{Role: role}, event.Reference{Kind: "account", ID: party.Account, Roles: r.AccountRoles}, a)
	}
}

// resolve plans the route's deliveries to each person ref names; a
// reference that names nobody the directory has is recorded as not
// planned, with the reference.
func (p *planner) resolve(r Route, entry event.Recipient, ref event.Reference, a about) {
	if ref.Kind == "topic" && len(p.dir.Members(p.ev.Tenant, ref.ID)) > p.cfg.FanoutPage {
		p.fanouts = append(p.fanouts, fanout{Route: r, Entry: entry})
		return
	}
	reached := 0
	for _, id := range p.named(ref) {
		sub, ok := p.dir.Subscriber(p.ev.Tenant, id)
		if !ok {
			p.missed("subscriber", id)
			continue
		}
		reached++
		p.fanOut(r, target{entry: entry, sub: &sub}, a)
	}
	if reached == 0 {
		key := notification.Key{Tenant: p.ev.Tenant, Subject: a.subject, Revision: a.revision,
			Document: cmp.Or(r.Document, r.Template), Recipient: ref.String()}.String()
		p.unplan(r, a, "", ref.String(), key, "no recipient: "+ref.String())
	}
}

// named are the ids of the subscribers ref names, at most maxPeople over
// the whole event.
func (p *planner) named(ref event.Reference) []string {
	var ids []string
	switch ref.Kind {
	case "subscriber":
		ids = []string{ref.ID}
	case "account":
		acc, ok := p.dir.Account(p.ev.Tenant, ref.ID)
		if !ok {
			p.missed("account", ref.ID)
			return nil
		}
		ids = acc.In(ref.Roles)
	case "topic":
		ids = p.dir.Members(p.ev.Tenant, ref.ID)
	}
	if p.people += len(ids); p.people > p.maxPeople() {
		return nil
	}
	return ids
}

// maxPeople bounds the people one event's references resolve to, as
// MaxRecipients bounds the entries it lists: twenty times as many, room
// for each entry to be a company's contacts, never a publisher's mistake
// planning hundreds of thousands.
func (p *planner) maxPeople() int { return 20 * p.cfg.MaxRecipients }

// tooMany refuses an event whose references named more than maxPeople.
func (p *planner) tooMany() error {
	if p.people > p.maxPeople() {
		return fmt.Errorf("data.recipients: the subscribers, accounts and topics named are %d people, more than %d (20 × router.max_recipients)",
			p.people, p.maxPeople())
	}
	return nil
}

func (p *planner) missed(kind, id string) {
	if !slices.Contains(p.missing, lookup{kind, id}) {
		p.missing = append(p.missing, lookup{kind, id})
	}
}

// allows says whether a subscriber's preferences (or else the tenant's
// defaults) let the route's notifications reach them on ch; an inline
// contact has none.
func (p *planner) allows(r Route, t target, ch event.Channel) bool {
	if t.sub == nil || r.Required || r.Category == "" {
		return true
	}
	own, defaults := p.dir.Choices(p.ev.Tenant, t.sub.ID)
	return recipient.Allows(own, defaults, r.Category, ch, r.Required)
}

// unplan records a notification not planned, once, unless another route
// planned it: skipped, for why.
func (p *planner) unplan(r Route, a about, ch event.Channel, recipientText, key, why string) {
	if p.seen[key] || p.seen["unplanned:"+key] {
		return
	}
	p.seen["unplanned:"+key] = true
	p.unplanned = append(p.unplanned, notification.AcceptedNotification{ID: notification.ID(key), Order: a.order,
		Document: cmp.Or(r.Document, r.Template), Channel: string(ch), Recipient: recipientText,
		State: notification.Skipped, Reason: notification.Skipped + ": " + why})
}
