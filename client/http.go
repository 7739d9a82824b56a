package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"
)

// HTTP publishes events through Herald's HTTP API (POST /v1/events), for a
// service that does not speak NATS. The API key decides the tenant: an
// event for another tenant is refused (403).
type HTTP struct {
	endpoint string
	apiKey   string
	client   *http.Client
}

// DefaultHTTPTimeout bounds a request whose ctx has no deadline.
const DefaultHTTPTimeout = 10 * time.Second

// maxIdempotencyKey is the longest Idempotency-Key the API takes; a longer
// event id (ids may have 256 bytes) is left for the API to default to.
const maxIdempotencyKey = 255

// NewHTTP publishes through the API at baseURL (Herald's public listener,
// such as https://herald.example.com) with a tenant's API key (hk_…),
// which goes in the Authorization header and nowhere else: no error or log
// repeats it. hc defaults to http.DefaultClient.
func NewHTTP(baseURL, apiKey string, hc *http.Client) (*HTTP, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port]", baseURL)
	}
	if strings.TrimSpace(apiKey) == "" {
		return nil, errors.New("client: an API key is required")
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &HTTP{endpoint: strings.TrimRight(baseURL, "/") + "/v1/events", apiKey: apiKey, client: hc}, nil
}

// accepted is the API's answer to a stored event (api.EventAccepted).
type accepted struct {
	ID        string `json:"id"`
	Subject   string `json:"subject"`
	Stream    string `json:"stream"`
	Sequence  uint64 `json:"sequence"`
	Duplicate bool   `json:"duplicate"`
	// Notifications are the ids the routes plan for the event.
	Notifications []string `json:"notifications"`
}

// Publish posts ev and returns once JetStream stored it (202). The event
// id is the Idempotency-Key: the same event posted again within the API's
// idempotency TTL (24 hours) gets the first answer back, stored nothing
// new, and is reported as a Duplicate. ctx's trace context goes in the
// traceparent header, which the API continues. A refusal is an *APIError
// in the API's words; 5xx, 429, 409 (the same key still in flight), 408
// and transport failures — timeouts included — are a *RetryableError.
func (p *HTTP) Publish(ctx context.Context, ev *Event) (Receipt, error) {
	body, err := ev.Build()
	if err != nil {
		return Receipt{}, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultHTTPTimeout)
		defer cancel()
	}
	resp, err := p.client.Do(p.request(ctx, ev.ID(), body))
	if err != nil {
		return Receipt{}, transportError(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Receipt{}, transportError(err)
	}
	if resp.StatusCode != http.StatusAccepted {
		return Receipt{}, refusal(resp, answer)
	}
	var a accepted
	if err := json.Unmarshal(answer, &a); err != nil {
		return Receipt{}, fmt.Errorf("herald api: 202 with an unreadable answer: %w", err)
	}
	replayed := resp.Header.Get("Idempotent-Replayed") == "true"
	return Receipt{ID: a.ID, Subject: a.Subject, Stream: a.Stream, Sequence: a.Sequence, Duplicate: a.Duplicate || replayed,
		Notifications: a.Notifications}, nil
}

func (p *HTTP) request(ctx context.Context, id string, body []byte) *http.Request {
	// The endpoint was checked by NewHTTP and the method is valid: no error.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.apiKey)
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("Accept", "application/json, application/problem+json")
	if len(id) <= maxIdempotencyKey {
		req.Header.Set("Idempotency-Key", id)
	}
	injectTrace(ctx, propagation.HeaderCarrier(req.Header))
	return req
}

// transportError is a request that got no answer: the API may or may not
// have stored the event, and trying again is how to find out. Only a
// caller that gave up is not told to retry. http.Client's errors name the
// URL, never the headers, so the key is not in them.
func transportError(err error) error {
	err = fmt.Errorf("herald api: %w", err)
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &RetryableError{Err: err}
}

// problem is an RFC 9457 answer as the API writes it.
type problem struct {
	Title  string `json:"title"`
	Detail string `json:"detail"`
	Errors []struct {
		Message  string `json:"message"`
		Location string `json:"location"`
	} `json:"errors"`
}

// refusal is the error of an answer other than 202: the API's words, and
// whether to try again.
func refusal(resp *http.Response, body []byte) error {
	e := &APIError{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
	var p problem
	if json.Unmarshal(body, &p) == nil {
		e.Title = cmp.Or(p.Title, e.Title)
		e.Detail = p.Detail
		for _, d := range p.Errors {
			if field := strings.TrimPrefix(d.Location, "body."); field != "" {
				d.Message = field + ": " + d.Message
			}
			e.Problems = append(e.Problems, d.Message)
		}
	}
	switch s := resp.StatusCode; {
	case s >= 500, s == http.StatusTooManyRequests, s == http.StatusConflict, s == http.StatusRequestTimeout:
		return &RetryableError{Err: e, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	}
	return e
}

// retryAfter reads a Retry-After in seconds (the API's form); anything
// else is no advice.
func retryAfter(v string) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}
