package router

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/suppression"
)

// Route is one rule: events of this type (and order kind) notify the
// recipients in these roles, on these channels, about this document.
type Route struct {
	// Event is the CloudEvents type, e.g. order.created.
	Event string `yaml:"event" json:"event"`
	// Kind restricts an order route to purchase or sales orders.
	// Defaults to any kind.
	Kind event.Kind `yaml:"kind,omitempty" json:"kind,omitempty"`
	// Document is the business document the notification carries. Empty for
	// notifications without one (stock alerts).
	Document string `yaml:"document,omitempty" json:"document,omitempty"`
	// Template renders the message. Defaults to Document.
	Template string `yaml:"template,omitempty" json:"template,omitempty"`
	// Roles are the recipient roles notified (case-insensitive).
	// Defaults to every recipient the event lists.
	Roles []string `yaml:"roles,omitempty" json:"roles,omitempty"`
	// AccountRoles are the roles, within an order party's account, of the
	// people the route reaches when the event lists no recipient of a role
	// it wants and that party names its account (order.supplier.account):
	// supplier and seller are the supplier party, buyer and customer the
	// buyer party. Defaults to every member of the account.
	AccountRoles []string `yaml:"account_roles,omitempty" json:"account_roles,omitempty"`
	// Channels are the channels used, where the recipient has them too.
	Channels []event.Channel `yaml:"channels,omitempty" json:"channels,omitempty"`
	// Fallback, instead of or besides Channels, reaches each recipient on
	// the first of these channels that works (of those the recipient has
	// and this deployment delivers on): a permanent failure or running out
	// of tries on one hands the notification to the next, once.
	Fallback []event.Channel `yaml:"fallback,omitempty" json:"fallback,omitempty"`
	// Priority of the deliveries. Defaults to normal.
	Priority notification.Priority `yaml:"priority,omitempty" json:"priority,omitempty"`
	// Category is what the route's notifications are about for their
	// recipients ("documents", "alerts"): what a recipient may unsubscribe
	// from, through the link its emails carry (RFC 8058 one-click). Empty:
	// none to unsubscribe from.
	Category string `yaml:"category,omitempty" json:"category,omitempty"`
	// Required marks notifications a recipient cannot unsubscribe from —
	// business documents the trade depends on: no unsubscribe link, and an
	// unsubscribe from the category does not hold them back.
	Required bool `yaml:"required,omitempty" json:"required,omitempty"`
	// ActionURL is the link the route's notifications open — "Open" on an
	// inbox item, the click of a push: a template over the event's data
	// ("https://app.example/orders/{{.Order.ID}}") rendering to an absolute
	// http(s) URL of at most 2048 bytes. Defaults to none.
	ActionURL string `yaml:"action_url,omitempty" json:"action_url,omitempty"`
	// Ordered keeps an order's revisions in order for each recipient and
	// channel: revision N+1 is not handed to a provider before revision N
	// is settled (delivered, failed for good, suppressed, skipped or
	// dead-lettered). Other orders are never held. Only for order events,
	// and not for a workflow's sends, which wait for their steps' times.
	// Defaults to true for a route that carries a document and has no
	// steps, false otherwise.
	Ordered *bool `yaml:"ordered,omitempty" json:"ordered,omitempty"`
	// Steps make the route a workflow: each recipient it reaches gets a
	// run that takes them in order (send, wait, throttle, digest,
	// window). Defaults to none: one send, at once.
	Steps []Step `yaml:"steps,omitempty" json:"steps,omitempty"`
	// CancelOn are event types (order.cancelled) that end every run of
	// the route for the same order. Defaults to none.
	CancelOn []string `yaml:"cancel_on,omitempty" json:"cancel_on,omitempty"`
	// Stage is the workflow step a send plans for (not configured: set
	// when a run's send step is planned), part of its dedupe keys.
	Stage int `yaml:"-" json:"stage,omitempty"`
	// Run is the workflow run a send plans for (not configured: set when a
	// run's send step is planned and a later wait waits for its status),
	// named on its deliveries.
	Run *notification.RunRef `yaml:"-" json:"run,omitempty"`
}

