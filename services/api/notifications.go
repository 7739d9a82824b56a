package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/ledger"
)

// History is the index of notifications and subscribers (history.Store).
type History interface {
	Get(ctx context.Context, tenant, id string) (history.Row, error)
	List(ctx context.Context, q history.Query) (history.Page, error)
	// Subscribers is a page of a tenant's subscribers (subscribers_list.go).
	Subscribers(ctx context.Context, q history.SubscriberQuery) (history.SubscriberPage, error)
}

// Notification is where one notification stands: the ledger's word once a
// worker claimed it, the index's while it is pending.
type Notification struct {
	ID        string `json:"id" example:"ntf_909f330fb0fd959c6264370f5e1d2ae2c0d6a4b1f08e6c5a3b7d9e2f4a6c8b0d"`
	Tenant    string `json:"tenant"`
	Order     string `json:"order,omitempty" doc:"The order it concerns; absent for a stock alert or a notification sent through POST /v1/notifications."`
	Document  string `json:"document,omitempty" example:"purchase_order" doc:"The document type, or without a document the template (\"job\" for POST /v1/notifications)."`
	Channel   string `json:"channel" example:"email"`
	Recipient string `json:"recipient,omitempty" example:"olga@zarya.example"`
	State     string `json:"state" enum:"skipped,pending,sending,retrying,delivered,failed,suppressed" doc:"skipped: never planned — the recipient's preference, or an event's reference that named nobody (the reason says which); pending: created, no worker has claimed it yet (waiting for its document, or in the queue); sending: a worker is sending it now; retrying: tries failed transiently, more will come; delivered: a provider accepted it (what became of it after, its reports say); failed: given up; suppressed: not sent, the address being suppressed for the tenant."`
	Reason    string `json:"reason,omitempty" doc:"Why it is skipped, retrying, failed or suppressed."`
	Retryable bool   `json:"retryable,omitempty" doc:"For failed: whether a resend could succeed (tries exhausted) or not (a permanent refusal)."`
	Provider  string `json:"provider,omitempty" doc:"The provider that accepted it."`
	// ProviderMessageID is the provider's own id of the message sent.
	ProviderMessageID string    `json:"provider_message_id,omitempty"`
	Tries             int       `json:"tries"`
	Attempts          []Attempt `json:"attempts" doc:"The latest tries, oldest first (at most 20); empty while pending."`
	Reports           []Report  `json:"reports" doc:"What the provider reported after accepting it, oldest first (the latest 20): delivered, bounced, complained, opened, clicked, unsubscribed."`
	CreatedAt         time.Time `json:"created_at,omitzero" doc:"When it was created (or, if that record was lost, first claimed)."`
	UpdatedAt         time.Time `json:"updated_at"`
}

// Attempt is one try: one pass over the provider chain.
type Attempt struct {
	Time       time.Time `json:"time"`
	Provider   string    `json:"provider,omitempty" doc:"The provider that accepted it, on the try that succeeded."`
	ErrorClass string    `json:"error_class,omitempty" enum:"transient,permanent,ambiguous" doc:"transient: worth trying again; permanent: refused for good; ambiguous: a provider may have accepted before failing."`
	Error      string    `json:"error,omitempty"`
}

// Report is what a provider told of a message it accepted.
type Report struct {
	Time     time.Time `json:"time"`
	Kind     string    `json:"kind" enum:"delivered,bounced,complained,opened,clicked,unsubscribed"`
	Hard     bool      `json:"hard,omitempty" doc:"For bounced: the provider calls it permanent; the address is suppressed. A soft bounce is only recorded."`
	Provider string    `json:"provider" enum:"ses,sendgrid,twilio"`
	Detail   string    `json:"detail,omitempty" doc:"The provider's own words: a bounce's diagnostic, a complaint's feedback type, a clicked URL."`
	EventID  string    `json:"event_id" doc:"The provider's id of the event."`
}

