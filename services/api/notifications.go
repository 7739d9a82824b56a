package api

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/ledger"
)

// Notification is where one notification stands, from the delivery ledger.
type Notification struct {
	ID                string    `json:"id" example:"ntf_909f330fb0fd959c6264370f5e1d2ae2c0d6a4b1f08e6c5a3b7d9e2f4a6c8b0d"`
	Tenant            string    `json:"tenant"`
	Channel           string    `json:"channel" example:"email"`
	State             string    `json:"state" enum:"sending,retrying,delivered,failed" doc:"sending: a worker is sending it now; retrying: tries failed transiently, more will come; delivered: a provider accepted it; failed: given up."`
	Reason            string    `json:"reason,omitempty" doc:"Why it is retrying or failed."`
	Retryable         bool      `json:"retryable,omitempty" doc:"For failed: whether a resend could succeed (tries exhausted) or not (a permanent refusal)."`
	Provider          string    `json:"provider,omitempty" doc:"The provider that accepted it."`
	ProviderMessageID string    `json:"provider_message_id,omitempty"`
	Tries             int       `json:"tries"`
	Attempts          []Attempt `json:"attempts" doc:"The latest tries, oldest first (at most 20)."`
	UpdatedAt         time.Time `json:"updated_at"`
}

// Attempt is one try: one pass over the provider chain.
type Attempt struct {
	Time       time.Time `json:"time"`
	Provider   string    `json:"provider,omitempty" doc:"The provider that accepted it, on the try that succeeded."`
	ErrorClass string    `json:"error_class,omitempty" enum:"transient,permanent,ambiguous" doc:"transient: worth trying again; permanent: refused for good; ambiguous: a provider may have accepted before failing."`
	Error      string    `json:"error,omitempty"`
}

type notificationInput struct {
	ID     string `path:"id" doc:"The notification id, ntf_…"`
	Tenant string `query:"tenant" doc:"Whose notification: required with an admin key; a tenant key reads its own tenant's."`
}

type notificationOutput struct {
	Body Notification
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
}

func (s *Service) getNotification(ctx context.Context, in *notificationInput) (*notificationOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	e, err := s.readNotification(cctx, st, in)
	if err != nil {
		return nil, err
	}
	return &notificationOutput{Body: notificationOf(e)}, nil
}

// readNotification reads the ledger entry in names, for the caller's
// tenant (or, for an admin key, the tenant it names).
func (s *Service) readNotification(ctx context.Context, st *stores, in *notificationInput) (ledger.Entry, error) {
	p := principal(ctx)
	tenant := cmp.Or(in.Tenant, p.Tenant)
	if tenant == "" {
		return ledger.Entry{}, huma.Error422UnprocessableEntity("an admin key names the tenant: ?tenant=")
	}
	// Another tenant's notification is answered exactly as one that does
	// not exist, so ids cannot be probed across tenants.
	if !p.Reaches(tenant) {
		return ledger.Entry{}, huma.Error404NotFound("no notification " + in.ID)
	}
	e, err := st.ledger.ByID(ctx, tenant, in.ID)
	if errors.Is(err, ledger.ErrNotFound) {
		return ledger.Entry{}, huma.Error404NotFound("no notification " + in.ID)
	}
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "ledger unavailable", "error", err)
		return ledger.Entry{}, unavailable("the ledger cannot be read right now")
	}
	return e, nil
}

func notificationOf(e ledger.Entry) Notification {
	n := Notification{ID: e.NotificationID, Tenant: e.Tenant, Channel: e.Channel, State: string(e.State), Reason: e.Reason,
		Retryable: e.Retryable, Provider: e.Provider, ProviderMessageID: e.ProviderMessageID, Tries: e.Tries,
		Attempts: make([]Attempt, len(e.Attempts)), UpdatedAt: e.UpdatedAt}
	for i, a := range e.Attempts {
		n.Attempts[i] = Attempt{Time: a.Time, Provider: a.Provider, ErrorClass: errorClass(e, i), Error: a.Error}
	}
	return n
}

// errorClass classifies the error of attempt i. The ledger keeps whether a
// try was ambiguous; a permanent refusal ends a notification at once, so
// it can only be the last try of one failed for good.
func errorClass(e ledger.Entry, i int) string {
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
