package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/shared/ledger"
)

type retryOutput struct {
	Status int
	Body   Notification
}

func registerRetry(s *Service) {
	huma.Register(s.api, huma.Operation{
		OperationID:   "retry-notification",
		Method:        http.MethodPost,
		Path:          "/v1/notifications/{id}/retry",
		Summary:       "Retry a failed notification",
		Description:   "Sends a notification that failed after running out of tries back to delivery (202, state retrying). A notification refused for good, delivered, or still in flight is a 409 that says why. The delivery ledger still stops a second send.",
		Tags:          []string{"Notifications"},
		DefaultStatus: http.StatusAccepted,
		Security:      needs(ScopeSend),
		Errors: []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict,
			http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}, s.retryNotification)
}

func (s *Service) retryNotification(ctx context.Context, in *notificationInput) (*retryOutput, error) {
	tenant, err := s.reachable(ctx, in)
	if err != nil {
		return nil, err
	}
	n, err := s.Retry(ctx, tenant, in.ID)
	if err != nil {
		return nil, err
	}
	return &retryOutput{Status: http.StatusAccepted, Body: n}, nil
}

// Retry sends tenant's notification id, failed after running out of
// tries, back to delivery: what POST /v1/notifications/{id}/retry does,
// for a caller that has already checked who may (the console, whose
// operators sign in with an admin key). It returns the notification as it
// now stands, retrying. Its error says why not in words fit to show, and
// carries the API's status (huma.StatusError): 404 for no notification
// tried, 409 for one a resend cannot help, 503 when NATS cannot be
// reached.
func (s *Service) Retry(ctx context.Context, tenant, id string) (Notification, error) {
	st, err := s.ready()
	if err != nil {
		return Notification{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	e, err := s.ledgerEntry(cctx, st, tenant, id)
	if errors.Is(err, errNotClaimed) {
		return Notification{}, huma.Error404NotFound("no notification " + id + " has been tried")
	}
	if err != nil {
		return Notification{}, err
	}
	if err := retryable(e); err != nil {
		return Notification{}, err
	}
	if err := dlq.Resend(cctx, s.js, st.ledger, &e); err != nil {
		s.cfg.Logger.WarnContext(ctx, "retry not sent", "notification", e.NotificationID, "error", err)
		return Notification{}, unavailable("the notification could not be sent back to delivery right now")
	}
	return notificationOf(e), nil
}

// retryable refuses, with a 409 that says why, a notification a resend
// cannot help: one not failed, or failed for good. Only a notification
// failed-but-retryable keeps its delivery message in the ledger.
func retryable(e ledger.Entry) error {
	switch {
	case e.State == ledger.Delivered:
		return huma.Error409Conflict("notification " + e.NotificationID + " was delivered; it is not sent again")
	case e.State == ledger.Suppressed:
		return huma.Error409Conflict("notification " + e.NotificationID + " was not sent: " + e.Reason + "; lift the suppression and send it anew")
	case e.State != ledger.Failed:
		return huma.Error409Conflict("notification " + e.NotificationID + " is " + string(e.State) + ", not failed; delivery is still trying it")
	case !e.Retryable || len(e.Delivery) == 0:
		return huma.Error409Conflict("notification " + e.NotificationID + " failed for good (" + e.Reason + "); nothing is kept to resend")
	}
	return nil
}
