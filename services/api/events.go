package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	Data            map[string]any `json:"data" doc:"The order (order.*: order, recipients) or the stock level (inventory.*: stock, recipients); see docs/publishing.md."`
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
	Duplicate bool   `json:"duplicate" doc:"JetStream had stored the same event (tenant, id and bytes: the same Nats-Msg-Id) within its duplicate window, and kept that one."`
	// Notifications are planned by the router's own decision, from the
	// same routes and recipients: ids are digests of dedupe keys, so the
	// API knows them without waiting for the router.
	Notifications []string `json:"notifications,omitzero" doc:"The ids (ntf_…) of the notifications the routes plan for the event, one per recipient per channel — the subscribers, accounts' members and topics' members it names included: GET /v1/notifications/{id} finds each once the router has routed the event, within moments. A topic of more than router.fanout_page members is fanned out afterwards, a page at a time: none of its notifications are among the ids. Empty when no route applies or the router will dead-letter the event."`
}

type eventInput struct {
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"255" pattern:"^[ -~]+$" doc:"Repeating a request with the same key and body answers as the first did, for 24 hours, and publishes nothing new. Defaults to the event id."`
	RawBody        []byte `contentType:"application/cloudevents+json"`
	// binary is the event's ce- headers and Content-Type, by their names in
	// lower case, when the request is in binary content mode; nil when the
	// body is the whole event.
	binary http.Header
}

// Resolve tells the content mode as the CloudEvents HTTP binding does: a
// Content-Type of an event format (application/cloudevents+json) means
// structured mode whatever the headers, else a ce-specversion header means
// binary mode, else the body is the whole event (structured, as sent with
// application/json). Header names are matched ignoring case, as HTTP's are.
func (in *eventInput) Resolve(ctx huma.Context) []error {
	if strings.HasPrefix(strings.ToLower(ctx.Header("Content-Type")), "application/cloudevents") {
		return nil
	}
	h := http.Header{}
	ctx.EachHeader(func(name, value string) {
		if lower := strings.ToLower(name); lower == "content-type" || strings.HasPrefix(lower, "ce-") {
			h[lower] = append(h[lower], value)
		}
	})
	if event.IsBinary(h) {
		in.binary = h
	}
	return nil
}

// request is what the Idempotency-Key is bound to: the body, and in binary
// mode the attributes, so the same key with another ce-type is another
// request.
func (in *eventInput) request() []byte {
	if in.binary == nil {
		return in.RawBody
	}
	var b bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(in.binary)) {
		for _, v := range in.binary[name] {
			fmt.Fprintf(&b, "%s: %s\n", name, v)
		}
	}
	b.WriteByte('\n')
	b.Write(in.RawBody)
	return b.Bytes()
}

type eventOutput struct {
	Status   int
	Replayed string `header:"Idempotent-Replayed" doc:"true when this is the recorded answer to an earlier request with the same Idempotency-Key."`
	Body     EventAccepted
}

func registerEvents(s *Service) {
	op := huma.Operation{
		OperationID: "publish-event",
		Method:      http.MethodPost,
		Path:        "/v1/events",
		Summary:     "Publish an event",
		Description: "Publishes a CloudEvent for the key's tenant. Answers 202 once JetStream stored it. " +
			"Structured mode: the body is the event (Content-Type application/cloudevents+json, or application/json without a ce-specversion header). " +
			"Binary mode: the attributes are ce- headers (ce-specversion, ce-id, ce-source, ce-type, ce-tenant…, names in any case), " +
			"the body is the data and Content-Type its media type (application/json).",
		Parameters:    binaryModeHeaders(),
		Tags:          []string{"Events"},
		DefaultStatus: http.StatusAccepted,
		Security:      needs(ScopeSend),
		MaxBodyBytes:  s.bodyLimit(),
		Errors: []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusConflict,
			http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}
	huma.Register(s.api, op, s.publishEvent)
	documentBody(s.api, op.Path, http.MethodPost, reflect.TypeFor[CloudEvent](), "application/cloudevents+json", "application/json")
	// application/json is also binary mode's data, whose shape the type says.
	body := s.api.OpenAPI().Paths[op.Path].Post.RequestBody.Content["application/json"]
	body.Schema = &huma.Schema{AnyOf: []*huma.Schema{body.Schema, {Type: "object",
		Description: "Binary mode (a ce-specversion header): the event's data, the order (order.*: order, recipients) or the stock level (inventory.*: stock, recipients)."}}}
}

// binaryModeHeaders documents the ce- headers of binary content mode; the
// attributes are checked as a structured event's are, by shared/event.
func binaryModeHeaders() []*huma.Param {
	doc := map[string]string{
		"ce-specversion": "Binary content mode: its presence makes the body the event's data. 1.0.",
		"ce-id":          "Binary mode: the event id, the default Idempotency-Key.",
		"ce-source":      "Binary mode: the event's source.",
		"ce-type":        "Binary mode: the event's type, order.<name> or inventory.<name>.",
		"ce-time":        "Binary mode: when it happened, RFC 3339.",
		"ce-tenant":      "Binary mode: the tenant; filled in from the API key when absent, another tenant's is refused (403).",
		"ce-subject":     "Binary mode: the CloudEvents subject.",
		"ce-dataschema":  "Binary mode: the CloudEvents dataschema.",
		"ce-traceparent": "Binary mode: W3C trace context (CloudEvents distributed tracing extension).",
		"ce-tracestate":  "Binary mode: W3C trace state.",
	}
	params := make([]*huma.Param, 0, len(doc))
	for _, name := range slices.Sorted(maps.Keys(doc)) {
		params = append(params, &huma.Param{Name: name, In: "header", Description: doc[name], Schema: &huma.Schema{Type: "string"}})
	}
	return params
}

// documentBody describes a raw body in the OpenAPI document: huma records
// a RawBody as binary, but the route decodes JSON of type t itself.
func documentBody(api huma.API, path, method string, t reflect.Type, contentTypes ...string) {
	schema := api.OpenAPI().Components.Schemas.Schema(t, true, "")
	op := api.OpenAPI().Paths[path].Post
	if method == http.MethodPut {
		op = api.OpenAPI().Paths[path].Put
	}
	body := op.RequestBody
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
	header, body, ev, err := decodeEvent(p, in)
	if err != nil {
		return nil, err
	}
	// On the tenant-bound subject, as a tenant's own publisher would:
	// the router checks the event's tenant against it again.
	subject, _ := event.Subject(ev.Type) // decodeEvent checked it
	subject += "." + ev.Tenant
	noteTenant(ctx, ev.Tenant)
	key := cmp.Or(in.IdempotencyKey, ev.ID)
	c, prev, err := s.claim(ctx, st, ev.Tenant, key, requestHash(eventsRoute, in.request()))
	switch {
	case err != nil:
		return nil, err
	case prev != nil:
		out := &eventOutput{Status: prev.Status, Replayed: "true"}
		return out, s.replayed(ctx, eventsRoute, ev.Tenant, prev, &out.Body)
	}
	// The message id is the one Herald's NATS publishers give the same
	// bytes (event.MsgID), not the Idempotency-Key: another tenant cannot
	// guess it, and whatever came first, NATS or HTTP, the router routes
	// the event once (by tenant and id).
	ack, err := s.publish(ctx, subject, event.MsgID(ev.Tenant, ev.ID, body), header, body)
	if err != nil {
		s.release(ctx, c)
		return nil, err
	}
	out := &eventOutput{Status: http.StatusAccepted, Body: EventAccepted{ID: ev.ID, Tenant: ev.Tenant, Subject: subject,
		Stream: ack.Stream, Sequence: ack.Sequence, Duplicate: ack.Duplicate, Notifications: s.planned(ctx, header, body)}}
	s.done(ctx, c, out.Status, out.Body)
	return out, nil
}

// planned names the notifications the router plans for the event as
// published: none (not nil) when it plans none, nil when the API does not
// know the routes.
func (s *Service) planned(ctx context.Context, header nats.Header, body []byte) []string {
	if s.cfg.Planner == nil {
		return nil
	}
	ids, err := s.cfg.Planner.Plan(ctx, header, body)
	if err != nil {
		// Accepted, and published: the router dead-letters it, saying why.
		s.cfg.Logger.DebugContext(ctx, "the router will plan nothing for an accepted event", "error", err)
	}
	return append([]string{}, ids...)
}

// decodeEvent returns the message to publish — with the key's tenant
// filled in when absent — and the event it decodes to, or the problem to
// answer. A binary-mode event is published in binary mode, its ce- headers
// and Content-Type forwarded (named in lower case, as the NATS binding
// writes them), and nothing else of the request.
func decodeEvent(p Principal, in *eventInput) (nats.Header, []byte, event.Event, error) {
	if in.binary != nil {
		header, err := binaryWithTenant(p, in.binary)
		if err != nil {
			return nil, nil, event.Event{}, err
		}
		ev, err := event.DecodeBinary(header, in.RawBody)
		if err == nil {
			err = checkBinaryEvent(ev, header)
		}
		return header, in.RawBody, ev, refusal(err, true)
	}
	body, err := withTenant(p, in.RawBody)
	if err != nil {
		return nil, nil, event.Event{}, err
	}
	ev, err := event.Decode(body)
	if err == nil {
		err = checkEvent(ev, body)
	}
	return nil, body, ev, refusal(err, false)
}

// refusal is the problem to answer for an event the decoder or the checks
// refused; nil for none.
func refusal(err error, binary bool) error {
	var invalid *event.ValidationError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, event.ErrMalformed):
		return huma.Error400BadRequest(err.Error())
	case errors.As(err, &invalid):
		return huma.Error422UnprocessableEntity("invalid event", problems(invalid.Problems, binary)...)
	}
	return huma.Error422UnprocessableEntity("invalid event", err)
}

// problems locates each problem where the client sent it: a structured
// event's fields in the body; in binary mode, attributes in their headers
// and the data's fields in the body, which is the data.
func problems(list []string, binary bool) []error {
	errs := make([]error, len(list))
	for i, p := range list {
		field, msg, _ := strings.Cut(p, ": ")
		location := "body." + field
		switch {
		case binary && (strings.HasPrefix(field, "ce-") || field == "content-type"):
			location = "header." + field
		case binary && field == "data":
			location = "body"
		case binary && strings.HasPrefix(field, "data"):
			location = "body" + strings.TrimPrefix(field, "data")
		}
		errs[i] = &huma.ErrorDetail{Location: location, Message: msg}
	}
	return errs
}

// binaryWithTenant is withTenant for binary mode: the headers to publish,
// with ce-tenant filled in from the key when absent, or the refusal of
// another tenant's event.
func binaryWithTenant(p Principal, h http.Header) (nats.Header, error) {
	header := nats.Header(maps.Clone(h))
	if tenants := header["ce-tenant"]; len(tenants) > 0 {
		for _, t := range tenants {
			if !p.Reaches(t) {
				return nil, huma.Error403Forbidden(fmt.Sprintf("the event's tenant %q is not the API key's", t))
			}
		}
		return header, nil
	}
	if p.Tenant != "" {
		header["ce-tenant"] = []string{p.Tenant}
	}
	return header, nil
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
	if err := checkType(ev, "type"); err != nil {
		return err
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

// checkBinaryEvent is checkEvent for binary mode: the attributes are the
// ce- headers.
func checkBinaryEvent(ev event.Event, header nats.Header) error {
	if err := checkType(ev, "ce-type"); err != nil {
		return err
	}
	var unknown []string
	for name := range header {
		if attr, ok := strings.CutPrefix(name, "ce-"); ok && !attributes[attr] {
			unknown = append(unknown, name+": is not an attribute Herald reads (a typo, or an extension other than tenant, traceparent, tracestate)")
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return &event.ValidationError{Problems: unknown}
	}
	return checkData(ev)
}

// checkType refuses a type with no stream, naming the field it came in.
func checkType(ev event.Event, field string) error {
	if _, err := event.Subject(ev.Type); err != nil {
		return &event.ValidationError{Problems: []string{field + ": " + strings.TrimPrefix(err.Error(), "event type ")}}
	}
	return nil
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

// publish publishes body, with header (the attributes of a binary-mode
// event; nil for a structured one), and waits for JetStream's
// acknowledgement.
func (s *Service) publish(ctx context.Context, subject, msgID string, header nats.Header, body []byte) (*jetstream.PubAck, error) {
	msg := nats.NewMsg(subject)
	maps.Copy(msg.Header, header)
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
