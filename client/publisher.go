package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Publisher publishes events to Herald and says what became of each. NATS
// and HTTP are the two; both wait until Herald has stored the event.
type Publisher interface {
	Publish(ctx context.Context, ev *Event) (Receipt, error)
}

// Receipt is Herald's acknowledgement of a stored event.
type Receipt struct {
	// ID is the event's id.
	ID string
	// Subject is the subject the event was stored under.
	Subject string
	// Stream is the stream that stored it: ORDERS or INVENTORY.
	Stream string
	// Sequence is its sequence in the stream (the first copy's, for a
	// duplicate).
	Sequence uint64
	// Duplicate is true when Herald already had this event — published
	// before with the same id within the stream's duplicate window, or
	// with the same Idempotency-Key over HTTP — and stored nothing new.
	Duplicate bool
	// Notifications are the ids (ntf_…) of the notifications Herald's
	// routes plan for the event, one per recipient per channel, as the
	// HTTP API answers them (GET /v1/notifications/{id} finds each once
	// the router has routed the event); none when no route applies. Over
	// NATS nothing answers with them: always none.
	Notifications []string
}

// ErrRetryable matches every error after which publishing the same event
// again may succeed: Herald or the way to it was unavailable, slow or busy,
// and nothing, or the event itself, was stored. Publishing the same *Event
// again is safe; a copy is reported as Duplicate.
//
//	if errors.Is(err, client.ErrRetryable) { … try again later … }
var ErrRetryable = errors.New("herald: retryable")

// RetryableError is an error matching ErrRetryable, with how long Herald
// asked to wait, when it said.
type RetryableError struct {
	// Err is what went wrong: an *APIError, a timeout, a NATS error.
	Err error
	// RetryAfter is the wait Herald asked for (Retry-After); 0 when it
	// named none.
	RetryAfter time.Duration
}

func (e *RetryableError) Error() string { return e.Err.Error() }

func (e *RetryableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrRetryable) true.
func (e *RetryableError) Is(target error) bool { return target == ErrRetryable }

// APIError is a refusal by Herald's HTTP API, in its words (an RFC 9457
// problem). Alone it is permanent: the request must change. Wrapped in a
// RetryableError (5xx, 429, 409, 408) it is not.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Title and Detail are the problem's: "Unprocessable Entity", "invalid
	// event".
	Title, Detail string
	// Problems are the problem's errors, each "field: message" as the
	// router words them ("data.order.kind: \"barter\" must be …").
	Problems []string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("herald api: %d %s", e.Status, e.Title)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if len(e.Problems) > 0 {
		msg += ": " + strings.Join(e.Problems, "; ")
	}
	return msg
}
