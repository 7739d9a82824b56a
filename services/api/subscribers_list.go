package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/history"
)

// ListedSubscriber is one subscriber of a listing, as the subscriber index
// has them: the fields of GET /v1/subscribers/{id} without their data.
type ListedSubscriber struct {
	ID        string    `json:"id" example:"u-olga" doc:"The publisher's own id for the person."`
	Name      string    `json:"name,omitempty"`
	Email     string    `json:"email,omitempty" example:"olga@zarya.example" doc:"Lowercased."`
	Phone     string    `json:"phone,omitempty" example:"+34600111222" doc:"E.164, for SMS."`
	WhatsApp  string    `json:"whatsapp,omitempty" example:"+34600111222" doc:"E.164."`
	Locale    string    `json:"locale,omitempty" example:"ru"`
	Timezone  string    `json:"timezone,omitempty" example:"Europe/Moscow"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SubscriberListing is one page of a tenant's subscribers, by id.
type SubscriberListing struct {
	Tenant      string             `json:"tenant"`
	Subscribers []ListedSubscriber `json:"subscribers"`
	NextCursor  string             `json:"next_cursor,omitempty" doc:"Pass as cursor= (with the same filters) for the next page; absent on the last page."`
}

type subscriberListInput struct {
	Tenant string `query:"tenant" doc:"Whose subscribers: required with an admin key; a tenant key lists its own tenant's."`
	Email  string `query:"email" maxLength:"320" doc:"Only those with this email address (case-insensitive)."`
	Phone  string `query:"phone" maxLength:"16" doc:"Only those with this E.164 number (+34600111222) as their SMS number or their WhatsApp one."`
	Limit  int    `query:"limit" minimum:"1" maximum:"100" default:"20" doc:"Page size."`
	Cursor string `query:"cursor" maxLength:"512" doc:"next_cursor of the page before."`
}

type subscriberListOutput struct {
	Link string `header:"Link" doc:"The next page, rel=\"next\", as RFC 8288 describes."`
	Body SubscriberListing
}

func registerSubscriberList(s *Service) {
	huma.Register(s.api, huma.Operation{
		OperationID: "list-subscribers",
		Method:      http.MethodGet,
		Path:        "/v1/subscribers",
		Summary:     "List subscribers",
		Description: "A tenant's subscribers by id, a page at a time, optionally only those with one email address or one phone number. " +
			"Answered from the subscriber index, which follows the subscribers' records within moments.",
		Tags:     []string{"Subscribers"},
		Security: needs(ScopeRead),
		Errors:   []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, s.listSubscribers)
}

func (s *Service) listSubscribers(ctx context.Context, in *subscriberListInput) (*subscriberListOutput, error) {
	tenant, reaches, err := s.listingTenant(ctx, in.Tenant, "subscriber")
	if err != nil {
		return nil, err
	}
	out := &subscriberListOutput{Body: SubscriberListing{Tenant: tenant, Subscribers: []ListedSubscriber{}}}
	if !reaches {
		return out, nil
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	page, err := s.cfg.History.Subscribers(cctx, history.SubscriberQuery{Tenant: tenant, Email: in.Email, Phone: in.Phone,
		Limit: in.Limit, Cursor: in.Cursor})
	if err != nil {
		return nil, s.subscriberListProblem(ctx, in, err)
	}
	for _, r := range page.Subscribers {
		out.Body.Subscribers = append(out.Body.Subscribers, ListedSubscriber{ID: r.ID, Name: r.Name, Email: r.Email,
			Phone: r.Phone, WhatsApp: r.WhatsApp, Locale: r.Locale, Timezone: r.Timezone, UpdatedAt: r.UpdatedAt})
	}
	if page.Next != "" {
		out.Body.NextCursor = page.Next
		out.Link = fmt.Sprintf(`<%s>; rel="next"`, nextSubscribers(in, page.Next))
	}
	return out, nil
}

// subscriberListProblem answers the index's error: the query's fault 422,
// naming the parameter, the index's own 503.
func (s *Service) subscriberListProblem(ctx context.Context, in *subscriberListInput, err error) error {
	switch {
	case errors.Is(err, history.ErrBadCursor):
		return huma.Error422UnprocessableEntity("cursor: not one this listing gave, or given with other filters",
			&huma.ErrorDetail{Location: "query.cursor", Message: "not one this listing gave, or given with other filters"})
	}
	if bad := (*history.BadParameter)(nil); errors.As(err, &bad) {
		return huma.Error422UnprocessableEntity(bad.Name+": "+bad.Reason, &huma.ErrorDetail{Location: "query." + bad.Name, Message: bad.Reason})
	}
	s.cfg.Logger.WarnContext(ctx, "subscriber index unavailable", "error", err)
	return unavailable("the subscriber index cannot be read right now")
}

// nextSubscribers is the path of the page after in, with its filters.
func nextSubscribers(in *subscriberListInput, cursor string) string {
	q := url.Values{}
	for k, v := range map[string]string{"tenant": in.Tenant, "email": in.Email, "phone": in.Phone} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if in.Limit != 0 {
		q.Set("limit", fmt.Sprint(in.Limit))
	}
	q.Set("cursor", cursor)
	return "/v1/subscribers?" + q.Encode()
}
