package api

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/recipient"
	records "github.com/heraldhq/herald/shared/resource"
)

// Preferences are a subscriber's choices, category × channel, or the
// tenant's defaults, with what they come to.
type Preferences struct {
	Tenant     string            `json:"tenant"`
	Subscriber string            `json:"subscriber,omitempty" doc:"Whose they are; absent for the tenant's defaults."`
	Categories recipient.Choices `json:"categories" doc:"The choices made, category × channel: {\"alerts\": {\"sms\": false}}. A channel not named is left to the tenant's defaults, then on."`
	Defaults   recipient.Choices `json:"defaults,omitempty" doc:"For a subscriber: the tenant's defaults, which the subscriber's own choices override."`
	Required   []string          `json:"required" doc:"The categories routes mark required (documents): nobody may switch them off."`
	Effective  recipient.Choices `json:"effective" doc:"What reaches the subscriber (for the defaults: a subscriber who chose nothing), for every category the routes name or a choice does, on every channel: own choice, else the tenant's default, else on; a required category always."`
}

// preferenceSet is a subscriber's choices and the tenant's defaults (for
// the defaults: none and the defaults).
type preferenceSet struct {
	tenant, subscriber string
	own, defaults      recipient.Choices
}

type subscriberPreferencesInput struct {
	WebhookTenant
	ID   string `path:"id" doc:"The subscriber's id. Any printable text up to 128 bytes, URL-escaped."`
	Body recipient.Choices
}

func (in subscriberPreferencesInput) key() string { return in.ID }

func (in subscriberPreferencesInput) record(tenant string) recipient.Preferences {
	return recipient.Preferences{Tenant: tenant, Subscriber: in.ID, Categories: in.Body}
}

type defaultsInput struct{ WebhookTenant }

func (defaultsInput) key() string { return "" }

type putDefaultsInput struct {
	WebhookTenant
	Body recipient.Choices
}

func (in putDefaultsInput) record(tenant string) recipient.Preferences {
	return recipient.Preferences{Tenant: tenant, Categories: in.Body}
}

// preferencesResource exposes preferences under path+item: a
// subscriber's, or (item "/defaults") the tenant's.
func preferencesResource(s *Service, path, item string) *resource[string, recipient.Preferences, preferenceSet, Preferences] {
	return &resource[string, recipient.Preferences, preferenceSet, Preferences]{
		what: "preferences", path: path, item: item, tags: []string{"Preferences"},
		read: ScopeRead, write: ScopeSend,
		store: func(st *stores) (resourceStore[string, recipient.Preferences, preferenceSet], error) {
			return preferences{st.recipients, s.cfg.Categories}, nil
		},
		view:     s.preferencesOf,
		notFound: recipient.ErrNoSubscriber, invalid: records.ErrInvalid, conflict: records.ErrConflict,
		absent: func(tenant, id string) string { return "tenant " + tenant + " has no subscriber " + quoted(id) },
		broken: "the preferences could not be read or written right now",
	}
}

func registerPreferences(s *Service) {
	const put = "Replaces the choices: a category or channel not named is no longer chosen. Switching off a category routes mark " +
		"required is refused (422, naming categories.<category>), nothing written. The API, the CLI, the hosted preference page and " +
		"one-click unsubscribe all write through the same code."
	own := preferencesResource(s, "/v1/subscribers", "/{id}/preferences")
	getRoute[subscriberInput](s, own, route{Operation: huma.Operation{OperationID: "get-subscriber-preferences",
		Summary: "Get a subscriber's preferences", Description: "Her own choices, the tenant's defaults, and what they come to."}})
	putRoute[subscriberPreferencesInput](s, own, route{Operation: huma.Operation{OperationID: "put-subscriber-preferences",
		Summary: "Set a subscriber's preferences", Description: put, Errors: []int{http.StatusNotFound}}})
	defaults := preferencesResource(s, "/v1/preferences", "/defaults")
	getRoute[defaultsInput](s, defaults, route{Operation: huma.Operation{OperationID: "get-preference-defaults",
		Summary: "Get the tenant's default preferences", Description: "What a subscriber who chose nothing gets."}})
	putRoute[putDefaultsInput](s, defaults, route{Operation: huma.Operation{OperationID: "put-preference-defaults",
		Summary: "Set the tenant's default preferences", Description: put}})
}

// preferencesOf is p as the API shows it, against the routes' categories.
func (s *Service) preferencesOf(p preferenceSet) Preferences {
	required := recipient.RequiredOf(s.cfg.Categories)
	out := Preferences{Tenant: p.tenant, Subscriber: p.subscriber, Categories: p.own, Defaults: p.defaults,
		Required: append([]string{}, required...), Effective: recipient.Choices{}}
	if p.subscriber == "" {
		out.Categories, out.Defaults = p.defaults, nil
	}
	if out.Categories == nil {
		out.Categories = recipient.Choices{}
	}
	for _, cat := range s.categoriesOf(p) {
		out.Effective[cat] = map[event.Channel]bool{}
		for _, ch := range event.Channels {
			out.Effective[cat][ch] = recipient.Allows(p.own, p.defaults, cat, ch, slices.Contains(required, cat))
		}
	}
	return out
}

// categoriesOf are the categories the routes name and those p chooses in.
func (s *Service) categoriesOf(p preferenceSet) []string {
	var out []string
	for _, c := range s.cfg.Categories {
		out = append(out, c.Name)
	}
	for _, c := range []recipient.Choices{p.own, p.defaults} {
		for cat := range c {
			out = append(out, cat)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// preferences is the preference store as the API exposes it: written
// through the directory's one write path, with the routes' required
// categories.
type preferences struct {
	d          *recipient.Directory
	categories []recipient.Category
}

// List is not routed: a subscriber's preferences are read through her.
func (st preferences) List(context.Context, string) ([]preferenceSet, error) {
	return nil, errors.New("api: preferences are not listed")
}

func (st preferences) Get(ctx context.Context, tenant, subscriber string) (preferenceSet, error) {
	if subscriber != "" {
		if _, _, err := st.d.Subscribers.Get(ctx, recipient.SubscriberKey(tenant, subscriber)); err != nil {
			return preferenceSet{}, err
		}
	}
	own, defaults, err := st.d.Choices(ctx, tenant, subscriber)
	if subscriber == "" {
		own = nil // the defaults' key is read as both
	}
	return preferenceSet{tenant: tenant, subscriber: subscriber, own: own, defaults: defaults}, err
}

func (st preferences) Put(ctx context.Context, tenant string, p recipient.Preferences) (preferenceSet, error) {
	if _, err := st.d.SetPreferences(ctx, tenant, p.Subscriber, p.Categories, recipient.RequiredOf(st.categories), false); err != nil {
		return preferenceSet{}, err
	}
	return st.Get(ctx, tenant, p.Subscriber)
}

// Delete is not routed: preferences go with their subscriber.
func (st preferences) Delete(context.Context, string, string) error {
	return errors.New("api: preferences are not removed on their own")
}
