package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/recipient"
	records "github.com/heraldhq/herald/shared/resource"
)

// Topic bounds. A call changes at most 10,000 members, as an import
// stores at most 10,000 subscribers; a topic's own size is
// Config.MaxTopicMembers.
const (
	maxMemberChange = 10_000
	// topicTimeout bounds a call that writes up to maxMemberChange
	// memberships, or removes all of a topic's.
	topicTimeout = 2 * time.Minute
)

// Topic is a named list of the tenant's subscribers, for fan-out.
type Topic struct {
	Tenant string `json:"tenant"`
	ID     string `json:"id" example:"warehouse-sevilla"`
	TopicBody
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// TopicBody is a topic as PUT writes it.
type TopicBody struct {
	Name string `json:"name,omitempty" example:"Sevilla warehouse"`
}

// TopicMember is a subscriber on a topic.
type TopicMember struct {
	Subscriber string    `json:"subscriber" example:"u-olga"`
	AddedAt    time.Time `json:"added_at,omitzero"`
}

// MemberChange adds subscribers to a topic and removes others.
type MemberChange struct {
	Add    []string `json:"add,omitempty" maxItems:"10000" doc:"Subscribers' ids to add: each must be one of the tenant's subscribers. At most 10,000 a call."`
	Remove []string `json:"remove,omitempty" maxItems:"10000" doc:"Subscribers' ids to remove; one not on the topic is no error. At most 10,000 a call."`
}

// MembersChanged is what a change did.
type MembersChanged struct {
	Tenant  string `json:"tenant"`
	Topic   string `json:"topic"`
	Added   int    `json:"added" doc:"Subscribers not on the topic before."`
	Removed int    `json:"removed" doc:"Subscribers that were on it."`
	Members int    `json:"members" doc:"How many it has now."`
}

func topicOf(t recipient.Topic) Topic {
	return Topic{Tenant: t.Tenant, ID: t.ID, TopicBody: TopicBody{Name: t.Name}, UpdatedAt: t.UpdatedAt}
}

func topicMemberOf(m recipient.Membership) TopicMember {
	return TopicMember{Subscriber: m.Subscriber, AddedAt: m.AddedAt}
}

type topicInput struct {
	WebhookTenant
	ID string `path:"id" doc:"The topic's id. Any printable text up to 128 bytes, URL-escaped."`
}

func (in topicInput) key() string { return in.ID }

type putTopicInput struct {
	WebhookTenant
	ID   string `path:"id" doc:"The topic's id. Any printable text up to 128 bytes, URL-escaped."`
	Body TopicBody
}

func (in putTopicInput) key() string { return in.ID }

func (in putTopicInput) record(tenant string) recipient.Topic {
	return recipient.Topic{Tenant: tenant, ID: in.ID, Name: in.Body.Name, UpdatedAt: time.Now().UTC()}.Normalize()
}

type topicMembersInput struct {
	WebhookTenant
	ID string `path:"id" doc:"The topic's id. Any printable text up to 128 bytes, URL-escaped."`
	PageQuery
}

func (in topicMembersInput) key() string { return in.ID }

func (in topicMembersInput) paging() PageQuery { return in.PageQuery }

type changeMembersInput struct {
	WebhookTenant
	ID   string `path:"id" doc:"The topic's id. Any printable text up to 128 bytes, URL-escaped."`
	Body MemberChange
}

type listTopicsOutputBody struct {
	Topics     []Topic `json:"topics"`
	NextCursor string  `json:"next_cursor,omitempty" doc:"Pass as cursor= for the next page; absent on the last page."`
}

type listTopicMembersOutputBody struct {
	Subscribers []TopicMember `json:"subscribers"`
	NextCursor  string        `json:"next_cursor,omitempty" doc:"Pass as cursor= for the next page; absent on the last page."`
}

type topicsStore = resourceStore[string, recipient.Topic, recipient.Topic]

func registerTopics(s *Service) {
	r := &resource[string, recipient.Topic, recipient.Topic, Topic]{
		what: "topics", path: "/v1/topics", item: "/{id}", tags: []string{"Topics"},
		read: ScopeRead, write: ScopeSend,
		store:    func(st *stores) (topicsStore, error) { return topics{st.recipients, s.cfg.MaxTopicMembers}, nil },
		view:     topicOf,
		notFound: recipient.ErrNoTopic, invalid: records.ErrInvalid, conflict: records.ErrConflict,
		absent: func(tenant, id string) string { return "tenant " + tenant + " has no topic " + quoted(id) },
		broken: "the topics could not be read or written right now",
	}
	pagedRoute[tenantPageInput](s, r, route{Operation: huma.Operation{OperationID: "list-topics",
		Summary: "List topics", Description: "The tenant's topics a page at a time, in the order of their ids' keys."}}, "", tenantPrefix,
		func(st topicsStore, ctx context.Context, prefix string, p records.Page) ([]recipient.Topic, string, error) {
			return st.(topics).d.Topics.ListUnder(ctx, prefix, p)
		}, topicOf, func(l []Topic, next string) listTopicsOutputBody { return listTopicsOutputBody{l, next} })
	getRoute[topicInput](s, r, route{Operation: huma.Operation{OperationID: "get-topic", Summary: "Get a topic"}})
	putRoute[putTopicInput](s, r, route{Operation: huma.Operation{OperationID: "put-topic",
		Summary: "Create or rename a topic", Description: "Its members are kept: they are changed by POST /v1/topics/{id}/subscribers."}})
	deleteRoute[topicInput](s, r, route{timeout: topicTimeout, Operation: huma.Operation{OperationID: "delete-topic",
		Summary: "Remove a topic and its memberships",
		Description: "Removes every membership, then the topic; the subscribers stay. Interrupted, the topic is still there with " +
			"fewer members, and removing it again finishes."}})
	registerTopicMembers(s, r)
}

func registerTopicMembers(s *Service, r *resource[string, recipient.Topic, recipient.Topic, Topic]) {
	pagedRoute[topicMembersInput](s, r, route{Operation: huma.Operation{OperationID: "list-topic-subscribers",
		Summary: "List a topic's subscribers", Description: "A page at a time, in the order of their ids' keys."}}, "/{id}/subscribers",
		recipient.MembersPrefix,
		func(st topicsStore, ctx context.Context, prefix string, p records.Page) ([]recipient.Membership, string, error) {
			return st.(topics).members(ctx, prefix, p)
		}, topicMemberOf, func(l []TopicMember, next string) listTopicMembersOutputBody {
			return listTopicMembersOutputBody{l, next}
		})
	o := r.operation(route{Operation: huma.Operation{OperationID: "change-topic-subscribers", Summary: "Add and remove a topic's subscribers",
		Description: fmt.Sprintf("Adds the subscribers add names and removes those remove names, at most %d of each a call. "+
			"Every one added must be one of the tenant's subscribers: one that is not is refused (422, naming add[i]) and nothing is "+
			"written. A topic has at most %d members. A topic's members are subscribers only, never topics or accounts, so no cycle can form.",
			maxMemberChange, s.cfg.MaxTopicMembers)}}, http.MethodPost, r.path+r.item+"/subscribers", r.write, http.StatusNotFound)
	o.MaxBodyBytes = s.bodyLimit()
	huma.Register(s.api, o, func(ctx context.Context, in *changeMembersInput) (*bodyOf[MembersChanged], error) {
		changed, err := call(ctx, s, r, in.Tenant, in.ID, topicTimeout, func(ctx context.Context, st topicsStore, tenant string) (MembersChanged, error) {
			return st.(topics).change(ctx, tenant, in.ID, in.Body)
		})
		if err != nil {
			return nil, err
		}
		return &bodyOf[MembersChanged]{Body: changed}, nil
	})
}

// topics is the topic store as the API exposes it, with its memberships.
type topics struct {
	d   *recipient.Directory
	max int
}

func (st topics) List(ctx context.Context, tenant string) ([]recipient.Topic, error) {
	return st.d.Topics.All(ctx, tenant)
}

func (st topics) Get(ctx context.Context, tenant, id string) (recipient.Topic, error) {
	v, _, err := st.d.Topics.Get(ctx, recipient.TopicKey(tenant, id))
	return v, err
}

func (st topics) Put(ctx context.Context, _ string, t recipient.Topic) (recipient.Topic, error) {
	_, err := st.d.Topics.Put(ctx, t)
	return t, err
}

// Delete removes the memberships first: stopped part way, the topic is
// still there to remove again, never memberships of no topic.
func (st topics) Delete(ctx context.Context, tenant, id string) error {
	if _, err := st.Get(ctx, tenant, id); err != nil {
		return err
	}
	if _, err := st.d.Memberships.DeleteUnder(ctx, recipient.MembersPrefix(tenant, id)); err != nil {
		return err
	}
	return st.d.Topics.Delete(ctx, recipient.TopicKey(tenant, id))
}

// members is a page of the topic's memberships whose key prefix is
// prefix, or ErrNoTopic for a topic the tenant does not have.
func (st topics) members(ctx context.Context, prefix string, p records.Page) ([]recipient.Membership, string, error) {
	if _, _, err := st.d.Topics.Get(ctx, prefix); err != nil { // a topic's key is its members' prefix
		return nil, "", err
	}
	return st.d.Memberships.ListUnder(ctx, prefix, p)
}

// change adds and removes members once every id is checked and the
// topic's size stays in bounds; a refusal writes nothing.
func (st topics) change(ctx context.Context, tenant, topic string, c MemberChange) (MembersChanged, error) {
	if _, err := st.Get(ctx, tenant, topic); err != nil {
		return MembersChanged{}, err
	}
	prefix := recipient.MembersPrefix(tenant, topic)
	keys, err := st.d.Memberships.KeysUnder(ctx, prefix)
	if err != nil {
		return MembersChanged{}, err
	}
	on := make(map[string]bool, len(keys))
	for _, k := range keys {
		on[k] = true
	}
	add, err := st.toAdd(ctx, tenant, topic, c.Add, on)
	if err != nil {
		return MembersChanged{}, err
	}
	remove, err := toRemove(tenant, topic, c.Remove, on)
	if err != nil {
		return MembersChanged{}, err
	}
	if n := len(on) + len(add) - len(remove); n > st.max {
		return MembersChanged{}, huma.Error422UnprocessableEntity(fmt.Sprintf(
			"add: the topic would have %d members, more than %d; nothing was written", n, st.max))
	}
	return st.apply(ctx, tenant, topic, add, remove, len(on))
}

// toAdd are the memberships to write for ids: those not on the topic
// already, each checked to be a subscriber.
func (st topics) toAdd(ctx context.Context, tenant, topic string, ids []string, on map[string]bool) ([]recipient.Membership, error) {
	var out []recipient.Membership
	seen := map[string]bool{}
	for i, id := range ids {
		if err := recipient.CheckID(id); err != nil {
			return nil, huma.Error422UnprocessableEntity(fmt.Sprintf("add[%d]: %v", i, err))
		}
		key := recipient.MembershipKey(tenant, topic, id)
		if on[key] || seen[key] {
			continue
		}
		seen[key] = true
		if _, _, err := st.d.Subscribers.Get(ctx, recipient.SubscriberKey(tenant, id)); err != nil {
			if errors.Is(err, records.ErrNotFound) {
				return nil, huma.Error422UnprocessableEntity(fmt.Sprintf("add[%d]: %s is not a subscriber; nothing was written", i, quoted(id)))
			}
			return nil, err
		}
		out = append(out, recipient.Membership{Tenant: tenant, Topic: topic, Subscriber: id, AddedAt: time.Now().UTC()})
	}
	return out, nil
}

// toRemove are the keys of the memberships ids names that there are.
func toRemove(tenant, topic string, ids []string, on map[string]bool) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for i, id := range ids {
		if err := recipient.CheckID(id); err != nil {
			return nil, huma.Error422UnprocessableEntity(fmt.Sprintf("remove[%d]: %v", i, err))
		}
		if key := recipient.MembershipKey(tenant, topic, id); on[key] && !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	}
	return out, nil
}

func (st topics) apply(ctx context.Context, tenant, topic string, add []recipient.Membership, remove []string, before int) (MembersChanged, error) {
	for _, m := range add {
		if _, err := st.d.Memberships.Put(ctx, m); err != nil {
			return MembersChanged{}, err
		}
	}
	for _, key := range remove {
		if err := st.d.Memberships.Delete(ctx, key); err != nil && !errors.Is(err, records.ErrNotFound) {
			return MembersChanged{}, err
		}
	}
	return MembersChanged{Tenant: tenant, Topic: topic, Added: len(add), Removed: len(remove),
		Members: before + len(add) - len(remove)}, nil
}
