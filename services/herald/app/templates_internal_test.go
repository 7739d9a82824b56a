package app

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
)

// A route with steps sends only through its send steps: each is checked
// with the template and channels it will plan with — its own, else the
// route's — and the route's own pair only as their default.
func TestCheckTemplatesChecksEachSendStepAsItPlans(t *testing.T) {
	t.Parallel()
	email, sms, whatsapp := event.ChannelEmail, event.ChannelSMS, event.ChannelWhatsApp
	all := []event.Channel{email, sms, whatsapp}
	send := func(s router.SendStep) router.Step { return router.Step{Send: &s} }
	wait := router.Step{Wait: &router.WaitStep{For: router.Duration(24 * time.Hour), UntilEvent: "order.confirmed"}}
	// The purchase order workflow: the order, a reminder, the buyer told.
	purchaseOrder := router.Route{Event: "order.created", Document: "purchase_order", Roles: []string{"supplier"}, Channels: []event.Channel{email},
		Steps: []router.Step{
			send(router.SendStep{Channels: []event.Channel{email}}), wait,
			send(router.SendStep{Channels: []event.Channel{whatsapp}, Fallback: []event.Channel{sms}, Template: "po_reminder"}), wait,
			send(router.SendStep{Roles: []string{"buyer"}, Channels: []event.Channel{email}, Template: "po_unconfirmed"}),
		}}
	tests := []struct {
		name     string
		channels []event.Channel // the deployment's
		route    router.Route
		want     string // "" when it starts
	}{
		{"the purchase order workflow", all, purchaseOrder, ""},
		{"a step without a template uses the route's, on the route's channels", all,
			router.Route{Event: "order.created", Template: "po_unconfirmed", Channels: []event.Channel{email, sms}, Steps: []router.Step{send(router.SendStep{})}},
			`router.routes[0].steps[0].send.template: no sms template "po_unconfirmed"`},
		{"a step's fallback", all,
			router.Route{Event: "order.created", Document: "purchase_order", Channels: []event.Channel{email}, Steps: []router.Step{wait,
				send(router.SendStep{Channels: []event.Channel{email}, Fallback: []event.Channel{whatsapp}, Template: "po_unconfirmed"})}},
			`router.routes[0].steps[1].send.template: no whatsapp template "po_unconfirmed"`},
		{"a step's channels replace the route's fallback too", all,
			router.Route{Event: "order.created", Template: "po_unconfirmed", Channels: []event.Channel{email}, Fallback: []event.Channel{sms},
				Steps: []router.Step{send(router.SendStep{Channels: []event.Channel{email}})}}, ""},
		{"the route's own pair, when every step names its template", all,
			router.Route{Event: "order.created", Template: "po_unconfirmed", Channels: []event.Channel{sms},
				Steps: []router.Step{send(router.SendStep{Template: "po_reminder"})}}, ""},
		{"a channel the deployment lacks", []event.Channel{email},
			router.Route{Event: "order.created", Document: "purchase_order", Channels: []event.Channel{email},
				Steps: []router.Step{send(router.SendStep{Channels: []event.Channel{whatsapp}, Template: "po_unconfirmed"})}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := checkTemplates(router.Config{Channels: tt.channels, Routes: []router.Route{tt.route}}.WithDefaults())
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}
