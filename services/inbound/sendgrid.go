package inbound

import (
	"context"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sendgrid/sendgrid-go/helpers/eventwebhook"

	"github.com/heraldhq/herald/shared/report"
)

// sendgridEvent is one event of a SendGrid Event Webhook post, the fields
// Herald reads.
type sendgridEvent struct {
	Event     string `json:"event"`
	Email     string `json:"email"`
	Timestamp int64  `json:"timestamp"`
	EventID   string `json:"sg_event_id"`
	MessageID string `json:"sg_message_id"`
	// Type tells a bounce ("bounce") from a block ("blocked", temporary).
	Type     string `json:"type"`
	Reason   string `json:"reason"`
	Status   string `json:"status"`
	Response string `json:"response"`
	URL      string `json:"url"`
	// NotificationID is the custom argument Herald gives every message it
	// sends (sendgrid.ArgNotificationID), which SendGrid repeats in each
	// of its events.
	NotificationID string `json:"herald_notification_id"`
}

// sendgridSigned is a SendGrid Event Webhook post: an ECDSA P-256
// signature over the timestamp header and the body, made with the
// account's verification key (sendgrid-go's own helper checks it). The
// timestamp is what makes a captured post useless later: one further than
// MaxAge from now, either side, is a replay.
type sendgridSigned struct {
	body       []byte
	sig, stamp string
}

// sendgridRequest checks what a post shows without the account's key: its
// signature headers are there, the signature is an ECDSA signature's
// encoding, and the timestamp is within MaxAge of now.
func (h *Handler) sendgridRequest(r *http.Request, body []byte) (signed, error) {
	sig, stamp := r.Header.Get(eventwebhook.VerificationHTTPHeader), r.Header.Get(eventwebhook.TimestampHTTPHeader)
	if sig == "" || stamp == "" {
		return nil, refuse(http.StatusUnauthorized, "unsigned: no %s and %s headers (turn on Signed Event Webhook in SendGrid)",
			eventwebhook.VerificationHTTPHeader, eventwebhook.TimestampHTTPHeader)
	}
	seconds, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return nil, refuse(http.StatusForbidden, "%s is not a Unix time", eventwebhook.TimestampHTTPHeader)
	}
	if age := h.cfg.Now().Sub(time.Unix(seconds, 0)); age > h.cfg.MaxAge || age < -h.cfg.MaxAge {
		return nil, refuse(http.StatusForbidden, "stale: the timestamp is %s from now, more than %s (a replay, or a clock far off)", age.Abs().Round(time.Second), h.cfg.MaxAge)
	}
	if !ecdsaSignature(sig) {
		return nil, refuse(http.StatusForbidden, "bad signature: %s is not a base64 ECDSA signature", eventwebhook.VerificationHTTPHeader)
	}
	return &sendgridSigned{body: body, sig: sig, stamp: stamp}, nil
}

// ecdsaSignature says whether sig is the base64 of an ASN.1 ECDSA
// signature, as SendGrid sends one, and nothing after it.
func ecdsaSignature(sig string) bool {
	der, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	var rs eventwebhook.RS
	rest, err := asn1.Unmarshal(der, &rs)
	return err == nil && len(rest) == 0 && rs.R.Sign() > 0 && rs.S.Sign() > 0
}

func (s *sendgridSigned) verify(_ context.Context, k keys) error {
	if ok, err := eventwebhook.VerifySignature(k.sendgrid, s.body, s.sig, s.stamp); err != nil || !ok {
		return refuse(http.StatusForbidden, "bad signature: not made with this account's verification key over this body")
	}
	return nil
}

// reports reads the post's events.
func (s *sendgridSigned) reports(context.Context, keys) ([]report.Report, error) {
	var events []sendgridEvent
	if err := json.Unmarshal(s.body, &events); err != nil {
		return nil, refuse(http.StatusBadRequest, "the body is not a JSON array of events")
	}
	var out []report.Report
	for _, e := range events {
		rep, ok := sendgridReport(e)
		if !ok {
			continue
		}
		out = append(out, rep)
	}
	return out, nil
}

// sendgridReport is the report an event makes, if any: processing and
// deferral are not news; an event without its message's id (some
// subscription-group events) cannot be joined to anything; and one of a
// message Herald did not send (the account's other mail: the webhook is
// the account's) is not Herald's to join — it would wait for a
// notification that never comes, then fill the DLQ.
func sendgridReport(e sendgridEvent) (report.Report, bool) {
	// sg_message_id is the X-Message-Id SendGrid answered the send with,
	// then a dot and the id of the filter that handled it.
	message, _, _ := strings.Cut(e.MessageID, ".")
	rep := report.Report{MessageID: message, EventID: e.EventID, Recipient: e.Email, Time: time.Unix(e.Timestamp, 0).UTC()}
	switch e.Event {
	case "delivered":
		rep.Kind, rep.Detail = report.Delivered, e.Response
	case "bounce":
		// A "blocked" bounce is the receiving server refusing for now.
		rep.Kind, rep.Hard, rep.Detail = report.Bounced, e.Type != "blocked", joinNonEmpty(e.Status, e.Reason)
	case "dropped":
		// SendGrid did not even try: its reason says whether the address
		// is dead to it.
		rep.Kind, rep.Detail = report.Bounced, "dropped: "+e.Reason
		switch e.Reason {
		case "Bounced Address", "Invalid":
			rep.Hard = true
		case "Spam Reporting Address":
			rep.Kind = report.Complained
		case "Unsubscribed Address":
			rep.Kind = report.Unsubscribed
		}
	case "open":
		rep.Kind = report.Opened
	case "click":
		rep.Kind, rep.Detail = report.Clicked, e.URL
	case "spamreport":
		rep.Kind = report.Complained
	case "unsubscribe", "group_unsubscribe":
		rep.Kind = report.Unsubscribed
	default: // processed, deferred, group_resubscribe
		return rep, false
	}
	return rep, message != "" && e.EventID != "" && e.Timestamp > 0 && e.NotificationID != ""
}

// joinNonEmpty joins the non-empty of parts with a space.
func joinNonEmpty(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, " ")
}
