package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
)

// WorkflowRun is one recipient's way through a route's steps.
type WorkflowRun struct {
	ID        string       `json:"id" example:"run_5f1c0a9e3b2d4c6e8f0a1b2c3d4e5f60"`
	Tenant    string       `json:"tenant"`
	Order     string       `json:"order" doc:"What the run is about: the order's id, or the event's for events without an order. Its order's events (cancel_on, a wait's until_event) end it."`
	Event     string       `json:"event" doc:"The id of the event that started it."`
	EventType string       `json:"event_type" example:"order.created"`
	Steps     []string     `json:"steps" doc:"The route's steps, as written (send email; wait 24h or order.confirmed; …)."`
	Recipient RunRecipient `json:"recipient"`
	Step      int          `json:"step" doc:"The step being taken or waiting, from 0."`
	State     string       `json:"state" enum:"running,waiting,done,cancelled,failed,skipped"`
	Until     *time.Time   `json:"until,omitempty" doc:"When a waiting step's timer fires."`
	Timeline  []RunEntry   `json:"timeline" doc:"What happened, oldest first."`
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
}

// RunRecipient is whom a run is for.
type RunRecipient struct {
	Role       string `json:"role,omitempty" example:"supplier"`
	Subscriber string `json:"subscriber,omitempty" doc:"The subscriber's id, when the event named a subscriber (or an account or topic that holds them)."`
	Name       string `json:"name,omitempty"`
	Email      string `json:"email,omitempty"`
	Phone      string `json:"phone,omitempty"`
}

// RunEntry is one thing that happened to a run.
type RunEntry struct {
	At     time.Time `json:"at"`
	Step   int       `json:"step"`
	What   string    `json:"what" enum:"started,sent,notified,waiting,woken,passed,skipped,merged,ended,cancelled,failed,done"`
	Detail string    `json:"detail,omitempty" example:"by order.confirmed evt-0002"`
}

// RunListing is a page of a tenant's runs.
type RunListing struct {
	Tenant     string        `json:"tenant"`
	Runs       []WorkflowRun `json:"runs"`
	NextCursor string        `json:"next_cursor,omitempty" doc:"Pass as cursor= (with the same filters) for the next page; absent on the last page."`
}

type runListInput struct {
	Tenant     string `query:"tenant" doc:"Whose runs: required with an admin key; a tenant key lists its own tenant's."`
	Order      string `query:"order" maxLength:"128" doc:"Only the runs about this order (or event)."`
	Subscriber string `query:"subscriber" maxLength:"128" doc:"Only the runs for this subscriber."`
	State      string `query:"state" enum:"running,waiting,done,cancelled,failed,skipped" doc:"Only the runs in this state."`
	Limit      int    `query:"limit" minimum:"1" maximum:"100" default:"50" doc:"Page size."`
	Cursor     string `query:"cursor" maxLength:"512" doc:"next_cursor of the page before."`
}

type runListOutput struct {
	Link string `header:"Link" doc:"The next page, rel=\"next\", as RFC 8288 describes."`
	Body RunListing
}

type runInput struct {
	Tenant string `query:"tenant" doc:"Whose run: required with an admin key."`
	ID     string `path:"id" maxLength:"64"`
}

type runOutput struct{ Body WorkflowRun }

func registerRuns(s *Service) {
	errs := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}
	huma.Register(s.api, huma.Operation{
		OperationID: "list-runs", Method: http.MethodGet, Path: "/v1/runs",
		Summary:     "List workflow runs",
		Description: "A tenant's runs of routes with steps, an order's together, optionally only an order's, a subscriber's, or those in one state.",
		Tags:        []string{"Runs"}, Security: needs(ScopeRead), Errors: errs,
	}, s.listRuns)
	errs = append(errs, http.StatusNotFound)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-run", Method: http.MethodGet, Path: "/v1/runs/{id}",
		Summary: "Get a workflow run", Description: "One run with its timeline: each step planned, waiting until when, woken by its timer or ended by an event, cancelled by whom.",
		Tags: []string{"Runs"}, Security: needs(ScopeRead), Errors: errs,
	}, s.getRun)
	huma.Register(s.api, huma.Operation{
		OperationID: "cancel-run", Method: http.MethodPost, Path: "/v1/runs/{id}/cancel",
		Summary:     "Cancel a workflow run",
		Description: "Ends the run: a waiting step's timer is removed, and nothing more is sent. A run that has ended is a 409.",
		Tags:        []string{"Runs"}, Security: needs(ScopeSend), Errors: append(errs, http.StatusConflict),
	}, s.cancelRun)
}

