package recipient

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/event"
)

// MaxMembers caps an account's members: a company's contacts, not a
// mailing list (that is a Topic).
const MaxMembers = 500

// Account is a company — a supplier, a customer, a warehouse — whose
// members are the tenant's subscribers, each in roles.
type Account struct {
	Tenant    string    `json:"tenant"`
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"`
	Members   []Member  `json:"members"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Member is a subscriber of an account, in roles (sales,
// accounts_payable…); without roles, a member in none is still reached
// when an event names the account without account_roles.
type Member struct {
	Subscriber string   `json:"subscriber"`
	Roles      []string `json:"roles,omitempty"`
}

// Normalize returns a with its name trimmed and its roles lowercased.
func (a Account) Normalize() Account {
	a.Name = strings.TrimSpace(a.Name)
	a.Members = slices.Clone(a.Members)
	for i, m := range a.Members {
		a.Members[i].Roles = NormalizeRoles(m.Roles)
	}
	return a
}

// NormalizeRoles lowercases and trims roles, as routes compare them.
func NormalizeRoles(roles []string) []string {
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = strings.ToLower(strings.TrimSpace(r))
	}
	return out
}

// Validate says everything wrong with a normalized a. Whether each member
// is a subscriber is the store's to check (Accounts.Put), not the
// record's.
func (a Account) Validate() error {
	var p problems
	p.check("id", CheckID(a.ID))
	p.check("name", event.CheckText(a.Name))
	if len(a.Members) > MaxMembers {
		p.add("members", "%d members, more than %d (a list this long is a topic)", len(a.Members), MaxMembers)
	}
	seen := make(map[string]bool, len(a.Members))
	for i, m := range a.Members {
		field := fmt.Sprintf("members[%d]", i)
		p.check(field+".subscriber", CheckID(m.Subscriber))
		if seen[m.Subscriber] {
			p.add(field+".subscriber", "%s is listed twice", quote(m.Subscriber))
		}
		seen[m.Subscriber] = true
		p.check(field+".roles", CheckRoles(m.Roles))
	}
	return p.err()
}

// CheckRoles says what is wrong with a list of roles (the event
// package's rule, which events naming account_roles are held to).
func CheckRoles(roles []string) error { return event.CheckRoles(roles) }

// In are the subscribers of the account in any of roles, in the order
// listed; every member when roles is empty.
func (a Account) In(roles []string) []string {
	var out []string
	for _, m := range a.Members {
		if len(roles) == 0 || slices.ContainsFunc(m.Roles, func(r string) bool { return slices.Contains(roles, r) }) {
			out = append(out, m.Subscriber)
		}
	}
	return out
}