// stage is what the dedupe keys of a workflow's later steps add: none for
// its first step, so a route that becomes a workflow does not send again
// what it sent before.
func (r Route) stage() string {
	if r.Stage == 0 {
		return ""
	}
	return "#s" + strconv.Itoa(r.Stage)
}

// DefaultRoutes are the routes docs/ARCHITECTURE.md describes. A purchase order goes to
// the supplier and, as the buyer's copy, to the buyer's own contacts; each
// later document goes to the party that must act on it.
func DefaultRoutes() []Route {
	docs := []event.Channel{event.ChannelEmail}
	// Business documents are required: a supplier cannot unsubscribe from
	// the purchase orders it is to fulfil. Alerts a recipient may leave.
	document := func(r Route) Route { r.Channels, r.Category, r.Required = docs, CategoryDocuments, true; return r }
	// Within a party's account, each document goes to the people who act
	// on it: an order to sales, a delivery note to the warehouse that
	// receives the goods, a goods received note to the sales contact whose
	// delivery it confirms, an invoice to accounts payable.
	sales, warehouse, payable := []string{"sales"}, []string{"warehouse"}, []string{"accounts_payable"}
	return []Route{
		document(Route{Event: "order.created", Kind: event.KindPurchase, Document: notification.PurchaseOrder, Roles: []string{"supplier", "buyer"}, AccountRoles: sales}),
		document(Route{Event: "order.created", Kind: event.KindSales, Document: notification.SalesOrder, Roles: []string{"customer", "seller"}, AccountRoles: sales}),
		document(Route{Event: "order.updated", Kind: event.KindPurchase, Document: notification.PurchaseOrder, Roles: []string{"supplier", "buyer"}, AccountRoles: sales}),
		document(Route{Event: "order.updated", Kind: event.KindSales, Document: notification.SalesOrder, Roles: []string{"customer", "seller"}, AccountRoles: sales}),
		document(Route{Event: "order.shipped", Document: notification.DeliveryNote, Roles: []string{"buyer", "customer"}, AccountRoles: warehouse}),
		document(Route{Event: "order.received", Document: notification.GoodsReceivedNote, Roles: []string{"supplier", "seller"}, AccountRoles: sales}),
		document(Route{Event: "order.invoiced", Document: notification.Invoice, Roles: []string{"buyer", "customer"}, AccountRoles: payable}),
		{Event: "inventory.low_stock", Template: "low_stock", Roles: []string{"warehouse"}, Channels: []event.Channel{event.ChannelSMS, event.ChannelWhatsApp},
			Priority: notification.PriorityCritical, Category: CategoryAlerts},
	}
}

var templatePattern = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)

// The default routes' categories.
const (
	CategoryDocuments = "documents"
	CategoryAlerts    = "alerts"
)

// ordered reports whether the route's notifications wait for their order's
// earlier revisions (Ordered, or its default).
func (r Route) ordered() bool {
	if r.Ordered != nil {
		return *r.Ordered
	}
	return r.Document != "" && len(r.Steps) == 0
}

// withDefaults fills a route's optional fields.
func (r Route) withDefaults() Route {
	if r.Template == "" {
		r.Template = r.Document
	}
	if r.Priority == "" {
		r.Priority = notification.PriorityNormal
	}
	if r.Roles != nil {
		r.Roles = recipient.NormalizeRoles(r.Roles)
	}
	if r.AccountRoles != nil {
		r.AccountRoles = recipient.NormalizeRoles(r.AccountRoles)
	}
	r.Steps = stepsWithDefaults(r.Steps)
	return r
}

