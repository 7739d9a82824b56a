package twilio

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/heraldhq/herald/shared/provider"
)

// Twilio error codes that decide how a failure is classified, as listed at
// https://www.twilio.com/docs/api/errors.
const (
	// CodeAuthentication (20003): the account SID and auth token were
	// rejected.
	CodeAuthentication = 20003
	// CodeTooManyRequests (20429): the account is over its API
	// concurrency; a later try succeeds.
	CodeTooManyRequests = 20429
	// CodeInvalidTo (21211): the To number is not a valid phone number.
	CodeInvalidTo = 21211
	// CodeRegionPermission (21408): the account may not send to the To
	// number's region.
	CodeRegionPermission = 21408
	// CodeUnsubscribed (21610): the recipient replied STOP.
	CodeUnsubscribed = 21610
	// CodeNotMobile (21614): the To number cannot receive SMS (a
	// landline, say).
	CodeNotMobile = 21614
	// CodeOutsideSessionWindow (63016): a free-form WhatsApp message
	// outside the 24-hour session window, where only a template may go.
	CodeOutsideSessionWindow = 63016
)

// permanentCodes are refusals no retry can change, whatever HTTP status
// they come with.
var permanentCodes = map[int]bool{
	CodeAuthentication:       true,
	CodeInvalidTo:            true,
	CodeRegionPermission:     true,
	CodeUnsubscribed:         true,
	CodeNotMobile:            true,
	CodeOutsideSessionWindow: true,
}

// Error is Twilio's refusal of a request, in its own words.
type Error struct {
	// Status is the HTTP status of the answer.
	Status int
	// Code is Twilio's error code, documented at MoreInfo.
	Code     int
	Message  string
	MoreInfo string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("HTTP %d: Twilio error %d: %s", e.Status, e.Code, e.Message)
	if e.MoreInfo != "" {
		s += " (" + e.MoreInfo + ")"
	}
	return s
}

// ErrorCode is the Twilio error code err holds, or 0 when it holds none.
func ErrorCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// IsOutsideSessionWindow reports whether Twilio refused a free-form
// WhatsApp message because the recipient's 24-hour session window is
// closed (63016). The refusal is permanent like any other, so the channel
// fallback needs no special case; this is for logs and tests.
//
// Twilio mostly reports 63016 later, in the message's status callback, and
// only sometimes when the message is created.
func IsOutsideSessionWindow(err error) bool {
	return ErrorCode(err) == CodeOutsideSessionWindow
}

// classify says what Twilio's refusal e means for the chain: the codes
// that say more than the status first, then the status as for any HTTP
// provider (provider.HTTPError).
func classify(e *Error, header http.Header) error {
	switch {
	case permanentCodes[e.Code]:
		return provider.Permanent(e)
	case e.Code == CodeTooManyRequests || e.Status == http.StatusTooManyRequests:
		return &provider.TransientError{Err: e, RetryAfter: provider.ParseRetryAfter(header, time.Now())}
	case e.Status == http.StatusRequestTimeout:
		return &provider.TransientError{Err: e}
	case e.Status >= 400 && e.Status < 500:
		return provider.Permanent(e)
	}
	return &provider.TransientError{Err: e}
}
