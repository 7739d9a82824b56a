package notification

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/telemetry"
)

// Accepted names the notifications one event (or one API request) has just
// created, before any worker claims them, so they can be listed as pending
// (package history). It is published once per event on
// notify.accepted.<tenant>, in the STATUS stream, next to the deliveries
// themselves.
type Accepted struct {
	Tenant        string                 `json:"tenant"`
	EventID       string                 `json:"event_id,omitempty"`
	Notifications []AcceptedNotification `json:"notifications"`
	Time          time.Time              `json:"time"`
}

// AcceptedNotification is one created notification.
type AcceptedNotification struct {
	ID        string `json:"id"`
	Order     string `json:"order,omitempty"`
	Document  string `json:"document"`
	Channel   string `json:"channel"`
	Recipient string `json:"recipient"`
	// State is "skipped" for a notification the router did not plan — the
	// recipient's preference, or a reference that named nobody — with
	// Reason saying why; empty for one created (pending).
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Skipped is the State of a notification not planned, and the start of
// its Reason.
const Skipped = "skipped"

// AcceptedSubject is where a tenant's Accepted records are published.
func AcceptedSubject(tenant string) string { return "notify.accepted." + tenant }

// AcceptedOf describes deliveries, all of one tenant, as one record.
func AcceptedOf(eventID string, deliveries []Delivery, now time.Time) Accepted {
	a := Accepted{EventID: eventID, Time: now.UTC(), Notifications: make([]AcceptedNotification, len(deliveries))}
	for i, d := range deliveries {
		a.Tenant = d.Tenant
		n := AcceptedNotification{ID: d.ID, Document: d.Template, Channel: string(d.Channel), Recipient: d.Recipient.Address}
		if d.Document != nil {
			n.Document = d.Document.Type
		}
		if d.Order != nil {
			n.Order = d.Order.ID
		}
		if d.Message != nil {
			n.Document = "job"
		}
		a.Notifications[i] = n
	}
	return a
}

// PublishAccepted publishes the record. Its Nats-Msg-Id is a digest of the
// notifications' ids, so a redelivered event stores it once, while a
// contact added to the same revision (new ids) is recorded too.
func PublishAccepted(ctx context.Context, js jetstream.Publisher, a Accepted) error {
	if len(a.Notifications) == 0 {
		return nil
	}
	body, err := json.Marshal(a)
	if err != nil {
		return err
	}
	ids := make([]string, len(a.Notifications))
	for i, n := range a.Notifications {
		ids[i] = n.ID
	}
	slices.Sort(ids)
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
	}
	msg := nats.NewMsg(AcceptedSubject(a.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, "accepted:"+hex.EncodeToString(h.Sum(nil)))
	_, err = telemetry.PublishMsg(ctx, js, msg)
	return err
}