// Listed is one notification of a listing: where it stands, without its
// attempts (GET /v1/notifications/{id} has them).
type Listed struct {
	ID                string    `json:"id"`
	Order             string    `json:"order,omitempty"`
	Document          string    `json:"document,omitempty"`
	Channel           string    `json:"channel"`
	Recipient         string    `json:"recipient,omitempty"`
	State             string    `json:"state" enum:"skipped,pending,sending,retrying,delivered,failed,suppressed"`
	Reason            string    `json:"reason,omitempty"`
	Provider          string    `json:"provider,omitempty"`
	ProviderMessageID string    `json:"provider_message_id,omitempty"`
	Tries             int       `json:"tries"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
}

// Listing is one page of a tenant's notifications, newest first.
type Listing struct {
	Tenant        string   `json:"tenant"`
	Notifications []Listed `json:"notifications"`
	NextCursor    string   `json:"next_cursor,omitempty" doc:"Pass as cursor= (with the same filters) for the next page; absent on the last page."`
}

type notificationInput struct {
	ID     string `path:"id" doc:"The notification id, ntf_…"`
	Tenant string `query:"tenant" doc:"Whose notification: required with an admin key; a tenant key reads its own tenant's."`
}

type notificationOutput struct {
	Body Notification
}

type listInput struct {
	Tenant    string `query:"tenant" doc:"Whose notifications: required with an admin key; a tenant key lists its own tenant's."`
	Order     string `query:"order" maxLength:"128" doc:"Only this order's."`
	Recipient string `query:"recipient" maxLength:"320" doc:"Only those to this address (case-insensitive)."`
	State     string `query:"state" enum:"skipped,pending,sending,retrying,delivered,failed,suppressed" doc:"Only those in this state."`
	Limit     int    `query:"limit" minimum:"1" maximum:"100" default:"20" doc:"Page size."`
	Cursor    string `query:"cursor" maxLength:"512" doc:"next_cursor of the page before."`
}

type listOutput struct {
	Link string `header:"Link" doc:"The next page, rel=\"next\", as RFC 8288 describes."`
	Body Listing
}

func registerNotifications(s *Service) {
	huma.Register(s.api, huma.Operation{
		OperationID: "get-notification",
		Method:      http.MethodGet,
		Path:        "/v1/notifications/{id}",
		Summary:     "Get a notification",
		Description: "Where a notification stands: its state, every recent attempt, the provider's message id.",
		Tags:        []string{"Notifications"},
		Security:    needs(ScopeRead),
		Errors:      []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, s.getNotification)
	huma.Register(s.api, huma.Operation{
		OperationID: "list-notifications",
		Method:      http.MethodGet,
		Path:        "/v1/notifications",
		Summary:     "List notifications",
		Description: "A tenant's notifications, newest first, a page at a time, optionally only one order's, one recipient's or those in one state. " +
			"Answered from the notification index, which follows the ledger within moments.",
		Tags:     []string{"Notifications"},
		Security: needs(ScopeRead),
		Errors:   []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, s.listNotifications)
}

func (s *Service) getNotification(ctx context.Context, in *notificationInput) (*notificationOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	e, err := s.readNotification(cctx, st, in)
	claimed := err == nil
	if !claimed && !errors.Is(err, errNotClaimed) {
		return nil, err
	}
	row, indexed := s.indexed(cctx, e.Tenant, in.ID)
	switch {
	case !claimed && indexed && (row.State == history.Pending || row.State == history.Skipped):
		return &notificationOutput{Body: unclaimedOf(row)}, nil
	case !claimed:
		return nil, huma.Error404NotFound("no notification " + in.ID)
	}
	n := notificationOf(e)
	if indexed {
		// The index knows when it was created (and, for an entry written
		// before the ledger kept them, its order and recipient).
		n.CreatedAt = row.CreatedAt
		n.Order, n.Document, n.Recipient = cmp.Or(n.Order, row.Order), cmp.Or(n.Document, row.Document), cmp.Or(n.Recipient, row.Recipient)
	}
	return &notificationOutput{Body: n}, nil
}

// indexed is the notification's row in the index, if there is an index
// and it has one; an index that cannot answer is logged, and read as not
// knowing.
func (s *Service) indexed(ctx context.Context, tenant, id string) (history.Row, bool) {
	if s.cfg.History == nil {
		return history.Row{}, false
	}
	row, err := s.cfg.History.Get(ctx, tenant, id)
	if err != nil && !errors.Is(err, history.ErrNotFound) {
		s.cfg.Logger.WarnContext(ctx, "notification index unavailable", "error", err)
	}
	return row, err == nil
}

// errNotClaimed: the ledger has no such notification of the tenant (the
// entry readNotification returns then names the tenant).
var errNotClaimed = errors.New("not in the ledger")

// readNotification reads the ledger entry in names, for the caller's
// tenant (or, for an admin key, the tenant it names).
func (s *Service) readNotification(ctx context.Context, st *stores, in *notificationInput) (ledger.Entry, error) {
	tenant, err := s.reachable(ctx, in)
	if err != nil {
		return ledger.Entry{}, err
	}
	return s.ledgerEntry(ctx, st, tenant, in.ID)
}

// reachable is the tenant whose notification in names, if the caller's key
// reaches it.
func (s *Service) reachable(ctx context.Context, in *notificationInput) (string, error) {
	tenant, err := s.tenantOf(ctx, in.Tenant)
	if err != nil {
		return "", err
	}
	// Another tenant's notification is answered exactly as one that does
	// not exist, so ids cannot be probed across tenants.
	if !principal(ctx).Reaches(tenant) {
		return "", huma.Error404NotFound("no notification " + in.ID)
	}
	return tenant, nil
}

// ledgerEntry reads tenant's notification id from the ledger.
func (s *Service) ledgerEntry(ctx context.Context, st *stores, tenant, id string) (ledger.Entry, error) {
	e, err := st.ledger.ByID(ctx, tenant, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return ledger.Entry{Tenant: tenant}, errNotClaimed
	}
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "ledger unavailable", "error", err)
		return ledger.Entry{}, unavailable("the ledger cannot be read right now")
	}
	return e, nil
}

// tenantOf is whose data a request reads: the key's tenant, or the one an
// admin key names.
func (s *Service) tenantOf(ctx context.Context, named string) (string, error) {
	tenant := cmp.Or(named, principal(ctx).Tenant)
	if tenant == "" {
		return "", huma.Error422UnprocessableEntity("an admin key names the tenant: ?tenant=")
	}
	return tenant, nil
}

// listingTenant is the tenant whose listing from the index (what: "notification",
// "subscriber") a request reads, and whether the request's key reaches it.
// Another tenant's listing is answered empty, as that of a tenant with
// nothing listed: nothing tells it exists.
func (s *Service) listingTenant(ctx context.Context, named, what string) (tenant string, reaches bool, err error) {
	if _, err := s.ready(); err != nil {
		return "", false, err
	}
	if s.cfg.History == nil {
		return "", false, huma.Error503ServiceUnavailable("listing needs the " + what + " index, which this deployment does not configure (history.url)")
	}
	if tenant, err = s.tenantOf(ctx, named); err != nil {
		return "", false, err
	}
	return tenant, principal(ctx).Reaches(tenant), nil
}

func (s *Service) listNotifications(ctx context.Context, in *listInput) (*listOutput, error) {
	tenant, reaches, err := s.listingTenant(ctx, in.Tenant, "notification")
	if err != nil {
		return nil, err
	}
	out := &listOutput{Body: Listing{Tenant: tenant, Notifications: []Listed{}}}
	if !reaches {
		return out, nil
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	page, err := s.cfg.History.List(cctx, history.Query{Tenant: tenant, Order: in.Order, Recipient: in.Recipient,
		State: in.State, Limit: in.Limit, Cursor: in.Cursor})
	switch {
	case errors.Is(err, history.ErrBadCursor):
		return nil, huma.Error422UnprocessableEntity("cursor: not one this listing gave, or given with other filters")
	case errors.Is(err, history.ErrBadQuery):
		return nil, huma.Error422UnprocessableEntity(err.Error())
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "notification index unavailable", "error", err)
		return nil, unavailable("the notification index cannot be read right now")
	}
	for _, r := range page.Rows {
		out.Body.Notifications = append(out.Body.Notifications, Listed{ID: r.ID, Order: r.Order, Document: r.Document,
			Channel: r.Channel, Recipient: r.Recipient, State: r.State, Reason: r.Reason, Provider: r.Provider,
			ProviderMessageID: r.ProviderMessageID, Tries: r.Tries, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt})
	}
	if page.Next != "" {
		out.Body.NextCursor = page.Next
		out.Link = fmt.Sprintf(`<%s>; rel="next"`, nextPage(in, page.Next))
	}
	return out, nil
}

// nextPage is the path of the page after in, with its filters.
func nextPage(in *listInput, cursor string) string {
	q := url.Values{}
	for k, v := range map[string]string{"tenant": in.Tenant, "order": in.Order, "recipient": in.Recipient, "state": in.State} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if in.Limit != 0 {
		q.Set("limit", fmt.Sprint(in.Limit))
	}
	q.Set("cursor", cursor)
	return "/v1/notifications?" + q.Encode()
}

// unclaimedOf is a notification no worker has claimed, as the index has
// it: pending, or skipped (never to be claimed) with its reason.
func unclaimedOf(r history.Row) Notification {
	return Notification{ID: r.ID, Tenant: r.Tenant, Order: r.Order, Document: r.Document, Channel: r.Channel,
		Recipient: r.Recipient, State: r.State, Reason: r.Reason, Attempts: []Attempt{}, Reports: []Report{}, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func notificationOf(e ledger.Entry) Notification {
	n := Notification{ID: e.NotificationID, Tenant: e.Tenant, Order: e.Order, Document: e.Document, Channel: e.Channel,
		Recipient: e.Recipient, State: string(e.State), Reason: e.Reason, Retryable: e.Retryable, Provider: e.Provider,
		ProviderMessageID: e.ProviderMessageID, Tries: e.Tries, Attempts: make([]Attempt, len(e.Attempts)),
		Reports: make([]Report, len(e.Reports)), UpdatedAt: e.UpdatedAt}
	for i, a := range e.Attempts {
		n.Attempts[i] = Attempt{Time: a.Time, Provider: a.Provider, ErrorClass: ErrorClass(e, i), Error: a.Error}
	}
	for i, r := range e.Reports {
		n.Reports[i] = Report{Time: r.Time, Kind: string(r.Kind), Hard: r.Hard, Provider: r.Provider, Detail: r.Detail, EventID: r.EventID}
	}
	return n
}

// ErrorClass classifies the error of the entry's attempt i, as the API
// tells it: "" (no error), transient, permanent or ambiguous. The ledger
// keeps whether a try was ambiguous; a permanent refusal ends a
// notification at once, so it can only be the last try of one failed for
// good.
func ErrorClass(e ledger.Entry, i int) string {
	a := e.Attempts[i]
	switch {
	case a.Error == "":
		return ""
	case a.Ambiguous:
		return "ambiguous"
	case i == len(e.Attempts)-1 && e.State == ledger.Failed && !e.Retryable:
		return "permanent"
	}
	return "transient"
}
