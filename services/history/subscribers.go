package history

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/recipient"
)

// SubscribersStream is the subscribers bucket's KV stream: every put,
// delete and purge of a subscriber, which the index follows. KV is the
// truth; the index only lists and searches.
const SubscribersStream = "KV_" + recipient.SubscribersBucket

// subscriberSubjects prefixes the subjects of SubscribersStream.
const subscriberSubjects = "$KV." + recipient.SubscribersBucket + "."

// changes are one batch's messages read as the index's writes, by feed.
type changes struct {
	accepted, applied []history.Row
	subscribers       []history.SubscriberChange
}

// add reads msg into its feed's writes.
func (c *changes) add(msg jetstream.Msg) error {
	switch subject := msg.Subject(); {
	case strings.HasPrefix(subject, subscriberSubjects):
		change, err := subscriberChange(msg)
		if err != nil {
			return err
		}
		c.subscribers = append(c.subscribers, change)
	case strings.HasPrefix(subject, "$KV."):
		rows, err := ledgerRows(msg)
		if err != nil {
			return err
		}
		c.applied = append(c.applied, rows...)
	default:
		rows, err := acceptedRows(msg)
		if err != nil {
			return err
		}
		c.accepted = append(c.accepted, rows...)
	}
	return nil
}

// write writes the batch; the feeds' tables are apart, so their order
// does not matter.
func (c *changes) write(ctx context.Context, store Store) error {
	if err := store.Accept(ctx, c.accepted); err != nil {
		return err
	}
	if err := store.Apply(ctx, c.applied); err != nil {
		return err
	}
	if len(c.subscribers) == 0 {
		return nil
	}
	return store.ApplySubscribers(ctx, c.subscribers)
}

// subscriberChange reads a change of the subscribers bucket, keyed
// $KV.subscribers.<tenant>.<id as a token>: the subscriber as written, or
// their delete or purge (KV-Operation DEL or PURGE). The KV revision — the
// stream sequence — orders the changes of one subscriber. The key, not the
// value, says whose record it is: it is what the API reads and writes.
func subscriberChange(msg jetstream.Msg) (history.SubscriberChange, error) {
	md, err := msg.Metadata()
	if err != nil {
		return history.SubscriberChange{}, err
	}
	tokens := strings.Split(msg.Subject(), ".")
	if len(tokens) != 4 {
		return history.SubscriberChange{}, fmt.Errorf("not a subscriber's key: %s", msg.Subject())
	}
	id, err := recipient.FromToken(tokens[3])
	if err != nil {
		return history.SubscriberChange{}, err
	}
	c := history.SubscriberChange{Subscriber: history.Subscriber{Tenant: tokens[2], ID: id,
		UpdatedAt: md.Timestamp, Revision: md.Sequence.Stream}}
	if op := msg.Headers().Get("KV-Operation"); op != "" {
		c.Deleted = true
		return c, nil
	}
	var sub recipient.Subscriber
	if err := json.Unmarshal(msg.Data(), &sub); err != nil {
		return history.SubscriberChange{}, fmt.Errorf("unreadable subscriber %s: %w", msg.Subject(), err)
	}
	c.Name, c.Email, c.Phone, c.WhatsApp = sub.Name, sub.Email, sub.Phone, sub.WhatsApp
	c.Locale, c.Timezone = sub.Locale, sub.Timezone
	if !sub.UpdatedAt.IsZero() {
		c.UpdatedAt = sub.UpdatedAt
	}
	return c, nil
}
