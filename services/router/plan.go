package router

import (
	"time"

	"github.com/nats-io/nats.go"
)

// Plan names the notifications the router plans for an event, read as
// decide reads it: the same pure decision, with no I/O. Notification ids
// are digests of their dedupe keys, so these are the ids the router gives
// them when it routes the event — whether it routes it is its own affair
// (a suspended tenant's event is dead-lettered, a second event under an id
// already routed is dropped). An event decide finds invalid plans nothing;
// the error says why. c must have its defaults.
func (c Config) Plan(header nats.Header, payload []byte) ([]string, error) {
	d, err := c.decide(header, payload, time.Time{})
	if err != nil {
		return nil, err
	}
	return d.ids(), nil
}

// ids are the ids of the notifications d plans.
func (d Decision) ids() []string {
	all := d.all()
	ids := make([]string, len(all))
	for i, n := range all {
		ids[i] = n.ID
	}
	return ids
}
