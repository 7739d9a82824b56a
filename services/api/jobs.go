package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/nats-io/nats.go"

	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

const jobsRoute = "POST /v1/notifications"

// Job is one notification its caller writes, sent without an order event.
type Job struct {
	Tenant    string       `json:"tenant,omitempty" pattern:"^[A-Za-z0-9_-]{1,64}$" doc:"Whose notification: the API key's when absent, and required with an admin key; another tenant's is refused (403)."`
	Channel   string       `json:"channel" enum:"email,sms,whatsapp,webhook" doc:"Only email is delivered today; the others are refused (422) until they are."`
	Recipient JobRecipient `json:"recipient"`
	Subject   string       `json:"subject" minLength:"1" maxLength:"998" doc:"Sent as written, on one line."`
	Text      string       `json:"text" minLength:"1" doc:"The plain-text body; every client can show it."`
	HTML      string       `json:"html,omitempty" doc:"An HTML body, sent with text as multipart/alternative."`
	Locale    string       `json:"locale,omitempty" maxLength:"35" pattern:"^[A-Za-z]{2,3}([_-][A-Za-z0-9]{1,8})*$" example:"es-MX" doc:"The recipient's language, recorded with the notification."`
	Priority  string       `json:"priority,omitempty" enum:"critical,normal,low" default:"normal" doc:"Orders work within the channel."`
	Provider  string       `json:"provider,omitempty" pattern:"^[A-Za-z0-9_-]{1,64}$" doc:"Send through this provider only, instead of the tenant's chain: one the chain names (the platform's, when the tenant names none). A name it lacks is accepted here and fails the notification, saying so (GET /v1/notifications/{id}): the chain is the worker's to resolve at send time."`
	Fallback  string       `json:"fallback,omitempty" pattern:"^[A-Za-z0-9_-]{1,64}$" doc:"With provider: the one provider tried after it, if it fails."`
	// Attachments are documents already stored, by object name.
	Attachments []string `json:"attachments,omitempty" maxItems:"10" uniqueItems:"true" doc:"Stored documents of the tenant, by object name (<tenant>/…), attached as they are now."`
	Reference   string   `json:"reference,omitempty" maxLength:"255" doc:"The caller's own id for this notification; part of its identity, with the Idempotency-Key."`
}

// JobRecipient is who a job goes to.
type JobRecipient struct {
	Address string `json:"address" format:"email" maxLength:"254"`
	Name    string `json:"name,omitempty" maxLength:"256"`
}

// JobAccepted is the answer to a job JetStream stored.
type JobAccepted struct {
	ID        string `json:"id" doc:"The notification id: GET /v1/notifications/{id} finds it once a worker has taken it up."`
	Tenant    string `json:"tenant"`
	Stream    string `json:"stream" doc:"The stream that stored it."`
	Sequence  uint64 `json:"sequence" doc:"Its sequence in the stream (the earlier copy's, if a duplicate)."`
	Duplicate bool   `json:"duplicate" doc:"JetStream had stored the same notification within its duplicate window, and kept that one."`
}

