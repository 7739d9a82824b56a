package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/telemetry"
)

const eventsRoute = "POST /v1/events"

// CloudEvent documents the body of POST /v1/events. The body itself is
// decoded by shared/event, strictly, from its raw bytes: this type only
// describes it in the OpenAPI document.
type CloudEvent struct {
	SpecVersion     string         `json:"specversion" enum:"1.0"`
	ID              string         `json:"id" maxLength:"256" pattern:"^[A-Za-z0-9_-][A-Za-z0-9._-]*$" doc:"Unique per source; the default Idempotency-Key."`
	Source          string         `json:"source" maxLength:"1024"`
	Type            string         `json:"type" example:"order.created" doc:"order.<name> is published on orders.<name>, inventory.<name> on inventory.<name>."`
	Time            string         `json:"time,omitempty" format:"date-time"`
	DataContentType string         `json:"datacontenttype,omitempty" example:"application/json"`
	DataSchema      string         `json:"dataschema,omitempty" format:"uri"`
	Subject         string         `json:"subject,omitempty"`
	Tenant          string         `json:"tenant,omitempty" pattern:"^[A-Za-z0-9_-]{1,64}$" doc:"Filled in from the API key when absent; another tenant's is refused (403)."`
	TraceParent     string         `json:"traceparent,omitempty" doc:"W3C trace context (CloudEvents distributed tracing extension)."`
	TraceState      string         `json:"tracestate,omitempty"`
	Data            map[string]any `json:"data" doc:"The order (order.*: order, recipients) or the stock level (inventory.*: stock, recipients); see README, Events."`
}

// attributes are the envelope members the API accepts: CloudEvents' own,
// Herald's tenant, and the tracing extension. Anything else is a typo or an
// extension Herald would silently ignore, and is refused.
var attributes = map[string]bool{
	"specversion": true, "id": true, "source": true, "type": true, "time": true, "datacontenttype": true,
	"dataschema": true, "subject": true, "tenant": true, "traceparent": true, "tracestate": true, "data": true,
}

// EventAccepted is the answer to an event JetStream stored.
type EventAccepted struct {
	ID        string `json:"id" doc:"The event id."`
	Tenant    string `json:"tenant"`
	Subject   string `json:"subject" doc:"The subject it was published on."`
	Stream    string `json:"stream" doc:"The stream that stored it."`
	Sequence  uint64 `json:"sequence" doc:"Its sequence in the stream (the earlier copy's, if a duplicate)."`
	Duplicate bool   `json:"duplicate" doc:"JetStream had stored a message with the same Nats-Msg-Id within its duplicate window, and kept that one."`
}