// runsOf opens the runs for a request naming tenant: the tenant it may
// read, or an error to answer.
func (s *Service) runsOf(ctx context.Context, named string) (*workflow.Runs, string, bool, error) {
	st, err := s.ready()
	if err != nil {
		return nil, "", false, err
	}
	tenant, err := s.tenantOf(ctx, named)
	if err != nil {
		return nil, "", false, err
	}
	if !event.ValidTenant(tenant) {
		return nil, "", false, huma.Error422UnprocessableEntity("tenant: not a tenant id (1 to 64 letters, digits, '-' or '_')")
	}
	return st.runs, tenant, principal(ctx).Reaches(tenant), nil
}

func (s *Service) listRuns(ctx context.Context, in *runListInput) (*runListOutput, error) {
	runs, tenant, reaches, err := s.runsOf(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	out := &runListOutput{Body: RunListing{Tenant: tenant, Runs: []WorkflowRun{}}}
	if !reaches {
		return out, nil
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	page, err := runs.List(cctx, tenant, workflow.Filter{Subject: in.Order, Subscriber: in.Subscriber,
		State: workflow.State(in.State), Cursor: in.Cursor, Limit: in.Limit})
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "runs unavailable", "error", err)
		return nil, unavailable("the runs cannot be read right now")
	}
	for _, r := range page.Runs {
		out.Body.Runs = append(out.Body.Runs, runOf(r))
	}
	if page.Next != "" {
		out.Body.NextCursor = page.Next
		q := url.Values{"cursor": {page.Next}}
		for k, v := range map[string]string{"tenant": in.Tenant, "order": in.Order, "subscriber": in.Subscriber, "state": in.State} {
			if v != "" {
				q.Set(k, v)
			}
		}
		out.Link = fmt.Sprintf(`</v1/runs?%s>; rel="next"`, q.Encode())
	}
	return out, nil
}

func (s *Service) getRun(ctx context.Context, in *runInput) (*runOutput, error) {
	runs, tenant, reaches, err := s.runsOf(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	if !reaches {
		return nil, noRun()
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	r, err := runs.Get(cctx, tenant, in.ID)
	if err != nil {
		return nil, s.runProblem(ctx, err)
	}
	return &runOutput{Body: runOf(r)}, nil
}

func (s *Service) cancelRun(ctx context.Context, in *runInput) (*runOutput, error) {
	runs, tenant, reaches, err := s.runsOf(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	if !reaches {
		return nil, noRun()
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	r, err := runs.Cancel(cctx, tenant, in.ID, "the API (key "+principal(ctx).KeyID+")")
	if errors.Is(err, workflow.ErrEnded) {
		return nil, huma.Error409Conflict(fmt.Sprintf("the run has ended (%s): nothing is left to cancel", r.State))
	}
	if err != nil {
		return nil, s.runProblem(ctx, err)
	}
	return &runOutput{Body: runOf(r)}, nil
}

// noRun is the answer for a run the key does not reach, or that does not
// exist: the same.
func noRun() error { return huma.Error404NotFound("no such run") }

func (s *Service) runProblem(ctx context.Context, err error) error {
	if errors.Is(err, workflow.ErrNotFound) {
		return noRun()
	}
	s.cfg.Logger.WarnContext(ctx, "runs unavailable", "error", err)
	return unavailable("the runs cannot be read right now")
}

func runOf(r workflow.Run) WorkflowRun {
	ev, _, _ := event.Read(r.Event)
	out := WorkflowRun{ID: r.ID, Tenant: r.Tenant, Order: r.Subject, Event: ev.ID, EventType: ev.Type, Steps: describe(r.Route.Steps),
		Recipient: RunRecipient{Role: r.Recipient.Role, Subscriber: r.Recipient.Subscriber, Name: r.Recipient.Name,
			Email: r.Recipient.Email, Phone: r.Recipient.Phone},
		Step: r.Step, State: string(r.State), Timeline: make([]RunEntry, len(r.Timeline)), CreatedAt: r.Created, UpdatedAt: r.Updated}
	if !r.Until.IsZero() {
		out.Until = &r.Until
	}
	for i, e := range r.Timeline {
		out.Timeline[i] = RunEntry{At: e.At, Step: e.Step, What: e.What, Detail: e.Detail}
	}
	return out
}

// describe writes each step as a person reads it.
func describe(steps []router.Step) []string {
	out := make([]string, len(steps))
	for i, st := range steps {
		out[i] = st.Describe()
	}
	return out
}
