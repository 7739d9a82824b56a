package notification

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/report"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Status is an outcome event, published on notify.status.<tenant> for
// publishers and dashboards when a notification is delivered, given up or
// suppressed — and again for each report its provider makes of it later.
type Status struct {
	// Type is "notification." and the state, or "report." and the
	// report's kind: what a reader of notify.status.<tenant> tells
	// outcomes from the other events there (EndpointDisabled) by.
	// PublishStatus and PublishReport fill it in.
	Type           string        `json:"type,omitempty"`
	NotificationID string        `json:"notification_id"`
	DedupeKey      string        `json:"dedupe_key"`
	Tenant         string        `json:"tenant"`
	Channel        event.Channel `json:"channel"`
	// State is delivered, failed or suppressed; on a report, its kind.
	State string `json:"state"`
	// Template is the notification's: the webhook status feed skips its
	// own deliveries' outcomes (FeedTemplate), which would feed it forever.
	Template          string `json:"template,omitempty"`
	Provider          string `json:"provider,omitempty"`
	ProviderMessageID string `json:"provider_message_id,omitempty"`
	Reason            string `json:"reason,omitempty"`
	Retryable         bool   `json:"retryable,omitempty"`
	Tries             int    `json:"tries"`
	EventID           string `json:"event_id,omitempty"`
	// Report is what the provider told of the message after accepting
	// it, on a report.<kind> event; State is then the report's kind.
	Report *report.Report `json:"report,omitempty"`
	Time   time.Time      `json:"time"`
}

// OutcomeOf is the outcome a write of the ledger tells — a notification
// delivered, given up or suppressed — when that write is the one that
// settled it (ledger.Entry.Outcome). Outcomes are not published apart:
// the ledger's own changes, consumed as a stream (KV_deliveries), are
// the outcome events.
func OutcomeOf(e ledger.Entry) (Status, bool) {
	if !e.Outcome() {
		return Status{}, false
	}
	return Status{
		Type: "notification." + string(e.State), NotificationID: e.NotificationID, DedupeKey: e.DedupeKey, Tenant: e.Tenant,
		Channel: event.Channel(e.Channel), State: string(e.State), Template: e.Template, Provider: e.Provider,
		ProviderMessageID: e.ProviderMessageID, Reason: e.Reason, Retryable: e.Retryable, Tries: e.Tries, EventID: e.EventID,
		Time: e.SettledAt,
	}, true
}

// ReportType is the type of the status event a provider's report makes:
// report.delivered, report.bounced… — not notification.delivered, which
// says a provider accepted the message, before any of these.
func ReportType(k report.Kind) string { return "report." + string(k) }

// PublishReport tells the tenant what a provider reported about one of its
// notifications. Its Nats-Msg-Id names the provider's event, so telling
// the same report twice stores it once.
func PublishReport(ctx context.Context, js jetstream.Publisher, st Status, r report.Report) error {
	st.Type, st.State, st.Report = ReportType(r.Kind), string(r.Kind), &r
	return publish(ctx, js, StatusSubject(st.Tenant), st.DedupeKey+":report:"+r.Provider+":"+r.EventID, st)
}

// FeedTemplate is the template of the webhooks that carry status events.
const FeedTemplate = "status_event"

// StatusSubject is where a tenant's outcome events are published.
func StatusSubject(tenant string) string { return "notify.status." + tenant }

// PublishStatus publishes an outcome event. Its Nats-Msg-Id is the dedupe
// key and state, so telling the same outcome twice stores it once.
func PublishStatus(ctx context.Context, js jetstream.Publisher, st Status) error {
	if st.Type == "" {
		st.Type = "notification." + st.State
	}
	return publish(ctx, js, StatusSubject(st.Tenant), st.DedupeKey+":"+st.State, st)
}

// EndpointDisabledType is the type of EndpointDisabled.
const EndpointDisabledType = "webhook.endpoint_disabled"

// EndpointDisabled is what the tenant is told, on notify.status.<tenant>
// beside its outcomes, when Herald stops sending to one of its webhook
// endpoints: it answered 410 Gone, or kept failing for
// webhooks.disable_after. The status feed sends it to the tenant's other
// endpoints that want it.
type EndpointDisabled struct {
	Type       string `json:"type"` // EndpointDisabledType
	Tenant     string `json:"tenant"`
	EndpointID string `json:"endpoint_id"`
	// URL is the endpoint's scheme and host: its path or query may hold a
	// token, and this event travels further than the registry.
	URL    string `json:"url"`
	Reason string `json:"reason"`
	// NotificationID is the webhook whose answer disabled the endpoint.
	NotificationID string    `json:"notification_id,omitempty"`
	Time           time.Time `json:"time"`
}

// PublishEndpointDisabled publishes the event. Its Nats-Msg-Id is the
// endpoint and when it was disabled, so telling it twice stores it once,
// while the same endpoint disabled again, after it was enabled, is news.
func PublishEndpointDisabled(ctx context.Context, js jetstream.Publisher, ev EndpointDisabled) error {
	ev.Type = EndpointDisabledType
	return publish(ctx, js, StatusSubject(ev.Tenant), ev.MsgID(), ev)
}

// MsgID names one disabling of one endpoint.
func (ev EndpointDisabled) MsgID() string {
	return fmt.Sprintf("endpoint_disabled:%s:%d", ev.EndpointID, ev.Time.UnixNano())
}

func publish(ctx context.Context, js jetstream.Publisher, subject, msgID string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(subject)
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	_, err = telemetry.PublishMsg(ctx, js, msg)
	return err
}
