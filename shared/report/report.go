// Package report is what providers tell Herald about messages they
// accepted — delivered, bounced, complained, opened, clicked, unsubscribed —
// once the inbound webhooks (services/inbound) have verified who said it.
//
// A verified report is published to notify.reports.<provider> (stream
// REPORTS) with its provider's event id as Nats-Msg-Id, and the provider is
// answered only then: nothing a provider told Herald is lost to a crash.
// The history service, which holds the index from provider message id to
// notification, joins each report to its notification, keeps it in the
// notification's ledger entry, suppresses the address on a hard bounce or
// a complaint, and tells the tenant on notify.status.<tenant>.
package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/shared/telemetry"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Stream is where verified reports wait to be joined (streams/REPORTS).
const Stream = "REPORTS"

// Subject is where a provider's verified reports are published.
func Subject(provider string) string { return "notify.reports." + provider }

// Kind is what happened to the message.
type Kind string

// The kinds, as the status events name them (report.<kind>).
const (
	// Delivered: the recipient's server (or handset) took the message.
	Delivered Kind = "delivered"
	// Bounced: it did not, for good (Hard) or for now.
	Bounced Kind = "bounced"
	// Complained: the recipient marked it as spam.
	Complained Kind = "complained"
	Opened     Kind = "opened"
	Clicked    Kind = "clicked"
	// Unsubscribed: the recipient unsubscribed through the provider.
	Unsubscribed Kind = "unsubscribed"
)

// Kinds lists every kind.
var Kinds = []Kind{Delivered, Bounced, Complained, Opened, Clicked, Unsubscribed}

// Report is one provider event about one message to one recipient.
type Report struct {
	// Provider is the provider type that reported it: ses, sendgrid, twilio.
	Provider string `json:"provider"`
	// Tenant is set when the request was verified with a tenant's own
	// account: only that tenant's notifications may be joined to it, so a
	// tenant cannot speak about another's. Empty for the platform's.
	Tenant string `json:"tenant,omitempty"`
	// Account is the tenant's account (vault name) that verified it.
	Account string `json:"account,omitempty"`
	// MessageID is the provider's id of the message, as Herald recorded it
	// when the provider accepted it (for SendGrid, the X-Message-Id its
	// sg_message_id begins with).
	MessageID string `json:"message_id"`
	// EventID is the provider's id of this event, unique per provider: a
	// report told again is kept once.
	EventID string `json:"event_id"`
	Kind    Kind   `json:"kind"`
	// Hard is set on a bounce the provider calls permanent: the address
	// is suppressed on the notification's channel. A soft bounce is only
	// recorded.
	Hard bool `json:"hard,omitempty"`
	// EveryChannel is set when the provider says the address itself is
	// at fault, not the channel's way to it (a number that is no number):
	// the suppression holds on every channel the address is reached on.
	EveryChannel bool `json:"every_channel,omitempty"`
	// Recipient is the address the event is about.
	Recipient string `json:"recipient,omitempty"`
	// Detail is the provider's own words: the bounce's diagnostic, the
	// complaint's feedback type, the clicked URL.
	Detail string    `json:"detail,omitempty"`
	Time   time.Time `json:"time"`
}

// Suppresses says whether the report blocks its address: a hard bounce or
// a complaint — only permanent signals do.
func (r Report) Suppresses() bool {
	return r.Kind == Complained || (r.Kind == Bounced && r.Hard)
}

// Check says what a report lacks.
func (r Report) Check() error {
	switch {
	case r.Provider == "":
		return errors.New("report: no provider")
	case r.MessageID == "":
		return errors.New("report: no provider message id")
	case r.EventID == "":
		return errors.New("report: no event id")
	case r.Time.IsZero():
		return errors.New("report: no time")
	}
	for _, k := range Kinds {
		if r.Kind == k {
			return nil
		}
	}
	return fmt.Errorf("report: unknown kind %q", r.Kind)
}

// AckTimeout bounds the wait for the stream to store a request's reports.
const AckTimeout = 10 * time.Second

// Publish stores reports, each once per provider event id within the
// stream's duplicate window (the ledger remembers it after that), and
// returns once the stream has them all.
func Publish(ctx context.Context, js jetstream.Publisher, reports []Report) error {
	msgs := make([]*nats.Msg, len(reports))
	for i, r := range reports {
		if err := r.Check(); err != nil {
			return err
		}
		body, err := json.Marshal(r)
		if err != nil {
			return err
		}
		msgs[i] = nats.NewMsg(Subject(r.Provider))
		msgs[i].Data = body
		msgs[i].Header.Set(jetstream.MsgIDHeader, r.Provider+":"+r.EventID)
	}
	if _, err := telemetry.PublishMsgs(ctx, js, msgs, AckTimeout); err != nil {
		return fmt.Errorf("storing reports: %w", err)
	}
	return nil
}