type jobInput struct {
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"255" pattern:"^[ -~]+$" doc:"Repeating a request with the same key and body answers as the first did, for 24 hours, and sends nothing new. Defaults to a digest of the body."`
	Body           Job
}

type jobOutput struct {
	Status   int
	Replayed string `header:"Idempotent-Replayed" doc:"true when this is the recorded answer to an earlier request with the same Idempotency-Key."`
	Body     JobAccepted
}

func registerJobs(s *Service) {
	huma.Register(s.api, huma.Operation{
		OperationID:   "send-notification",
		Method:        http.MethodPost,
		Path:          "/v1/notifications",
		Summary:       "Send a notification",
		Description:   "Sends one notification the caller wrote, without an event, the way a routed one is sent. Answers 202 once JetStream stored it.",
		Tags:          []string{"Notifications"},
		DefaultStatus: http.StatusAccepted,
		Security:      needs(ScopeSend),
		MaxBodyBytes:  s.bodyLimit(),
		Errors: []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusConflict,
			http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}, s.sendJob)
}

func (s *Service) sendJob(ctx context.Context, in *jobInput) (*jobOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	job := in.Body
	if job.Tenant, err = jobTenant(principal(ctx), job.Tenant); err != nil {
		return nil, err
	}
	noteTenant(ctx, job.Tenant)
	if err := checkJob(job); err != nil {
		return nil, err
	}
	// The decoded request, not its bytes, identifies it: the same job
	// written with other spacing or member order is the same job.
	canonical, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	hash := requestHash(jobsRoute, canonical)
	key := cmp.Or(in.IdempotencyKey, "body:"+hash)
	c, prev, err := s.claim(ctx, st, job.Tenant, key, hash)
	switch {
	case err != nil:
		return nil, err
	case prev != nil:
		out := &jobOutput{Status: prev.Status, Replayed: "true"}
		return out, s.replayed(ctx, jobsRoute, job.Tenant, prev, &out.Body)
	}
	// After the replay: a request answered before keeps its answer.
	if err := s.withinQuota(ctx, st, job.Tenant, event.Channel(job.Channel)); err != nil {
		s.release(ctx, c)
		return nil, err
	}
	out, err := s.publishJob(ctx, st, job, key)
	if err != nil {
		s.release(ctx, c)
		return nil, err
	}
	s.done(ctx, c, out.Status, out.Body)
	return out, nil
}

// jobTenant is whose the job is: the key's tenant, or the one an admin key
// names.
func jobTenant(p Principal, named string) (string, error) {
	switch {
	case named != "" && !p.Reaches(named):
		return "", huma.Error403Forbidden(fmt.Sprintf("the notification's tenant %q is not the API key's", named))
	case named == "" && p.Tenant == "":
		return "", huma.Error422UnprocessableEntity("an admin key names the tenant", &huma.ErrorDetail{
			Location: "body.tenant", Message: "required with an admin key"})
	}
	return cmp.Or(named, p.Tenant), nil
}

// checkJob is what the schema cannot say: which channels are delivered,
// how provider and fallback go together, whose the attachments are.
func checkJob(job Job) error {
	var problems []error
	if job.Channel != string(event.ChannelEmail) {
		problems = append(problems, &huma.ErrorDetail{Location: "body.channel", Value: job.Channel,
			Message: "channel " + job.Channel + " is not available yet; only email is delivered today"})
	}
	switch {
	case job.Fallback != "" && job.Provider == "":
		problems = append(problems, &huma.ErrorDetail{Location: "body.fallback", Value: job.Fallback,
			Message: "a fallback needs a provider to fall back from"})
	case job.Fallback != "" && job.Fallback == job.Provider:
		problems = append(problems, &huma.ErrorDetail{Location: "body.fallback", Value: job.Fallback,
			Message: "the fallback is the provider itself"})
	}
	for i, object := range job.Attachments {
		if !documents.BelongsTo(object, job.Tenant) {
			problems = append(problems, noDocument(i, object))
		}
	}
	problems = append(problems, jobTextProblems(job)...)
	if len(problems) > 0 {
		return huma.Error422UnprocessableEntity("invalid notification", problems...)
	}
	return nil
}

// jobTextProblems are the job's texts that hold control characters: the
// subject, the recipient's name and the reference are one line each (a CR
// or LF in a header ends it); the bodies keep their layout and nothing else.
func jobTextProblems(job Job) []error {
	var problems []error
	check := func(location string, err error) {
		if err != nil {
			problems = append(problems, &huma.ErrorDetail{Location: location, Message: err.Error()})
		}
	}
	check("body.subject", event.CheckText(job.Subject))
	check("body.recipient.name", event.CheckText(job.Recipient.Name))
	check("body.reference", event.CheckText(job.Reference))
	check("body.text", event.CheckLines(job.Text))
	check("body.html", event.CheckLines(job.HTML))
	return problems
}

// noDocument is the problem of an attachment that is not one of the
// tenant's stored documents — the same words whether it is another
// tenant's or none at all, so names cannot be probed across tenants.
func noDocument(i int, object string) error {
	return &huma.ErrorDetail{Location: fmt.Sprintf("body.attachments[%d]", i), Value: object,
		Message: "no stored document of the tenant has this name"}
}

// publishJob sends the job to NOTIFY as a routed notification is sent,
// records it as accepted (notification.Accepted, with the caller's
// reference as its event), and answers with its id once JetStream stored it.
func (s *Service) publishJob(ctx context.Context, st *stores, job Job, key string) (*jobOutput, error) {
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	attachments, err := s.attachments(cctx, st.documents, job)
	if err != nil {
		return nil, err
	}
	d := delivery(job, key, attachments)
	d.Priority = s.plan(job.Tenant).Cap(d.Priority)
	acks, err := notification.Publish(cctx, s.js, []notification.Delivery{d})
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		return nil, huma.Error413RequestEntityTooLarge("the notification is larger than NATS accepts")
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "publishing a notification failed", "tenant", job.Tenant, "error", err)
		return nil, unavailable("NATS did not store the notification")
	}
	s.accepted(cctx, d)
	return &jobOutput{Status: http.StatusAccepted, Body: JobAccepted{ID: d.ID, Tenant: d.Tenant,
		Stream: acks[0].Stream, Sequence: acks[0].Sequence, Duplicate: acks[0].Duplicate}}, nil
}

// accepted records d as accepted, so the listing shows it pending before a
// worker claims it. A failure is logged, not answered: d is stored and will
// be sent, so a 503 ("nothing was done") would be false, and its retry
// would answer a duplicate. The notification is listed anyway once a
// worker claims it, from its ledger entry.
func (s *Service) accepted(ctx context.Context, d notification.Delivery) {
	err := notification.PublishAccepted(ctx, s.js, notification.AcceptedOf(d.Event.ID, []notification.Delivery{d}, time.Now()))
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "recording an accepted notification failed; it is not listed as pending until a worker claims it",
			"tenant", d.Tenant, "notification_id", d.ID, "error", err)
	}
}

// attachments references the job's documents as stored now: the worker
// sends these bytes, or fails the notification if they changed.
func (s *Service) attachments(ctx context.Context, store *documents.Store, job Job) ([]notification.Document, error) {
	if len(job.Attachments) == 0 {
		return nil, nil
	}
	refs := make([]notification.Document, len(job.Attachments))
	var missing []error
	for i, object := range job.Attachments {
		ref, ok, err := store.Lookup(ctx, object, "attachment")
		switch {
		case err != nil:
			s.cfg.Logger.WarnContext(ctx, "documents unavailable", "error", err)
			return nil, unavailable("the document store is unavailable")
		case !ok:
			missing = append(missing, noDocument(i, object))
		case ref.Size > s.cfg.AttachMaxBytes:
			// There is no text to put a link in: refused now, rather
			// than accepted and failed by the worker.
			missing = append(missing, &huma.ErrorDetail{Location: fmt.Sprintf("body.attachments[%d]", i), Value: object,
				Message: fmt.Sprintf("is %d bytes, more than documents.attach_max_bytes (%d)", ref.Size, s.cfg.AttachMaxBytes)})
		}
		refs[i] = ref
	}
	if len(missing) > 0 {
		return nil, huma.Error422UnprocessableEntity("invalid notification", missing...)
	}
	return refs, nil
}

// delivery is the job as a delivery worker takes it. Its dedupe key is the
// job's own kind (notification.JobKey): never an order notification's.
func delivery(job Job, key string, attachments []notification.Document) notification.Delivery {
	c := event.Channel(job.Channel)
	dedupe := notification.JobKey(job.Tenant, key, job.Reference, c, job.Recipient.Address)
	d := notification.Delivery{
		ID: notification.ID(dedupe), DedupeKey: dedupe, Tenant: job.Tenant, Channel: c,
		Priority:    notification.Priority(cmp.Or(job.Priority, string(notification.PriorityNormal))),
		Recipient:   notification.Recipient{Name: job.Recipient.Name, Address: job.Recipient.Address},
		Locale:      job.Locale,
		Message:     &notification.Message{Subject: job.Subject, Text: job.Text, HTML: job.HTML},
		Attachments: attachments,
		Event:       notification.EventRef{ID: job.Reference, Type: "job", Source: jobsRoute},
		CreatedAt:   time.Now().UTC(),
	}
	if job.Provider != "" {
		d.Providers = append(d.Providers, job.Provider)
	}
	if job.Fallback != "" {
		d.Providers = append(d.Providers, job.Fallback)
	}
	return d
}
