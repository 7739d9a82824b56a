// Package inbound receives what providers report about the messages they
// accepted — SES events through Amazon SNS, SendGrid's signed Event
// Webhook, Twilio's status callbacks — and trusts none of it before the
// provider's own signature scheme says who sent it:
//
//	POST /v1/inbound/{provider}                     the platform's accounts
//	POST /v1/inbound/{provider}/{tenant}/{account}  a tenant's own account (vault)
//
// A verified request's events become reports (package report), stored on
// the stream REPORTS before the provider is answered 200; the history
// service joins them to their notifications. A request to the platform's
// path that fails verification is answered 401 (unsigned) or 403 (badly
// signed, stale); one to a tenant's path, always the same 403, which tells
// nothing of the tenant or its accounts. Refusals are logged without their
// payload and counted; nothing of them is kept.
package inbound

import (
	"fmt"
)

// The providers whose reports Herald takes, as their path segment.
const (
	SendGrid = "sendgrid"
	SES      = "ses"
	Twilio   = "twilio"
)

// Refused is a request that failed verification or cannot be read: it is
// answered Status, and logged with Reason — which never holds the payload
// or a secret.
type Refused struct {
	Status int
	Reason string
}

func (r *Refused) Error() string { return fmt.Sprintf("%d: %s", r.Status, r.Reason) }

// refuse is a Refused.
func refuse(status int, format string, args ...any) error {
	return &Refused{Status: status, Reason: fmt.Sprintf(format, args...)}
}
