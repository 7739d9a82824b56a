// Package provider says what a provider's answer means, for every channel
// and every provider alike: a Receipt when it accepted a message, and
// otherwise a failure of one class — permanent (no retry can change it),
// transient (another provider, or a later try, may succeed), or ambiguous
// (transient, but the provider may have accepted after all). HTTPError and
// NetworkError classify the answers of providers that speak HTTP, so a new
// provider, channel or alert sender does not grow a classifier of its own.
package provider

import (
	"errors"
	"fmt"
	"time"
)

// Receipt is a provider's acceptance of one message: the provider's name,
// as the chain knows it, and the id the provider gave the message. A
// provider fills in MessageID; the chain names the provider.
type Receipt struct {
	Provider  string
	MessageID string
	// Note, when set, is what the ledger should know of this send that
	// only the send could tell — a push's outcome on each device. It
	// stands in for the try's Note. Optional.
	Note string
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

// IsPermanent reports whether err, or any error it wraps, is permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

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
