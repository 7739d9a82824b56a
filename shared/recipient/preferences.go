package recipient

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/suppression"
)

// MaxCategories caps the categories one set of preferences names.
const MaxCategories = 64

// Choices are category × channel: {"alerts": {"sms": false}}. A channel
// a category does not name is left to the tenant's defaults, then on.
type Choices map[string]map[event.Channel]bool

// Preferences are a subscriber's choices or, with no Subscriber, the
// tenant's defaults for every subscriber.
type Preferences struct {
	Tenant string `json:"tenant"`
	// Subscriber is whose they are; empty for the tenant's defaults.
	Subscriber string    `json:"subscriber,omitempty"`
	Categories Choices   `json:"categories"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
}

// Validate says everything wrong with p.
func (p Preferences) Validate() error {
	var ps problems
	if p.Subscriber != "" {
		ps.check("subscriber", CheckID(p.Subscriber))
	}
	ps.check("categories", p.Categories.Check())
	return ps.err()
}

// Check says what is wrong with c: too many categories, a category that
// is not one, a channel Herald does not know.
func (c Choices) Check() error {
	if len(c) > MaxCategories {
		return fmt.Errorf("%d categories, more than %d", len(c), MaxCategories)
	}
	for _, cat := range c.categories() {
		if !suppression.ValidCategory(cat) {
			return fmt.Errorf("%s is not a category: 1-64 letters, digits, '-' or '_'", quote(cat))
		}
		for ch := range c[cat] {
			if !slices.Contains(event.Channels, ch) {
				return fmt.Errorf("%s.%s: not a channel (want one of %v)", cat, quote(string(ch)), event.Channels)
			}
		}
	}
	return nil
}

// categories are c's categories, sorted, so errors name the same one
// every time.
func (c Choices) categories() []string {
	out := make([]string, 0, len(c))
	for cat := range c {
		out = append(out, cat)
	}
	sort.Strings(out)
	return out
}

// Required refuses choices that switch off a category in required (those
// routes mark required: documents the trade depends on), naming it.
func (c Choices) Required(required []string) error {
	for _, cat := range c.categories() {
		if !slices.Contains(required, cat) {
			continue
		}
		for _, on := range c[cat] {
			if !on {
				return invalid(fmt.Sprintf("categories.%s: is required and cannot be switched off", cat))
			}
		}
	}
	return nil
}

// Merge returns c with over's choices laid on it, category by category,
// channel by channel.
func (c Choices) Merge(over Choices) Choices {
	out := make(Choices, len(c)+len(over))
	for _, from := range []Choices{c, over} {
		for cat, channels := range from {
			if out[cat] == nil {
				out[cat] = map[event.Channel]bool{}
			}
			for ch, on := range channels {
				out[cat][ch] = on
			}
		}
	}
	return out
}

// Allows says whether a notification of category on ch may reach a
// subscriber whose choices are own, under the tenant's defaults: a
// required one always; otherwise the subscriber's choice, else the
// tenant's default, else yes. A notification with no category is not one
// anybody chose against.
func Allows(own, defaults Choices, category string, ch event.Channel, required bool) bool {
	if required || category == "" {
		return true
	}
	if on, ok := own[category][ch]; ok {
		return on
	}
	if on, ok := defaults[category][ch]; ok {
		return on
	}
	return true
}

// String is c as "alerts.sms=false, …", for logs and the audit trail.
func (c Choices) String() string {
	var parts []string
	for _, cat := range c.categories() {
		for _, ch := range event.Channels {
			if on, ok := c[cat][ch]; ok {
				parts = append(parts, fmt.Sprintf("%s.%s=%t", cat, ch, on))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// Category is what notifications are about, as routes name it ("alerts",
// "documents"): what preferences choose among, and whether it is
// required (no one may switch it off).
type Category struct {
	Name     string `json:"name"`
	Required bool   `json:"required"`
}

// RequiredOf are the names of the required categories among cs.
func RequiredOf(cs []Category) []string {
	var out []string
	for _, c := range cs {
		if c.Required {
			out = append(out, c.Name)
		}
	}
	return out
}