type eventInput struct {
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"255" pattern:"^[ -~]+$" doc:"Repeating a request with the same key and body answers as the first did, for 24 hours, and publishes nothing new. Defaults to the event id."`
	RawBody        []byte `contentType:"application/cloudevents+json"`
}

type eventOutput struct {
	Status   int
	Replayed string `header:"Idempotent-Replayed" doc:"true when this is the recorded answer to an earlier request with the same Idempotency-Key."`
	Body     EventAccepted
}

func registerEvents(s *Service) {
	op := huma.Operation{
		OperationID:   "publish-event",
		Method:        http.MethodPost,
		Path:          "/v1/events",
		Summary:       "Publish an event",
		Description:   "Publishes a CloudEvent (structured JSON) for the key's tenant. Answers 202 once JetStream stored it.",
		Tags:          []string{"Events"},
		DefaultStatus: http.StatusAccepted,
		Security:      needs(ScopeSend),
		MaxBodyBytes:  s.bodyLimit(),
		Errors: []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusConflict,
			http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}
	huma.Register(s.api, op, s.publishEvent)
	documentBody(s.api, op.Path, reflect.TypeFor[CloudEvent](), "application/cloudevents+json", "application/json")
}

// documentBody describes a raw body in the OpenAPI document: huma records
// a RawBody as binary, but the route decodes JSON of type t itself.
func documentBody(api huma.API, path string, t reflect.Type, contentTypes ...string) {
	schema := api.OpenAPI().Components.Schemas.Schema(t, true, "")
	body := api.OpenAPI().Paths[path].Post.RequestBody
	body.Content = map[string]*huma.MediaType{}
	for _, ct := range contentTypes {
		body.Content[ct] = &huma.MediaType{Schema: schema}
	}
}

func (s *Service) publishEvent(ctx context.Context, in *eventInput) (*eventOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	p := principal(ctx)
	body, ev, err := s.decodeEvent(p, in.RawBody)
	if err != nil {
		return nil, err
	}
	// On the tenant-bound subject, as a tenant's own publisher would:
	// the router checks the event's tenant against it again.
	subject, _ := event.Subject(ev.Type) // decodeEvent checked it
	subject += "." + ev.Tenant
	noteTenant(ctx, ev.Tenant)
	key := cmp.Or(in.IdempotencyKey, ev.ID)
	c, prev, err := s.claim(ctx, st, ev.Tenant, key, requestHash(eventsRoute, in.RawBody))
	switch {
	case err != nil:
		return nil, err
	case prev != nil:
		out := &eventOutput{Status: prev.Status, Replayed: "true"}
		return out, s.replayed(ctx, eventsRoute, ev.Tenant, prev, &out.Body)
	}
	ack, err := s.publish(ctx, subject, ev.Tenant+":"+key, body)
	if err != nil {
		s.release(ctx, c)
		return nil, err
	}
	out := &eventOutput{Status: http.StatusAccepted, Body: EventAccepted{ID: ev.ID, Tenant: ev.Tenant, Subject: subject,
		Stream: ack.Stream, Sequence: ack.Sequence, Duplicate: ack.Duplicate}}
	s.done(ctx, c, out.Status, out.Body)
	return out, nil
}

// decodeEvent returns the body to publish — with the key's tenant filled
// in when absent — and the event it decodes to, or the problem to answer.
func (s *Service) decodeEvent(p Principal, raw []byte) ([]byte, event.Event, error) {
	body, err := withTenant(p, raw)
	if err != nil {
		return nil, event.Event{}, err
	}
	ev, err := event.Decode(body)
	if err == nil {
		err = checkEvent(ev, body)
	}
	var invalid *event.ValidationError
	switch {
	case errors.Is(err, event.ErrMalformed):
		return nil, event.Event{}, huma.Error400BadRequest(err.Error())
	case errors.As(err, &invalid):
		return nil, event.Event{}, huma.Error422UnprocessableEntity("invalid event", problems(invalid.Problems)...)
	case err != nil:
		return nil, event.Event{}, huma.Error422UnprocessableEntity("invalid event", err)
	}
	return body, ev, nil
}

func problems(list []string) []error {
	errs := make([]error, len(list))
	for i, p := range list {
		field, msg, _ := strings.Cut(p, ": ")
		errs[i] = &huma.ErrorDetail{Location: "body." + field, Message: msg}
	}
	return errs
}

// withTenant returns the body with the key's tenant filled in when it names
// none, leaving every other byte as it was; a body naming another tenant is
// refused. What is not a JSON object passes unchanged, for the decoder to
// describe.
func withTenant(p Principal, raw []byte) ([]byte, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return raw, nil
	}
	if t, ok := members["tenant"]; ok {
		var tenant string
		if err := json.Unmarshal(t, &tenant); err == nil && !p.Reaches(tenant) {
			return nil, huma.Error403Forbidden(fmt.Sprintf("the event's tenant %q is not the API key's", tenant))
		}
		return raw, nil
	}
	if p.Tenant == "" { // an admin key: the event must say whose it is
		return raw, nil
	}
	open := bytes.IndexByte(raw, '{') + 1 // an object: '{' is the first non-space byte
	member := fmt.Sprintf(`"tenant":%q`, p.Tenant)
	if len(members) > 0 {
		member += ","
	}
	return slices.Concat(raw[:open], []byte(member), raw[open:]), nil
}

// checkEvent is what the API asks of an event beyond the decoder: a type
// with a stream, data of its type's shape, and no member Herald would
// silently ignore.
func checkEvent(ev event.Event, body []byte) error {
	if _, err := event.Subject(ev.Type); err != nil {
		return &event.ValidationError{Problems: []string{"type: " + strings.TrimPrefix(err.Error(), "event type ")}}
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return err
	}
	var unknown []string
	for name := range members {
		if !attributes[name] {
			unknown = append(unknown, name+": is not an attribute Herald reads (a typo, or an extension other than tenant, traceparent, tracestate)")
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return &event.ValidationError{Problems: unknown}
	}
	return checkData(ev)
}

// checkData validates the data by the event's family, as the router will,
// then refuses members its shape does not have: the decoder lets them pass
// (a NATS publisher's event with one is still routed), the API does not.
func checkData(ev event.Event) error {
	var shape any
	var err error
	if strings.HasPrefix(ev.Type, "order.") {
		_, err = ev.OrderData()
		shape = new(event.OrderData)
	} else {
		_, err = ev.StockData()
		shape = new(event.StockData)
	}
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(ev.Data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(shape); err != nil {
		return &event.ValidationError{Problems: []string{"data: " + strings.TrimPrefix(err.Error(), "json: ")}}
	}
	return nil
}

// claim takes the idempotency key, or says why the request cannot go on.
func (s *Service) claim(ctx context.Context, st *stores, tenant, key, request string) (*claim, *record, error) {
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	c, prev, err := st.idempotency.claim(cctx, tenant, key, request)
	switch {
	case errors.Is(err, errKeyReused):
		return nil, nil, huma.Error422UnprocessableEntity("this Idempotency-Key was used with another request; use a new key for a new request")
	case errors.Is(err, errInProgress):
		return nil, nil, huma.Error409Conflict("a request with this Idempotency-Key is still in progress; try again shortly")
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "idempotency record unavailable", "error", err)
		return nil, nil, unavailable("NATS is unavailable")
	}
	return c, prev, nil
}

// publish publishes body and waits for JetStream's acknowledgement.
func (s *Service) publish(ctx context.Context, subject, msgID string, body []byte) (*jetstream.PubAck, error) {
	msg := nats.NewMsg(subject)
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	ack, err := telemetry.PublishMsg(cctx, s.js, msg)
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		return nil, huma.Error413RequestEntityTooLarge("the event is larger than NATS accepts")
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "publishing an event failed", "subject", subject, "error", err)
		return nil, unavailable("NATS did not store the event")
	}
	return ack, nil
}

// replayed decodes a repeated request's first answer into body.
func (s *Service) replayed(ctx context.Context, route, tenant string, prev *record, body any) error {
	s.metrics.replay(ctx, route, tenant)
	if err := json.Unmarshal(prev.Answer, body); err != nil {
		s.cfg.Logger.ErrorContext(ctx, "unreadable idempotency record", "tenant", tenant, "error", err)
		return huma.Error500InternalServerError("the recorded answer to this Idempotency-Key cannot be read")
	}
	return nil
}

// release gives up the claim of a request that failed, detached from the
// request: a client that hung up must not leave its key claimed.
func (s *Service) release(ctx context.Context, c *claim) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), natsTimeout)
	defer cancel()
	if err := c.release(cctx); err != nil {
		s.cfg.Logger.WarnContext(ctx, "idempotency claim not released; the key is refused (409) until the claim expires",
			"expires_in", claimExpiry, "error", err)
	}
}

// done records the answer of a request that succeeded. If that fails the
// answer stands — the event is stored — and the key reads as in progress
// until its claim expires; a retry then publishes again, which JetStream's
// duplicate window drops.
func (s *Service) done(ctx context.Context, c *claim, status int, answer any) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), natsTimeout)
	defer cancel()
	if err := c.done(cctx, status, answer); err != nil {
		s.cfg.Logger.WarnContext(ctx, "idempotency answer not recorded", "error", err)
	}
}