// validate returns plain-English problems, each naming the field.
func (r Route) validate(field string) []string {
	var out []string
	bad := func(f, format string, args ...any) {
		out = append(out, fmt.Sprintf("%s.%s: %s", field, f, fmt.Sprintf(format, args...)))
	}
	family, _, _ := strings.Cut(r.Event, ".")
	if _, err := event.Subject(r.Event); err != nil {
		bad("event", "%v", err)
	}
	switch {
	case family == "inventory" && r.Document != "":
		bad("document", "inventory events carry no document (got %q)", r.Document)
	case r.Document != "" && !slices.Contains(notification.DocumentTypes, r.Document):
		bad("document", "%q is not a document type (want one of %v)", r.Document, notification.DocumentTypes)
	}
	if r.Kind != "" && (family != "order" || (r.Kind != event.KindPurchase && r.Kind != event.KindSales)) {
		bad("kind", "%q applies only to order events and must be purchase or sales", r.Kind)
	}
	if !templatePattern.MatchString(r.Template) {
		bad("template", "%q must be 1-64 lowercase letters, digits or '_' (required when there is no document)", r.Template)
	}
	if err := recipient.CheckRoles(r.AccountRoles); err != nil {
		bad("account_roles", "%v", err)
	}
	if len(r.AccountRoles) > 0 && !slices.ContainsFunc(r.Roles, func(role string) bool { _, ok := partyOf(event.Order{}, role); return ok }) {
		bad("account_roles", "the route wants no role an order party plays (supplier, seller, buyer, customer), so no account is ever looked up")
	}
	// A workflow's sends may each name their channels; those that do not
	// use the route's, and checkSend says when there are none to use.
	if len(r.Channels) == 0 && len(r.Fallback) == 0 && len(r.Steps) == 0 {
		bad("channels", "at least one channel is required, or a fallback (want some of %v)", event.Channels)
	}
	for _, c := range r.Channels {
		if !slices.Contains(event.Channels, c) {
			bad("channels", "%q is not a channel (want some of %v)", c, event.Channels)
		}
	}
	for _, c := range r.Fallback {
		if !slices.Contains(event.Channels, c) {
			bad("fallback", "%q is not a channel (want some of %v)", c, event.Channels)
		}
	}
	for i, c := range r.Fallback {
		if slices.Contains(r.Fallback[:i], c) || slices.Contains(r.Channels, c) {
			bad("fallback", "%q is named twice: a recipient hears once per channel", c)
		}
	}
	if !slices.Contains(notification.Priorities, r.Priority) {
		bad("priority", "%q is not a priority (want one of %v)", r.Priority, notification.Priorities)
	}
	if r.Category != "" && !suppression.ValidCategory(r.Category) {
		bad("category", "%q must be 1-64 letters, digits, '-' or '_'", r.Category)
	}
	if r.Required && r.Category == "" {
		bad("required", "a required route names its category, for recipients to see what they cannot leave")
	}
	if r.Ordered != nil && *r.Ordered && (family != "order" || len(r.Steps) > 0) {
		bad("ordered", "only an order event's route without steps keeps revisions in order (a workflow's sends wait for their steps' times)")
	}
	if r.ActionURL != "" {
		if err := checkActionURL(r.ActionURL, r.Event); err != nil {
			bad("action_url", "%v", err)
		}
	}
	return append(out, r.validateWorkflow(field)...)
}

// matches reports whether the route applies to an event of this type and
// order kind (kind is empty for events without an order).
func (r Route) matches(eventType string, kind event.Kind) bool {
	return r.Event == eventType && (r.Kind == "" || r.Kind == kind)
}

// partyOf is the order party a recipient role is: supplier and seller
// are the supplier party, buyer and customer the buyer party, whichever
// side of the trade issued the order.
func partyOf(o event.Order, role string) (event.Party, bool) {
	switch role {
	case "supplier", "seller":
		return o.Supplier, true
	case "buyer", "customer":
		return o.Buyer, true
	}
	return event.Party{}, false
}

// wants reports whether the route notifies a recipient with this role.
func (r Route) wants(role string) bool {
	return len(r.Roles) == 0 || slices.Contains(r.Roles, strings.ToLower(strings.TrimSpace(role)))
}

// Categories are the categories routes name, sorted, each required when
// any route naming it is — what recipients' preferences choose among.
func Categories(routes []Route) []recipient.Category {
	required := map[string]bool{}
	for _, r := range routes {
		if r.Category != "" {
			required[r.Category] = required[r.Category] || r.Required
		}
	}
	out := make([]recipient.Category, 0, len(required))
	for name, req := range required {
		out = append(out, recipient.Category{Name: name, Required: req})
	}
	slices.SortFunc(out, func(a, b recipient.Category) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// SendStepRoute is the route send step i plans with (the step's template,
// channels and fallback in place of the route's): what start-up checks a
// step's templates against, resolved as the run resolves them.
func (r Route) SendStepRoute(i int) Route { return r.stepRoute(i) }
