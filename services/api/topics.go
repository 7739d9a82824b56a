package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/recipient"
	records "github.com/heraldhq/herald/shared/resource"
)

// topicTimeout bounds a call that writes up to recipient.MaxMemberChange
// memberships, or removes all of a topic's.
const topicTimeout = 2 * time.Minute

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
	Add    []string `json:"add,omitempty" doc:"Subscribers' ids to add: each must be one of the tenant's subscribers. At most 10,000 a call."`
	Remove []string `json:"remove,omitempty" doc:"Subscribers' ids to remove; one not on the topic is no error. At most 10,000 a call."`
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
		store:    func(st *stores) (topicsStore, error) { return topics{st.recipients}, nil },
		view:     topicOf,
		notFound: recipient.ErrNoTopic, invalid: records.ErrInvalid, conflict: records.ErrConflict,
		absent: func(tenant, id string) string { return "tenant " + tenant + " has no topic " + quoted(id) },
		broken: "the topics could not be read or written right now",
	}
	pagedRoute[tenantPageInput](s, r, route{Operation: huma.Operation{OperationID: "list-topics",
		Summary: "List topics", Description: "The tenant's topics a page at a time, in the order of their ids' keys."}}, "", tenantPrefix,
		func(st topicsStore, ctx context.Context, tenant, _ string, p records.Page) ([]recipient.Topic, string, error) {
			return st.(topics).d.Topics.List(ctx, tenant, p)
		}, topicOf, func(l []Topic, next string) listTopicsOutputBody { return listTopicsOutputBody{l, next} })
	getRoute[topicInput](s, r, route{Operation: huma.Operation{OperationID: "get-topic", Summary: "Get a topic"}})
	upsertRoute[putTopicInput](s, r, route{Operation: huma.Operation{OperationID: "put-topic",
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
		func(st topicsStore, ctx context.Context, tenant, topic string, p records.Page) ([]recipient.Membership, string, error) {
			return st.(topics).d.Members(ctx, tenant, topic, p)
		}, topicMemberOf, func(l []TopicMember, next string) listTopicMembersOutputBody {
			return listTopicMembersOutputBody{l, next}
		})
	o := r.operation(route{Operation: huma.Operation{OperationID: "change-topic-subscribers", Summary: "Add and remove a topic's subscribers",
		Description: fmt.Sprintf("Adds the subscribers add names and removes those remove names, at most %d of each a call. "+
			"Every one added must be one of the tenant's subscribers: one that is not is refused (422, naming add[i]) and nothing is "+
			"written. A topic has at most %d members. A topic's members are subscribers only, never topics or accounts, so no cycle can form.",
			recipient.MaxMemberChange, s.cfg.MaxTopicMembers)}}, http.MethodPost, r.path+r.item+"/subscribers", r.write, http.StatusNotFound)
	o.MaxBodyBytes = s.bodyLimit()
	huma.Register(s.api, o, func(ctx context.Context, in *changeMembersInput) (*bodyOf[recipient.MembersChanged], error) {
		changed, err := call(ctx, s, r, in.Tenant, in.ID, topicTimeout, func(ctx context.Context, st topicsStore, tenant string) (recipient.MembersChanged, error) {
			return st.(topics).d.ChangeMembers(ctx, tenant, in.ID, in.Body.Add, in.Body.Remove, s.cfg.MaxTopicMembers)
		})
		if err != nil {
			return nil, err
		}
		return &bodyOf[recipient.MembersChanged]{Body: changed}, nil
	})
}

// topics is the topic store as the API exposes it, with its memberships.
type topics struct{ d *recipient.Directory }

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

func (st topics) Upsert(ctx context.Context, _ string, t recipient.Topic) (recipient.Topic, bool, error) {
	created, err := st.d.Topics.Upsert(ctx, t)
	return t, created, err
}

// Delete removes the topic's memberships with it.
func (st topics) Delete(ctx context.Context, tenant, id string) error {
	return st.d.DeleteTopic(ctx, tenant, id)
}
