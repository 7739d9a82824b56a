package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/resource"
)

// directory is the Directory the router plans with: the subscribers,
// accounts and preferences in memory, and the members of each topic,
// each kept current by a watch of its bucket and loaded before the router
// consumes — a reference costs map reads, not a round trip per recipient.
type directory struct {
	subscribers *resource.Cache[recipient.Subscriber]
	accounts    *resource.Cache[recipient.Account]
	preferences *recipient.PreferenceCache
	topics      *topicIndex
	devices     *deviceIndex
	watches     []interface{ Stop() }
	// stores read what the watches have not delivered yet (fetch).
	stores *recipient.Directory
}

// watchDirectory loads the recipient buckets and follows them.
func watchDirectory(ctx context.Context, js jetstream.JetStream) (*directory, error) {
	stores, err := recipient.Open(ctx, js)
	if err != nil {
		return nil, err
	}
	d := &directory{stores: stores, topics: &topicIndex{members: map[string]map[string]bool{}, sorted: map[string][]string{}},
		devices: &deviceIndex{devices: map[string]map[string]bool{}}}
	if d.subscribers, err = resource.Watch(ctx, js, recipient.Subscribers); err == nil {
		d.watches = append(d.watches, d.subscribers)
		d.accounts, err = resource.Watch(ctx, js, recipient.Accounts)
	}
	if err == nil {
		d.watches = append(d.watches, d.accounts)
		d.preferences, err = recipient.WatchPreferences(ctx, js)
	}
	if err == nil {
		d.watches = append(d.watches, d.preferences)
		var members *resource.Feed
		members, err = resource.Follow(ctx, js, recipient.Memberships, d.topics.apply)
		if err == nil {
			d.watches = append(d.watches, members)
		}
	}
	if err == nil {
		var devices *resource.Feed
		if devices, err = resource.Follow(ctx, js, recipient.Devices, d.devices.apply); err == nil {
			d.watches = append(d.watches, devices)
		}
	}
	if err != nil {
		d.Stop()
		return nil, fmt.Errorf("router: the recipients: %w", err)
	}
	return d, nil
}

// Stop ends the watches.
func (d *directory) Stop() {
	for _, w := range d.watches {
		w.Stop()
	}
}

func (d *directory) Subscriber(tenant, id string) (recipient.Subscriber, bool) {
	return d.subscribers.Get(recipient.SubscriberKey(tenant, id))
}

func (d *directory) Account(tenant, id string) (recipient.Account, bool) {
	return d.accounts.Get(recipient.AccountKey(tenant, id))
}

func (d *directory) Members(tenant, topic string) []string {
	return d.topics.sortedMembers(recipient.MembersPrefix(tenant, topic))
}

func (d *directory) Choices(tenant, subscriber string) (own, defaults recipient.Choices) {
	return d.preferences.Choices(tenant, subscriber)
}

func (d *directory) HasDevices(tenant, subscriber string) bool {
	return d.devices.has(recipient.DevicesPrefix(tenant, subscriber))
}

// fetched is the directory with the records one event named that its
// watches had not delivered yet, read from the buckets: a subscriber or
// an account made a moment before the event is not skipped. It serves
// that one event, so nothing read here outlives a later change.
type fetched struct {
	Directory
	subscribers map[string]recipient.Subscriber
	accounts    map[string]recipient.Account
	tried       map[lookup]bool
}

func (d *directory) overlay() *fetched {
	return &fetched{Directory: d, subscribers: map[string]recipient.Subscriber{}, accounts: map[string]recipient.Account{},
		tried: map[lookup]bool{}}
}

func (f *fetched) Subscriber(tenant, id string) (recipient.Subscriber, bool) {
	if s, ok := f.subscribers[recipient.SubscriberKey(tenant, id)]; ok {
		return s, true
	}
	return f.Directory.Subscriber(tenant, id)
}

