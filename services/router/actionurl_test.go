package router

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// linked is a route of the sample order's event with action_url link.
func linked(link string) Config {
	return Config{Routes: []Route{{Event: "order.created", Template: "purchase_order",
		Channels: []event.Channel{event.ChannelEmail}, ActionURL: link}}}.WithDefaults()
}

// actionURLs are the planned deliveries' action URLs.
func actionURLs(d Decision) []string {
	var out []string
	for _, del := range d.Deliveries {
		out = append(out, del.ActionURL)
	}
	return out
}

// A route's action_url is rendered over each event and set on every
// delivery it plans.
func TestARoutesActionURLIsRenderedOverTheEvent(t *testing.T) {
	t.Parallel()
	cfg := linked("https://app.example/orders/{{.Order.ID}}?rev={{.Order.Revision}}&from={{.Order.Buyer.Name | urlquery}}")
	require.NoError(t, cfg.Validate())
	d, err := cfg.decide(nil, sampleEvent(t, nil), now)
	require.NoError(t, err)
	want := "https://app.example/orders/PO-2026-0042?rev=1&from=Frutas+del+Sur+S.L."
	require.Equal(t, []string{want, want}, actionURLs(d))

	d, err = linked("").decide(nil, sampleEvent(t, nil), now)
	require.NoError(t, err)
	require.Equal(t, []string{"", ""}, actionURLs(d), "a route without one sets none")
}

// One that renders for the sample but not to a link for an event is left
// off: the notification still goes, without it.
func TestAnActionURLThatIsNoLinkForAnEventIsLeftOff(t *testing.T) {
	t.Parallel()
	cfg := linked(`{{if eq .Order.ID "PO-1"}}https://app.example/sample{{else}}/orders/{{.Order.ID}}{{end}}`)
	require.NoError(t, cfg.Validate())
	d, err := cfg.decide(nil, sampleEvent(t, nil), now)
	require.NoError(t, err)
	require.Equal(t, []string{"", ""}, actionURLs(d))
}

// Start-up refuses an action_url that does not parse, or that renders
// over a sample event to anything but an absolute http(s) link of at most
// 2048 bytes, naming the route's field.
func TestAnActionURLIsCheckedAtStartUp(t *testing.T) {
	t.Parallel()
	long := "https://app.example/" + strings.Repeat("a", notification.MaxActionURL)
	for link, want := range map[string]string{
		"https://app.example/{{.Order.ID":    "does not parse",
		"https://app.example/{{.Order.Id}}":  "a sample order.created event: does not render",
		"https://app.example/{{.Stock.SKU}}": "a sample order.created event: does not render",
		"/orders/{{.Order.ID}}":              "a sample order.created event: the action URL must be an absolute http or https URL",
		"javascript:alert({{.Order.ID}})":    "a sample order.created event: the action URL must be an absolute http or https URL",
		long:                                 "2068 bytes; at most 2048",
		`https://app.example/{{printf "%02100d" .Order.Revision}}`: "a sample order.created event: the action URL is 2120 bytes; at most 2048",
		"https://app.example/\x1b":                                 "holds a control character",
	} {
		err := linked(link).Validate()
		require.ErrorContains(t, err, "router.routes[0].action_url: "+want, link)
	}
	stock := Config{Routes: []Route{{Event: "inventory.low_stock", Template: "low_stock",
		Channels: []event.Channel{event.ChannelEmail}, ActionURL: "https://app.example/stock/{{.Stock.SKU}}"}}}.WithDefaults()
	require.NoError(t, stock.Validate(), "a stock route's sample is a stock event")
}

// A tenant's workflow is a route: its action_url is checked the same way.
func TestAWorkflowsActionURLIsChecked(t *testing.T) {
	t.Parallel()
	w := Workflow{Name: "orders", Route: Route{Event: "order.created", Template: "purchase_order",
		Channels: []event.Channel{event.ChannelEmail}, ActionURL: "/orders/{{.Order.ID}}"}}
	require.ErrorContains(t, w.Validate(), "workflow.action_url: a sample order.created event: the action URL must be an absolute http or https URL")
}
