package recipient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/shared/resource"
)

// MaxMemberChange is the most ids one ChangeMembers adds, and the most it
// removes, as an import stores at most MaxImport subscribers.
const MaxMemberChange = MaxImport

// MembersChanged is what ChangeMembers did.
type MembersChanged struct {
	Tenant  string `json:"tenant"`
	Topic   string `json:"topic"`
	Added   int    `json:"added" doc:"Subscribers not on the topic before."`
	Removed int    `json:"removed" doc:"Subscribers that were on it."`
	Members int    `json:"members" doc:"How many it has now."`
}

// ChangeMembers adds the subscribers add names to the tenant's topic and
// removes those remove names, once every id is checked: each added one
// must be a subscriber, and the topic may not grow past most members. A
// refusal names the field (add[3]) and writes nothing. An id already on
// the topic, or not on it to remove, is no error. A topic's members are
// subscribers, never topics or accounts, so no cycle can form.
func (d *Directory) ChangeMembers(ctx context.Context, tenant, topic string, add, remove []string, most int) (MembersChanged, error) {
	if err := checkChange(add, remove); err != nil {
		return MembersChanged{}, err
	}
	if _, _, err := d.Topics.Get(ctx, TopicKey(tenant, topic)); err != nil {
		return MembersChanged{}, err
	}
	keys, err := d.Memberships.KeysUnder(ctx, MembersPrefix(tenant, topic))
	if err != nil {
		return MembersChanged{}, err
	}
	on := make(map[string]bool, len(keys))
	for _, k := range keys {
		on[k] = true
	}
	adding, err := d.toAdd(ctx, tenant, topic, add, on)
	if err != nil {
		return MembersChanged{}, err
	}
	removing := toRemove(tenant, topic, remove, on)
	if n := len(on) + len(adding) - len(removing); n > most {
		return MembersChanged{}, invalid(fmt.Sprintf("add: the topic would have %d members, more than %d; nothing was written", n, most))
	}
	return d.applyChange(ctx, tenant, topic, adding, removing, len(on))
}

// checkChange refuses more ids than a change takes, and ids that are
// not ids, naming the first.
func checkChange(add, remove []string) error {
	fields := []struct {
		name string
		ids  []string
	}{{"add", add}, {"remove", remove}}
	for _, f := range fields {
		if len(f.ids) > MaxMemberChange {
			return invalid(fmt.Sprintf("%s: %d ids, more than %d a call; nothing was written", f.name, len(f.ids), MaxMemberChange))
		}
	}
	var p problems
	for _, f := range fields {
		for i, id := range f.ids {
			if err := CheckID(id); err != nil {
				p.add(fmt.Sprintf("%s[%d]", f.name, i), "%v", err)
				break
			}
		}
	}
	return p.err()
}

// toAdd are the memberships to write for ids: those not on the topic
// already, each checked to be a subscriber.
func (d *Directory) toAdd(ctx context.Context, tenant, topic string, ids []string, on map[string]bool) ([]Membership, error) {
	var out []Membership
	seen := map[string]bool{}
	for i, id := range ids {
		key := MembershipKey(tenant, topic, id)
		if on[key] || seen[key] {
			continue
		}
		seen[key] = true
		if _, _, err := d.Subscribers.Get(ctx, SubscriberKey(tenant, id)); err != nil {
			if errors.Is(err, resource.ErrNotFound) {
				return nil, invalid(fmt.Sprintf("add[%d]: %s is not a subscriber; nothing was written", i, quote(id)))
			}
			return nil, err
		}
		out = append(out, Membership{Tenant: tenant, Topic: topic, Subscriber: id, AddedAt: time.Now().UTC()})
	}
	return out, nil
}

// toRemove are the keys of the memberships ids names that there are.
func toRemove(tenant, topic string, ids []string, on map[string]bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		if key := MembershipKey(tenant, topic, id); on[key] && !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	}
	return out
}

func (d *Directory) applyChange(ctx context.Context, tenant, topic string, add []Membership, remove []string, before int) (MembersChanged, error) {
	for _, m := range add {
		if _, err := d.Memberships.Put(ctx, m); err != nil {
			return MembersChanged{}, err
		}
	}
	for _, key := range remove {
		if err := d.Memberships.Delete(ctx, key); err != nil && !errors.Is(err, resource.ErrNotFound) {
			return MembersChanged{}, err
		}
	}
	return MembersChanged{Tenant: tenant, Topic: topic, Added: len(add), Removed: len(remove),
		Members: before + len(add) - len(remove)}, nil
}

// Members is a page of the tenant's topic's memberships, and the key the
// next page starts after; ErrNoTopic for a topic the tenant does not have.
func (d *Directory) Members(ctx context.Context, tenant, topic string, p resource.Page) ([]Membership, string, error) {
	if _, _, err := d.Topics.Get(ctx, TopicKey(tenant, topic)); err != nil {
		return nil, "", err
	}
	return d.Memberships.ListUnder(ctx, MembersPrefix(tenant, topic), p)
}

// DeleteTopic removes the tenant's topic and its memberships — the
// memberships first: stopped part way, the topic is still there to remove
// again, never memberships of no topic. Its subscribers stay.
func (d *Directory) DeleteTopic(ctx context.Context, tenant, topic string) error {
	if _, _, err := d.Topics.Get(ctx, TopicKey(tenant, topic)); err != nil {
		return err
	}
	if _, err := d.Memberships.DeleteUnder(ctx, MembersPrefix(tenant, topic)); err != nil {
		return err
	}
	return d.Topics.Delete(ctx, TopicKey(tenant, topic))
}
