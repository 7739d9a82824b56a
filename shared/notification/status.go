package notification

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Status is an outcome event, published on notify.status.<tenant> for
// publishers and dashboards when a notification is delivered or given up.
type Status struct {
	NotificationID string        `json:"notification_id"`
	DedupeKey      string        `json:"dedupe_key"`
	Tenant         string        `json:"tenant"`
	Channel        event.Channel `json:"channel"`
	State          string        `json:"state"` // delivered | failed
	// Template is the notification's: the webhook status feed skips its
	// own deliveries' outcomes (FeedTemplate), which would feed it forever.
	Template          string    `json:"template,omitempty"`
	Provider          string    `json:"provider,omitempty"`
	ProviderMessageID string    `json:"provider_message_id,omitempty"`
	Reason            string    `json:"reason,omitempty"`
	Retryable         bool      `json:"retryable,omitempty"`
	Tries             int       `json:"tries"`
	EventID           string    `json:"event_id,omitempty"`
	Time              time.Time `json:"time"`
}

// FeedTemplate is the template of the webhooks that carry status events.
const FeedTemplate = "status_event"

// StatusSubject is where a tenant's outcome events are published.
func StatusSubject(tenant string) string { return "notify.status." + tenant }

// PublishStatus publishes an outcome event. Its Nats-Msg-Id is the dedupe
// key and state, so telling the same outcome twice stores it once.
func PublishStatus(ctx context.Context, js jetstream.Publisher, st Status) error {
	body, err := json.Marshal(st)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(StatusSubject(st.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, st.DedupeKey+":"+st.State)
	_, err = telemetry.PublishMsg(ctx, js, msg)
	return err
}
