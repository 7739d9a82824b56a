package recipient

import (
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/event"
)

// Topic is a named list of a tenant's subscribers, for fan-out (a stock
// alert to everyone at a warehouse). Its members are Memberships, a record
// each.
type Topic struct {
	Tenant    string    `json:"tenant"`
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Normalize returns t with its name trimmed.
func (t Topic) Normalize() Topic {
	t.Name = strings.TrimSpace(t.Name)
	return t
}

// Validate says everything wrong with a normalized t.
func (t Topic) Validate() error {
	var p problems
	p.check("id", CheckID(t.ID))
	p.check("name", event.CheckText(t.Name))
	return p.err()
}

// Membership is a subscriber on a topic.
type Membership struct {
	Tenant     string    `json:"tenant"`
	Topic      string    `json:"topic"`
	Subscriber string    `json:"subscriber"`
	AddedAt    time.Time `json:"added_at,omitzero"`
}

// Validate says everything wrong with m.
func (m Membership) Validate() error {
	var p problems
	p.check("topic", CheckID(m.Topic))
	p.check("subscriber", CheckID(m.Subscriber))
	return p.err()
}
