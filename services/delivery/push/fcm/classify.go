package fcm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/oauth2"

	"firebase.google.com/go/v4/errorutils"
	"firebase.google.com/go/v4/messaging"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/shared/provider"
)

// class is what an FCM error means for the caller.
type class int

const (
	gone      class = iota // the token is unregistered: remove the device
	permanent              // no retry can change it
	transient              // a later try may succeed, after any Retry-After
	ambiguous              // transient, and FCM may have accepted the message
)

// codes is the one table of FCM's answers, FCM's own error codes (the
// FcmError detail) before the API's status codes, since an FCM code is the
// more precise. The SDK's predicates read them from its error.
var codes = []struct {
	code  string
	is    func(error) bool
	class class
}{
	{"UNREGISTERED", messaging.IsUnregistered, gone},
	{"SENDER_ID_MISMATCH", messaging.IsSenderIDMismatch, permanent},
	{"THIRD_PARTY_AUTH_ERROR", messaging.IsThirdPartyAuthError, permanent},
	{"INVALID_ARGUMENT", messaging.IsInvalidArgument, permanent},
	{"QUOTA_EXCEEDED", messaging.IsQuotaExceeded, transient},
	{"UNAVAILABLE", messaging.IsUnavailable, transient},
	{"INTERNAL", messaging.IsInternal, transient},
	// Without an FcmError detail: the API's own status.
	{"UNAUTHENTICATED", errorutils.IsUnauthenticated, permanent},
	{"PERMISSION_DENIED", errorutils.IsPermissionDenied, permanent},
	{"NOT_FOUND", errorutils.IsNotFound, permanent},
	{"INVALID_ARGUMENT", errorutils.IsInvalidArgument, permanent},
	{"RESOURCE_EXHAUSTED", errorutils.IsResourceExhausted, transient},
	{"UNAVAILABLE", errorutils.IsUnavailable, transient},
	{"INTERNAL", errorutils.IsInternal, transient},
	{"DEADLINE_EXCEEDED", errorutils.IsDeadlineExceeded, ambiguous},
}

// classify says what an error from the SDK's Send means. An error the
// table does not know is what the shared HTTP classification says when FCM
// answered it; a failure to get an answer (the SDK's UNKNOWN, or the
// context ending between its retries) may have reached FCM; anything else
// is the SDK refusing the message before sending it.
func classify(err error) error {
	for _, row := range codes {
		if row.is(err) {
			return as(row.class, fmt.Errorf("%s: %w", row.code, err), retryAfter(err))
		}
	}
	if resp := errorutils.HTTPResponse(err); resp != nil {
		return provider.HTTPError(resp.StatusCode, resp.Header, err.Error())
	}
	if errorutils.IsUnknown(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return provider.NetworkError(err)
	}
	return provider.Permanent(fmt.Errorf("message refused before sending: %w", err))
}

// as wraps err in its class.
func as(c class, err error, wait time.Duration) error {
	switch c {
	case gone:
		return push.Gone(err)
	case permanent:
		return provider.Permanent(err)
	case ambiguous:
		return &provider.TransientError{Err: err, Ambiguous: true}
	}
	return &provider.TransientError{Err: err, RetryAfter: wait}
}

// retryAfter is the Retry-After FCM gave with its answer, if any.
func retryAfter(err error) time.Duration {
	if resp := errorutils.HTTPResponse(err); resp != nil {
		return provider.ParseRetryAfter(resp.Header, time.Now())
	}
	return 0
}

// tokenFailure classifies a failure to get an access token, when nothing
// was sent: credentials the token endpoint refuses (4xx) are permanent;
// any other failure is transient and never ambiguous.
func tokenFailure(err error) error {
	var refused *oauth2.RetrieveError
	switch {
	case errors.As(err, &refused) && refused.Response != nil && refused.Response.StatusCode < 500 &&
		refused.Response.StatusCode != http.StatusTooManyRequests:
		return provider.Permanent(fmt.Errorf("the service account's credentials are refused: %w", err))
	case errors.As(err, &refused) && refused.Response != nil:
		return &provider.TransientError{Err: err, RetryAfter: provider.ParseRetryAfter(refused.Response.Header, time.Now())}
	}
	return &provider.TransientError{Err: err}
}
