package inbound

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/twilio/twilio-go/client"

	"github.com/heraldhq/herald/shared/report"
)

// Twilio error codes a failed message's callback carries that say the
// address will never take a message (https://www.twilio.com/docs/api/errors):
// the bounce is hard and the address suppressed on the message's channel. Any other code is a soft
// bounce — the carrier's filter, a full queue, an unreachable handset may
// all pass.
var twilioPermanent = map[string]bool{
	"30005": true, // unknown destination handset
	"30006": true, // landline or unreachable carrier
	"21211": true, // invalid To number
	"21614": true, // To is not a mobile number
	"63024": true, // invalid WhatsApp recipient
}

// twilioEveryChannel are the permanent codes about the number itself, not
// about the channel's way to it: a number that is no number takes neither
// SMS nor WhatsApp, and is suppressed on both. A landline (30006) may yet
// be on WhatsApp, and a number off WhatsApp (63024) may take SMS.
var twilioEveryChannel = map[string]bool{
	"21211": true, // invalid To number
}

// twilioUnsubscribed (21610) is a failure because the recipient replied
// STOP: not a bounce but their own word, reported as an unsubscribe.
const twilioUnsubscribed = "21610"

// twilioKinds are the message statuses that say something about the
// recipient; the others (queued, accepted, sending, sent, scheduled,
// canceled, receiving, received) are Twilio's own progress, not reported.
var twilioKinds = map[string]report.Kind{
	"delivered":   report.Delivered,
	"read":        report.Opened, // WhatsApp's read receipt
	"undelivered": report.Bounced,
	"failed":      report.Bounced,
}

// twilioSigned is a Twilio status callback.
//
// Twilio signs a callback with the account's auth token: X-Twilio-Signature
// is the base64 HMAC-SHA1 of the URL it called followed by each form
// parameter's name and value in name order. That URL is the public one —
// Config.PublicURL and the request's path and query. Without PublicURL it
// is taken as http:// and the Host Herald was called at, which is right
// only when nothing stands in front of Herald: behind a proxy or a load
// balancer that ends TLS, public_url must be set, or no callback verifies.
//
// A callback carries no timestamp, so unlike SendGrid's and SES's there is
// no replay window: a replayed callback is a callback Twilio already sent,
// and its event id (message, status and error code) stores it once.
type twilioSigned struct {
	h   *Handler
	r   *http.Request
	sig string
	// params are each form parameter's first value: the validator signs
	// those only, so a value appended to a signed callback changes nothing.
	params map[string]string
}

// twilioRequest checks what a callback shows without the account's token:
// a signature of an HMAC-SHA1's length, over a form.
func (h *Handler) twilioRequest(r *http.Request, body []byte) (signed, error) {
	sig := r.Header.Get("X-Twilio-Signature")
	if sig == "" {
		return nil, refuse(http.StatusUnauthorized, "no X-Twilio-Signature")
	}
	if mac, err := base64.StdEncoding.DecodeString(sig); err != nil || len(mac) != sha1.Size {
		return nil, refuse(http.StatusForbidden, "X-Twilio-Signature is not the base64 of an HMAC-SHA1")
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return nil, refuse(http.StatusBadRequest, "Content-Type %q: Twilio posts application/x-www-form-urlencoded", mt)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, refuse(http.StatusBadRequest, "the body is not a form")
	}
	params := make(map[string]string, len(form))
	for name, values := range form {
		params[name] = values[0]
	}
	return &twilioSigned{h: h, r: r, sig: sig, params: params}, nil
}

// verify checks the signature with k's token, and that the callback names
// the account k expects.
func (s *twilioSigned) verify(_ context.Context, k keys) error {
	validator := client.NewRequestValidator(k.twilioToken.Reveal())
	if !validator.Validate(s.h.twilioURL(s.r), s.params, s.sig) {
		// The query is left out of the reason: an operator may have put
		// something of their own in the callback URL's.
		return refuse(http.StatusForbidden, "X-Twilio-Signature does not match: another auth token signed it, "+
			"the request was changed, or Twilio called another URL than %s (is public_url right?)", s.h.twilioBase(s.r)+s.r.URL.EscapedPath())
	}
	if k.twilioAccount != "" && s.params["AccountSid"] != k.twilioAccount {
		// Signed with this token, yet about another account's message:
		// a token shared between accounts (or a test account) must not
		// speak for the one configured.
		return refuse(http.StatusForbidden, "the callback is for another Twilio account than the one configured")
	}
	return nil
}

// reports is the callback's report, if its status is one Herald reports.
func (s *twilioSigned) reports(context.Context, keys) ([]report.Report, error) {
	params := s.params
	sid, status := params["MessageSid"], params["MessageStatus"]
	switch {
	case sid == "":
		return nil, refuse(http.StatusBadRequest, "no MessageSid: not a Twilio status callback")
	case status == "":
		return nil, refuse(http.StatusBadRequest, "no MessageStatus: not a Twilio status callback")
	}
	kind, ok := twilioKinds[status]
	if !ok {
		return nil, nil
	}
	code := strings.TrimSpace(params["ErrorCode"])
	rep := report.Report{
		MessageID: sid,
		EventID:   sid + ":" + status,
		Kind:      kind,
		Recipient: strings.TrimPrefix(params["To"], "whatsapp:"),
		Detail:    status,
		Time:      s.h.cfg.Now(),
	}
	if code != "" {
		rep.EventID += ":" + code
		rep.Detail = "error " + code
		if msg := params["ErrorMessage"]; msg != "" {
			rep.Detail += ": " + msg
		}
	}
	if kind == report.Bounced {
		switch {
		case code == twilioUnsubscribed:
			rep.Kind = report.Unsubscribed
		case twilioPermanent[code]:
			rep.Hard, rep.EveryChannel = true, twilioEveryChannel[code]
		}
	}
	return []report.Report{rep}, nil
}

// twilioURL is the URL Twilio called, as it signed it.
func (h *Handler) twilioURL(r *http.Request) string { return h.twilioBase(r) + r.URL.RequestURI() }

// twilioBase is the base URL Twilio called: public_url, or http:// and the
// Host header without it (see twilioReports).
func (h *Handler) twilioBase(r *http.Request) string {
	if h.cfg.PublicURL == "" {
		return "http://" + r.Host
	}
	return strings.TrimRight(h.cfg.PublicURL, "/")
}
