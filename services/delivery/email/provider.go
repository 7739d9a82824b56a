package email

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Provider hands a message to one email service.
//
// Send returns a Receipt only when the provider accepted the message and
// said so with a message id; anything less is an error. Errors are transient
// (try the next provider, retry later) unless wrapped with Permanent; a
// TransientError can add the provider's Retry-After, and mark a failure as
// ambiguous when the provider may have accepted the message after all.
type Provider interface {
	Send(ctx context.Context, msg Message) (Receipt, error)
}

// Receipt is a provider's acceptance of one message.
type Receipt struct {
	Provider  string
	MessageID string
}

// PermanentError is a refusal that no retry can change: an invalid address,
// rejected credentials, a message the provider will not accept.
type PermanentError struct {
	Err error
}

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err as permanent.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// Permanentf formats a permanent error.
func Permanentf(format string, args ...any) error {
	return &PermanentError{Err: fmt.Errorf(format, args...)}
}

// TransientError is a failure another provider, or a later try, may not have.
type TransientError struct {
	Err error
	// RetryAfter is how long the provider asked us to wait (429 Retry-After).
	RetryAfter time.Duration
	// Ambiguous marks a failure after the request may have reached the
	// provider (a timeout, a connection cut mid-response): it may have
	// accepted the message.
	Ambiguous bool
}

func (e *TransientError) Error() string { return e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// IsAmbiguous reports whether err, or any error it wraps, is ambiguous.
func IsAmbiguous(err error) bool {
	var found bool
	walk(err, func(e error) {
		if t, ok := e.(*TransientError); ok && t.Ambiguous {
			found = true
		}
	})
	return found
}

// RetryAfter is the longest Retry-After among the errors err holds: when
// one pass over the chain fails, the next must wait for every provider that
// asked for a pause.
func RetryAfter(err error) time.Duration {
	var d time.Duration
	walk(err, func(e error) {
		if t, ok := e.(*TransientError); ok {
			d = max(d, t.RetryAfter)
		}
	})
	return d
}

// walk visits err and every error it wraps, through joins too.
func walk(err error, visit func(error)) {
	if err == nil {
		return
	}
	visit(err)
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			walk(inner, visit)
		}
	case interface{ Unwrap() error }:
		walk(e.Unwrap(), visit)
	}
}

// IsPermanent reports whether err, or any error it wraps, is permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}
