package email

import (
	"context"
	"errors"
	"fmt"
)

// Provider hands a message to one email service.
//
// Send returns a Receipt only when the provider accepted the message and
// said so with a message id; anything less is an error. Errors are transient
// (try the next provider, retry later) unless wrapped with Permanent.
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

// IsPermanent reports whether err, or any error it wraps, is permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}
