package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/inbox"
)

// InboxItem is one item of a subscriber's inbox, as the browser shows it.
type InboxItem struct {
	ID             string     `json:"id"`
	NotificationID string     `json:"notification_id,omitempty"`
	Title          string     `json:"title" doc:"Plain text: show it as text, never as HTML."`
	Body           string     `json:"body,omitempty" doc:"Plain text."`
	ActionURL      string     `json:"action_url,omitempty" doc:"What clicking the item opens, as the notification gave it."`
	DocumentURL    string     `json:"document_url,omitempty" doc:"A signed link to the item's document, made afresh with each answer: it expires, the item does not."`
	Category       string     `json:"category,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	SeenAt         *time.Time `json:"seen_at,omitempty"`
	ReadAt         *time.Time `json:"read_at,omitempty"`
	ArchivedAt     *time.Time `json:"archived_at,omitempty"`
}

// InboxPage is a page of items, newest first.
type InboxPage struct {
	Items      []InboxItem `json:"items"`
	NextCursor string      `json:"next_cursor,omitempty" doc:"The next page's cursor; absent on the last page."`
}

// InboxCounts are the subscriber's counts over the items not archived.
type InboxCounts struct {
	Unseen int `json:"unseen"`
	Unread int `json:"unread"`
	Total  int `json:"total"`
}

// InboxReadAll is how many items reading all marked read.
type InboxReadAll struct {
	Read int `json:"read"`
}

type inboxListInput struct {
	Cursor string `query:"cursor" maxLength:"1024" doc:"The next_cursor of the page before; empty for the first."`
	Limit  int    `query:"limit" minimum:"1" maximum:"100" default:"20"`
	State  string `query:"state" enum:"all,unread,unseen,read,archived" default:"all" doc:"all is every item not archived."`
}

type inboxItemInput struct {
	ID     string `path:"id" maxLength:"1024"`
	Action string `path:"action" enum:"read,seen,archive,unread,unarchive"`
}

type inboxPageOutput struct{ Body InboxPage }

type inboxCountsOutput struct{ Body InboxCounts }

type inboxItemOutput struct{ Body InboxItem }

type inboxReadAllOutput struct{ Body InboxReadAll }

func registerInboxRoutes(s *Service) {
	errs := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable}
	op := func(id, method, path, summary string, errs ...int) huma.Operation {
		return huma.Operation{OperationID: id, Method: method, Path: path, Summary: summary, Tags: []string{"Inbox"},
			Security: bySubscriber, Errors: errs,
			Description: "For the subscriber's browser: Authorization: Bearer <subscriber token>. " +
				"CORS: only the tenant's inbox_origins (a page elsewhere gets 403)."}
	}
	huma.Register(s.api, op("list-inbox-items", http.MethodGet, "/v1/inbox/items", "List the inbox, newest first",
		append(errs, http.StatusUnprocessableEntity)...), s.listInbox)
	huma.Register(s.api, op("get-inbox-counts", http.MethodGet, "/v1/inbox/counts", "The inbox's counts", errs...), s.inboxCounts)
	huma.Register(s.api, op("mark-inbox-item", http.MethodPost, "/v1/inbox/items/{id}/{action}", "Mark an item read, seen or archived",
		append(errs, http.StatusNotFound, http.StatusUnprocessableEntity)...), s.markInboxItem)
	huma.Register(s.api, op("read-all-inbox", http.MethodPost, "/v1/inbox/read-all", "Mark every item read", errs...), s.readAllInbox)
	registerInboxStream(s, op)
}

// inbox is the store, once admitSubscriber let the request in.
func (s *Service) inbox() (*stores, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	if st.inbox == nil {
		return nil, unavailable("the inbox is not serving")
	}
	return st, nil
}

func (s *Service) listInbox(ctx context.Context, in *inboxListInput) (*inboxPageOutput, error) {
	st, err := s.inbox()
	if err != nil {
		return nil, err
	}
	f, state := inboxFeed(ctx), inbox.Filter(in.State)
	if state == "all" {
		state = inbox.All
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	page, err := st.inbox.List(cctx, f.tenant, f.sub, inbox.Query{Cursor: in.Cursor, Limit: in.Limit, State: state})
	if errors.Is(err, inbox.ErrBadCursor) {
		return nil, huma.Error422UnprocessableEntity("the cursor is not one this inbox handed out",
			&huma.ErrorDetail{Location: "query.cursor", Value: in.Cursor, Message: "not a cursor of this inbox"})
	}
	if err != nil {
		return nil, s.inboxError(ctx, err)
	}
	out := InboxPage{Items: make([]InboxItem, len(page.Items)), NextCursor: page.Next}
	now := time.Now()
	for i, it := range page.Items {
		out.Items[i] = s.inboxItemOf(it, now)
	}
	return &inboxPageOutput{Body: out}, nil
}

// onFeed calls op on the subscriber token's feed within the NATS
// timeout, answering its error as the inbox answers errors.
func onFeed[T any](ctx context.Context, s *Service, op func(ctx context.Context, st *inbox.Store, f feed) (T, error)) (T, error) {
	var zero T
	st, err := s.inbox()
	if err != nil {
		return zero, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	v, err := op(cctx, st.inbox, inboxFeed(ctx))
	if err != nil {
		return zero, s.inboxError(ctx, err)
	}
	return v, nil
}

func (s *Service) inboxCounts(ctx context.Context, _ *struct{}) (*inboxCountsOutput, error) {
	return onFeed(ctx, s, func(ctx context.Context, st *inbox.Store, f feed) (*inboxCountsOutput, error) {
		c, err := st.Counts(ctx, f.tenant, f.sub)
		return &inboxCountsOutput{Body: InboxCounts(c)}, err
	})
}

func (s *Service) markInboxItem(ctx context.Context, in *inboxItemInput) (*inboxItemOutput, error) {
	return onFeed(ctx, s, func(ctx context.Context, st *inbox.Store, f feed) (*inboxItemOutput, error) {
		it, err := st.Mark(ctx, f.tenant, f.sub, in.ID, inbox.Action(in.Action))
		return &inboxItemOutput{Body: s.inboxItemOf(it, time.Now())}, err
	})
}

func (s *Service) readAllInbox(ctx context.Context, _ *struct{}) (*inboxReadAllOutput, error) {
	return onFeed(ctx, s, func(ctx context.Context, st *inbox.Store, f feed) (*inboxReadAllOutput, error) {
		n, err := st.ReadAll(ctx, f.tenant, f.sub)
		return &inboxReadAllOutput{Body: InboxReadAll{Read: n}}, err
	})
}

// inboxError is the answer to a store error: an item the feed does not
// hold is a 404 whatever the reason; the store's own trouble a 503.
func (s *Service) inboxError(ctx context.Context, err error) error {
	if errors.Is(err, inbox.ErrNotFound) {
		return huma.Error404NotFound("no such item in this inbox")
	}
	s.cfg.Logger.WarnContext(ctx, "inbox unavailable", "error", err)
	return unavailable("the inbox cannot be read right now")
}

// inboxItemOf is an item as the browser gets it, its document a link
// signed now.
func (s *Service) inboxItemOf(it inbox.Item, now time.Time) InboxItem {
	out := InboxItem{ID: it.ID, NotificationID: it.Notification, Title: it.Title, Body: it.Body, ActionURL: it.ActionURL,
		Category: it.Category, CreatedAt: it.CreatedAt.UTC(), SeenAt: it.SeenAt, ReadAt: it.ReadAt, ArchivedAt: it.ArchivedAt}
	if it.Document != nil && it.Document.Object != "" && s.cfg.DocumentLinks != nil {
		out.DocumentURL, _ = s.cfg.DocumentLinks.Link(it.Document.Object, now)
	}
	return out
}
