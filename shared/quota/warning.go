package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Threshold is a share of a quota the tenant is told about when its month
// reaches it.
type Threshold int

// The thresholds: 80 % is a warning, 100 % means the next notification of
// the month on that channel is refused.
const (
	Warning   Threshold = 80
	Exhausted Threshold = 100
)

// Type is the status event's type: tenant.quota.warning or
// tenant.quota.exceeded.
func (t Threshold) Type() string {
	if t >= Exhausted {
		return ExceededType
	}
	return WarningType
}

// The types of Event; webhook endpoints subscribe to them as tenant.*.
const (
	WarningType  = "tenant.quota.warning"
	ExceededType = "tenant.quota.exceeded"
)

// at is the count that reaches t of quota: the smallest count that is at
// least t percent of it.
func (t Threshold) at(quota int64) int64 {
	return (quota*int64(t) + 99) / 100
}

// crossed are the thresholds a count of used reaches exactly. Counts grow
// by one, and a refused notification is taken off again, so exactly one
// counted notification of a month reaches each (until the quota changes).
func crossed(used, quota int64) []Threshold {
	var out []Threshold
	for _, t := range []Threshold{Warning, Exhausted} {
		if used == t.at(quota) {
			out = append(out, t)
		}
	}
	return out
}

// Event tells a tenant, on notify.status.<tenant> beside its outcomes,
// that its month reached a threshold of a channel's quota.
type Event struct {
	Type      string        `json:"type"` // WarningType or ExceededType
	Tenant    string        `json:"tenant"`
	Channel   event.Channel `json:"channel"`
	Month     string        `json:"month"`
	Used      int64         `json:"used"`
	Quota     int64         `json:"quota"`
	Threshold int           `json:"threshold"` // percent
	Time      time.Time     `json:"time"`
}

// Events are the events u should tell, one per threshold it crossed.
func (u Use) Events(now time.Time) []Event {
	out := make([]Event, 0, len(u.Crossed))
	for _, t := range u.Crossed {
		out = append(out, Event{Type: t.Type(), Tenant: u.Tenant, Channel: u.Channel, Month: u.Month,
			Used: u.Used, Quota: u.PerMonth, Threshold: int(t), Time: now.UTC()})
	}
	return out
}

// MsgID names one threshold of one tenant's channel in one month, so that
// telling it twice stores it once.
func (ev Event) MsgID() string {
	return fmt.Sprintf("quota:%s:%s:%s:%d:%d", ev.Tenant, ev.Channel, ev.Month, ev.Quota, ev.Threshold)
}

// String is the event as an operator reads it.
func (ev Event) String() string {
	return fmt.Sprintf("tenant %q used %d%% of its %s quota: %d/%d (%s)", ev.Tenant, ev.Threshold, ev.Channel, ev.Used, ev.Quota, ev.Month)
}

// Publish publishes the event on the tenant's status subject.
func Publish(ctx context.Context, js jetstream.Publisher, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(notification.StatusSubject(ev.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, ev.MsgID())
	_, err = telemetry.PublishMsg(ctx, js, msg)
	return err
}