func (f *fetched) Account(tenant, id string) (recipient.Account, bool) {
	if a, ok := f.accounts[recipient.AccountKey(tenant, id)]; ok {
		return a, true
	}
	return f.Directory.Account(tenant, id)
}

// fetch reads each of missing not read before, once, at most limit
// reads in all, and reports whether any was found. A record the bucket
// does not have either names nobody.
func (d *directory) fetch(ctx context.Context, tenant string, missing []lookup, into *fetched, limit int) (bool, error) {
	found := false
	for _, m := range missing {
		if into.tried[m] || len(into.tried) >= limit {
			continue
		}
		into.tried[m] = true
		var err error
		switch m.kind {
		case "subscriber":
			key := recipient.SubscriberKey(tenant, m.id)
			var s recipient.Subscriber
			if s, _, err = d.stores.Subscribers.Get(ctx, key); err == nil {
				into.subscribers[key] = s
			}
		case "account":
			key := recipient.AccountKey(tenant, m.id)
			var a recipient.Account
			if a, _, err = d.stores.Accounts.Get(ctx, key); err == nil {
				into.accounts[key] = a
			}
		}
		switch {
		case err == nil:
			found = true
		case !errors.Is(err, resource.ErrNotFound):
			return false, fmt.Errorf("reading %s's %s the event names: %w", tenant, m.kind, err)
		}
	}
	return found, nil
}

// topicIndex is the members of every topic, by the topic's key prefix
// (recipient.MembersPrefix), followed from the memberships bucket. A
// topic's sorted list is made when first asked for after a change.
type topicIndex struct {
	mu      sync.RWMutex
	members map[string]map[string]bool
	sorted  map[string][]string
}

// apply takes one membership's change: its key is the topic's prefix and
// the subscriber's token, so a delete, which has no value, is read too.
func (x *topicIndex) apply(key string, _ recipient.Membership, ok bool) {
	i := strings.LastIndexByte(key, '.')
	if i < 0 {
		return
	}
	topic := key[:i]
	id, err := recipient.FromToken(key[i+1:])
	if err != nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.sorted, topic)
	switch {
	case ok && x.members[topic] == nil:
		x.members[topic] = map[string]bool{id: true}
	case ok:
		x.members[topic][id] = true
	default:
		delete(x.members[topic], id)
		if len(x.members[topic]) == 0 {
			delete(x.members, topic)
		}
	}
}

// sortedMembers are a topic's subscribers, sorted by id; the slice is
// shared, and read only.
func (x *topicIndex) sortedMembers(topic string) []string {
	x.mu.RLock()
	s, ok := x.sorted[topic]
	x.mu.RUnlock()
	if ok {
		return s
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if s, ok := x.sorted[topic]; ok {
		return s
	}
	s = make([]string, 0, len(x.members[topic]))
	for id := range x.members[topic] {
		s = append(s, id)
	}
	slices.Sort(s)
	x.sorted[topic] = s
	return s
}

// deviceIndex is each subscriber's push devices, by her key prefix
// (recipient.DevicesPrefix), followed from the devices bucket: the router
// asks only whether she has one.
type deviceIndex struct {
	mu      sync.RWMutex
	devices map[string]map[string]bool
}

// apply takes one device's change: its key is the subscriber's prefix and
// the device's token, so a delete, which has no value, is read too.
func (x *deviceIndex) apply(key string, _ recipient.Device, ok bool) {
	i := strings.LastIndexByte(key, '.')
	if i < 0 {
		return
	}
	subscriber, device := key[:i], key[i+1:]
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case ok && x.devices[subscriber] == nil:
		x.devices[subscriber] = map[string]bool{device: true}
	case ok:
		x.devices[subscriber][device] = true
	default:
		delete(x.devices[subscriber], device)
		if len(x.devices[subscriber]) == 0 {
			delete(x.devices, subscriber)
		}
	}
}

func (x *deviceIndex) has(subscriber string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.devices[subscriber]) > 0
}
