package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/erasure"
	"github.com/heraldhq/herald/shared/recipient"
	records "github.com/heraldhq/herald/shared/resource"
)

// eraseTimeout bounds an erasure's round trips: it rewrites every
// notification of the subscriber's the ledger keeps, more than a request's
// usual few.
const eraseTimeout = time.Minute

// ErasureReceipt is what erasing a subscriber erased, counted. It names
// no address.
type ErasureReceipt struct {
	Tenant     string `json:"tenant"`
	Subscriber string `json:"subscriber"`
	Profile    int    `json:"profile" doc:"1 when her profile was kept (a profile deleted before without erase=true still kept its earlier versions), else 0."`
	// The directory's other records of her.
	Preferences      int       `json:"preferences" doc:"1 when she had made choices."`
	TopicMemberships int       `json:"topic_memberships" doc:"The topics she was taken off."`
	Accounts         int       `json:"accounts" doc:"The accounts rewritten without her."`
	Devices          int       `json:"devices" doc:"Her push devices removed, every stored version of them."`
	Addresses        int       `json:"addresses" doc:"The distinct addresses (email, phone, WhatsApp, and earlier ones) her profile named, which the rest was redacted of."`
	HistoryRows      int       `json:"history_rows" doc:"Her notifications in the listing, kept with the address replaced by erased:<hash>."`
	LedgerEntries    int       `json:"ledger_entries" doc:"Her notifications' delivery records redacted; each keeps its state, so none is sent again."`
	InFlight         int       `json:"in_flight" doc:"Her notifications still being sent, which could not be redacted yet: erase her again once they settle."`
	Suppressions     int       `json:"suppressions_concealed" doc:"Suppressions of her addresses that keep blocking them but hold a keyed hash in the address's place."`
	Complete         bool      `json:"complete" doc:"Nothing was left to redact later (in_flight is 0)."`
	Time             time.Time `json:"time"`
}

func receiptOf(r erasure.Receipt) *ErasureReceipt {
	return &ErasureReceipt{Tenant: r.Tenant, Subscriber: r.Subscriber, Profile: r.Profile, Preferences: r.Preferences,
		TopicMemberships: r.TopicMemberships, Accounts: r.Accounts, Devices: r.Devices, Addresses: r.Addresses, HistoryRows: int(r.HistoryRows),
		LedgerEntries: r.LedgerEntries, InFlight: r.InFlight, Suppressions: r.Suppressions, Complete: r.Complete, Time: r.Time}
}

type deleteSubscriberInput struct {
	WebhookTenant
	ID    string `path:"id" doc:"The subscriber's id, the publisher's own."`
	Erase bool   `query:"erase" doc:"true: erase her — her preferences, memberships and place in accounts too, every stored version of them, and her addresses redacted from notifications and suppressions — answering a receipt."`
}

type deleteSubscriberOutput struct {
	Status int
	Body   *ErasureReceipt
}

func registerSubscriberErasure(s *Service) {
	huma.Register(s.api, huma.Operation{
		OperationID: "delete-subscriber",
		Method:      http.MethodDelete,
		Path:        "/v1/subscribers/{id}",
		Summary:     "Delete or erase a subscriber",
		Description: "Without erase=true, deletes her profile and her push devices (204; 404 if there is none): her preferences, topic memberships " +
			"and place in accounts stay, as do the profile's earlier versions in its bucket's history and her address in her " +
			"notifications and suppressions. With erase=true, erases her (200, a receipt counting what was erased): profile, " +
			"preferences, memberships and accounts' mentions go with every stored version; her notifications stay listed, in " +
			"their state and counted, with each address replaced by erased:<keyed hash>; suppressions of her addresses keep " +
			"blocking them but no longer say them. Erasing again, or erasing a subscriber never known, answers a receipt of " +
			"nothing. Needs the deployment's link secret (503 without).",
		Tags:          []string{"Subscribers"},
		DefaultStatus: http.StatusOK,
		Security:      needs(ScopeSend),
		Errors: []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity,
			http.StatusTooManyRequests, http.StatusServiceUnavailable},
		Responses: map[string]*huma.Response{"204": {Description: "Without erase=true: the profile and the push devices were deleted."}},
	}, s.deleteSubscriber)
}

func (s *Service) deleteSubscriber(ctx context.Context, in *deleteSubscriberInput) (*deleteSubscriberOutput, error) {
	st, tenant, err := s.managed(ctx, in.Tenant, "subscribers")
	if err != nil {
		return nil, err
	}
	if err := recipient.CheckID(in.ID); err != nil {
		return nil, huma.Error422UnprocessableEntity("id: " + err.Error())
	}
	cctx, cancel := context.WithTimeout(records.WithActor(ctx, actor(principal(ctx))), eraseTimeout)
	defer cancel()
	if !in.Erase {
		if err := st.recipients.DeleteSubscriber(cctx, tenant, in.ID); err != nil {
			return nil, s.subscriberProblem(ctx, tenant, in.ID, err)
		}
		return &deleteSubscriberOutput{Status: http.StatusNoContent}, nil
	}
	if st.eraser == nil {
		return nil, huma.Error503ServiceUnavailable("erasure needs the deployment's link secret (documents.link_secret_env) to key the hashes it leaves; none is configured")
	}
	r, err := st.eraser.Erase(cctx, tenant, in.ID)
	if err != nil {
		return nil, s.subscriberProblem(ctx, tenant, in.ID, err)
	}
	return &deleteSubscriberOutput{Status: http.StatusOK, Body: receiptOf(r)}, nil
}

// subscriberProblem answers a directory's or an erasure's error.
func (s *Service) subscriberProblem(ctx context.Context, tenant, id string, err error) error {
	switch {
	case errors.Is(err, recipient.ErrNoSubscriber):
		return huma.Error404NotFound("no subscriber " + id)
	case errors.Is(err, recipient.ErrInvalid):
		return huma.Error422UnprocessableEntity(err.Error())
	}
	s.cfg.Logger.WarnContext(ctx, "subscriber not deleted or erased", "tenant", tenant, "error", err)
	return unavailable("the subscriber could not be deleted or erased right now")
}

// openErasure binds the directory and, with a link secret, the eraser.
func (s *Service) openErasure(ctx context.Context, st *stores) error {
	var err error
	if st.recipients, err = recipient.Open(ctx, s.js); err != nil {
		return err
	}
	if len(s.cfg.Erasure.Secret) == 0 {
		return nil
	}
	st.eraser, err = erasure.Open(ctx, s.js, s.cfg.Erasure)
	return err
}
