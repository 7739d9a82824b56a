package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/services/dlq"
)

// DeadLetter is one DLQ entry, as `herald dlq list --json` shows it.
type DeadLetter struct {
	Seq           uint64    `json:"seq" doc:"Its sequence in the DLQ stream: what show and redrive name."`
	Time          time.Time `json:"time"`
	Stream        string    `json:"stream" example:"ORDERS"`
	Consumer      string    `json:"consumer" example:"router"`
	Subject       string    `json:"subject" doc:"The subject it was published on, where a redrive sends it."`
	OriginalSeq   uint64    `json:"original_seq"`
	Deliveries    uint64    `json:"deliveries"`
	Tenant        string    `json:"tenant,omitempty"`
	Reason        string    `json:"reason"`
	PayloadObject string    `json:"payload_object,omitempty" doc:"The object that keeps a payload too large for the entry."`
	Redriven      *Redrive  `json:"redriven,omitempty"`
}

// Redrive is the record of an entry sent back to its subject.
type Redrive struct {
	Time  time.Time `json:"time"`
	MsgID string    `json:"msg_id" doc:"The Nats-Msg-Id it was republished with."`
	Count int       `json:"count" doc:"How many times it was redriven."`
}

// DeadLetterDetail is one entry with its headers and payload, as `herald
// dlq show` shows it.
type DeadLetterDetail struct {
	DeadLetter
	Headers map[string][]string `json:"headers"`
	Payload json.RawMessage     `json:"payload,omitempty" doc:"The original payload, when it is JSON."`
	Raw     []byte              `json:"payload_base64,omitempty" doc:"The original payload, when it is not JSON."`
}

// DeadLetters is a page of the DLQ, oldest first.
type DeadLetters struct {
	Entries []DeadLetter `json:"entries"`
	Total   int          `json:"total" doc:"How many entries the filters select in all."`
}

type dlqListInput struct {
	Stream   string `query:"stream" doc:"Only entries from this stream (ORDERS, DOCS, NOTIFY…)."`
	Consumer string `query:"consumer" doc:"Only entries from this consumer; needs stream."`
	Tenant   string `query:"tenant" doc:"Only this tenant's entries."`
	Reason   string `query:"reason" doc:"Only entries whose reason contains this text (case-insensitive)."`
	Limit    int    `query:"limit" minimum:"1" maximum:"1000" default:"100"`
}

type dlqListOutput struct{ Body DeadLetters }

type dlqEntryInput struct {
	Seq uint64 `path:"seq" minimum:"1"`
}

type dlqEntryOutput struct{ Body DeadLetterDetail }

type redriveOutput struct {
	Status int
	Body   Redrive
}

func registerDLQ(s *Service) {
	errs := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}
	huma.Register(s.api, huma.Operation{
		OperationID: "list-dead-letters", Method: http.MethodGet, Path: "/v1/dlq",
		Summary: "List dead letters", Description: "The DLQ's entries, oldest first, as `herald dlq list` shows them.",
		Tags: []string{"DLQ"}, Security: needs(ScopeAdmin), Errors: errs,
	}, s.listDeadLetters)
	errs = append(errs, http.StatusNotFound)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-dead-letter", Method: http.MethodGet, Path: "/v1/dlq/{seq}",
		Summary: "Get a dead letter", Description: "One entry with its headers and payload, as `herald dlq show` shows it.",
		Tags: []string{"DLQ"}, Security: needs(ScopeAdmin), Errors: errs,
	}, s.getDeadLetter)
	huma.Register(s.api, huma.Operation{
		OperationID: "redrive-dead-letter", Method: http.MethodPost, Path: "/v1/dlq/{seq}/redrive",
		Summary:     "Redrive a dead letter",
		Description: "Republishes the entry to its original subject with a fresh Nats-Msg-Id, as `herald dlq redrive` does. A notification delivered meanwhile is not sent again: the delivery ledger stops it.",
		Tags:        []string{"DLQ"}, DefaultStatus: http.StatusAccepted, Security: needs(ScopeAdmin),
		Errors: append(errs, http.StatusConflict),
	}, s.redriveDeadLetter)
}

func (s *Service) listDeadLetters(ctx context.Context, in *dlqListInput) (*dlqListOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	if in.Consumer != "" && in.Stream == "" {
		return nil, huma.Error422UnprocessableEntity("consumer needs stream")
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	f := dlq.Filter{Stream: in.Stream, Consumer: in.Consumer, Tenant: in.Tenant, Reason: in.Reason}
	list, total, err := st.dlq.List(cctx, f, in.Limit)
	if err != nil {
		return nil, s.dlqUnavailable(ctx, err)
	}
	out := &dlqListOutput{Body: DeadLetters{Entries: make([]DeadLetter, len(list)), Total: total}}
	for i, e := range list {
		out.Body.Entries[i] = deadLetterOf(e)
	}
	return out, nil
}

func (s *Service) getDeadLetter(ctx context.Context, in *dlqEntryInput) (*dlqEntryOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	e, err := s.deadLetter(cctx, st, in.Seq)
	if err != nil {
		return nil, err
	}
	data, err := st.dlq.Payload(cctx, e)
	if err != nil {
		return nil, s.dlqUnavailable(ctx, err)
	}
	d := DeadLetterDetail{DeadLetter: deadLetterOf(e), Headers: e.Header}
	if json.Valid(data) {
		d.Payload = data
	} else {
		d.Raw = data
	}
	return &dlqEntryOutput{Body: d}, nil
}

func (s *Service) redriveDeadLetter(ctx context.Context, in *dlqEntryInput) (*redriveOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	e, err := s.deadLetter(cctx, st, in.Seq)
	if err != nil {
		return nil, err
	}
	if e.Subject == "" {
		return nil, huma.Error409Conflict("entry " + strconv.FormatUint(e.Seq, 10) + " names no original subject to redrive to")
	}
	r, err := st.dlq.Redrive(cctx, e)
	if errors.Is(err, dlq.ErrTooLarge) {
		return nil, huma.Error409Conflict(err.Error())
	}
	if err != nil {
		return nil, s.dlqUnavailable(ctx, err)
	}
	return &redriveOutput{Status: http.StatusAccepted, Body: Redrive(r)}, nil
}

// deadLetter reads one entry; a sequence the DLQ does not hold is a 404.
func (s *Service) deadLetter(ctx context.Context, st *stores, seq uint64) (dlq.Entry, error) {
	e, err := st.dlq.Get(ctx, seq)
	if errors.Is(err, dlq.ErrNoEntry) {
		return e, huma.Error404NotFound("no dead letter " + strconv.FormatUint(seq, 10))
	}
	if err != nil {
		return e, s.dlqUnavailable(ctx, err)
	}
	return e, nil
}

func (s *Service) dlqUnavailable(ctx context.Context, err error) error {
	s.cfg.Logger.WarnContext(ctx, "DLQ unavailable", "error", err)
	return unavailable("the DLQ cannot be read right now")
}

func deadLetterOf(e dlq.Entry) DeadLetter {
	d := DeadLetter{Seq: e.Seq, Time: e.Time, Stream: e.Stream, Consumer: e.Consumer, Subject: e.Subject,
		OriginalSeq: e.OriginalSeq, Deliveries: e.Deliveries, Tenant: e.Tenant, Reason: e.Reason, PayloadObject: e.PayloadObject}
	if e.Redriven != nil {
		r := Redrive(*e.Redriven)
		d.Redriven = &r
	}
	return d
}
