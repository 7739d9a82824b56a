package tenant

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Plan is what a tenant pays for. Today it is a name and a description;
// what a plan allows is enforced elsewhere.
type Plan struct {
	// Description says who the plan is for, in a sentence.
	Description string `yaml:"description" json:"description"`
}

// Plans are the plans a tenant may be on, by name: the config file's
// `plans:` section.
type Plans map[string]Plan

// BuiltinPlans are the plans every Herald knows, whatever its config file
// says.
func BuiltinPlans() Plans {
	return Plans{
		"free":       {Description: "Trying Herald out."},
		"indie":      {Description: "One small business sending its own notifications."},
		"startup":    {Description: "A growing product with several senders and channels."},
		"enterprise": {Description: "Large volumes and negotiated terms."},
	}
}

// WithDefaults is the built-in plans with p over them: a plan p names that
// is not built in is added; one that is keeps each field p leaves empty
// from the built-in plan, so a config file can change one setting of
// "startup" without restating the rest.
func (p Plans) WithDefaults() Plans {
	merged := BuiltinPlans()
	for name, plan := range p {
		builtin := merged[name]
		merged[name] = Plan{Description: cmp.Or(plan.Description, builtin.Description)}
	}
	return merged
}

// Names are the plans' names, sorted.
func (p Plans) Names() []string {
	return slices.Sorted(maps.Keys(p))
}

// Validate reports every plan whose name cannot be stored with a tenant,
// naming it as the config file does (plans.<name>).
func (p Plans) Validate() error {
	var problems []string
	for _, name := range p.Names() {
		if !namePattern.MatchString(name) {
			problems = append(problems, fmt.Sprintf("plans.%s: %q is not a plan name (1 to 64 letters, digits, '-' or '_')", name, name))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}
