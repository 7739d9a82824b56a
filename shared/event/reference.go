package event

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"unicode"
	"unicode/utf8"
)

// MaxRecipientID is the longest id, in bytes, of a subscriber, account or
// topic an event may name.
const MaxRecipientID = 128

// CheckRecipientID says what keeps id from being a subscriber's, an
// account's or a topic's id: empty, longer than MaxRecipientID bytes, not
// UTF-8, or holding a character that is not printable (a control, a format
// character, a separator other than the space). Nil when nothing does. The
// ids are the publisher's own and opaque to Herald; package recipient
// checks the records it keeps with the same rule, so an event can name
// every record the API accepts.
func CheckRecipientID(id string) error {
	switch {
	case id == "":
		return errors.New("is required")
	case len(id) > MaxRecipientID:
		return fmt.Errorf("is longer than %d bytes", MaxRecipientID)
	case !utf8.ValidString(id):
		return errors.New("is not UTF-8")
	}
	for i, r := range id {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("holds a character that is not printable (%U at byte %d)", r, i)
		}
	}
	return nil
}

var rolePattern = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// CheckRoles says what is wrong with a list of account roles (sales,
// accounts_payable): each 1-64 lowercase letters, digits, '-' or '_'.
func CheckRoles(roles []string) error {
	for _, r := range roles {
		if !rolePattern.MatchString(r) {
			return fmt.Errorf("%s is not a role: 1-64 lowercase letters, digits, '-' or '_'", quote(r))
		}
	}
	return nil
}

// Reference is what a recipient entry names instead of an address: one
// of the tenant's subscribers, the members of an account (in roles), or a
// topic's members.
type Reference struct {
	Kind string // "subscriber", "account" or "topic"
	ID   string
	// Roles are the account roles named (account references only).
	Roles []string
}

// Reference is what r names instead of an address; false for an inline
// contact.
func (r Recipient) Reference() (Reference, bool) {
	switch {
	case r.Subscriber != "":
		return Reference{Kind: "subscriber", ID: r.Subscriber}, true
	case r.Account != "":
		return Reference{Kind: "account", ID: r.Account, Roles: r.AccountRoles}, true
	case r.Topic != "":
		return Reference{Kind: "topic", ID: r.Topic}, true
	}
	return Reference{}, false
}

// String is the reference as the history records an unresolved one:
// account "zarya" roles [sales].
func (ref Reference) String() string {
	s := ref.Kind + " " + quote(ref.ID)
	if len(ref.Roles) > 0 {
		s += fmt.Sprintf(" roles %v", ref.Roles)
	}
	return s
}

// validateReference checks an entry that names a subscriber, an account
// or a topic: exactly one of them, by a valid id, with account_roles only
// beside an account, and no address of its own — Herald knows where the
// people it names are reached.
func (r Recipient) validateReference(p *problems, field string) {
	named := 0
	for _, ref := range []struct{ key, id string }{{"subscriber", r.Subscriber}, {"account", r.Account}, {"topic", r.Topic}} {
		if ref.id == "" {
			continue
		}
		if named++; named > 1 {
			p.add(field+"."+ref.key, "a recipient names one of subscriber, account or topic, not several")
			continue
		}
		if err := CheckRecipientID(ref.id); err != nil {
			p.add(field+"."+ref.key, "%v", err)
		}
	}
	if len(r.AccountRoles) > 0 && r.Account == "" {
		p.add(field+".account_roles", "applies only to a recipient that names an account")
	}
	if err := CheckRoles(r.AccountRoles); err != nil {
		p.add(field+".account_roles", "%v", err)
	}
	for _, a := range []struct{ key, value string }{{"email", r.Email}, {"phone", r.Phone}, {"webhook", r.Webhook}} {
		if a.value != "" {
			p.add(field+"."+a.key, "a recipient that names a %s has no address of its own", r.referenceKind())
		}
	}
	for _, c := range r.Channels {
		if !slices.Contains(Channels, c) {
			p.add(field+".channels", "%s is not a channel (want one of %v)", quote(string(c)), Channels)
		}
	}
}

func (r Recipient) referenceKind() string {
	ref, _ := r.Reference()
	return ref.Kind
}
