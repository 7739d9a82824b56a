package inbound

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/report"
)

// sesSigned is an SNS message, signed with the key of the certificate at
// its SigningCertURL. Nothing in it is acted on before that signature
// verifies and its topic is one of the account's.
type sesSigned struct {
	h       *Handler
	m       *snsMessage
	sig     snsSignature
	certURL *url.URL
	sent    time.Time
}

// sesRequest checks what an SNS message shows without the account's
// topics: it is signed, with a signature version Herald knows, its
// certificate is on SNS's hosts, and it was sent within MaxAge of now.
func (h *Handler) sesRequest(body []byte) (signed, error) {
	m, err := parseSNS(body)
	if err != nil {
		return nil, err
	}
	sig, err := m.signature()
	if err != nil {
		return nil, err
	}
	certURL, err := checkCertURL(m.SigningCertURL)
	if err != nil {
		return nil, err
	}
	sent, err := time.Parse(time.RFC3339, m.Timestamp)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, "Timestamp is not an RFC 3339 time")
	}
	if off := h.cfg.Now().Sub(sent).Abs(); off > h.cfg.MaxAge {
		return nil, refuse(http.StatusForbidden, "stale: Timestamp is %s from now, more than %s (a replay?)",
			off.Round(time.Second), h.cfg.MaxAge)
	}
	return &sesSigned{h: h, m: m, sig: sig, certURL: certURL, sent: sent}, nil
}

// verify checks that the message comes from one of k's topics, then its
// signature. The topic is compared first only to refuse sooner: a message
// from another topic costs no certificate fetch.
func (s *sesSigned) verify(ctx context.Context, k keys) error {
	if !slices.Contains(k.sesTopics, s.m.TopicArn) {
		// Clipped: the ARN is still the sender's word, of any length.
		return refuse(http.StatusForbidden, "topic %.200q is not one of %s (%s)",
			s.m.TopicArn, whoseTopics(k), s.h.configured(SES, k.tenant))
	}
	return s.h.sns.verify(ctx, s.m, s.sig, s.certURL, s.h.cfg.Now())
}

// reports are the reports of the SES event a verified notification
// carries. A subscription confirmation is answered by confirming the
// subscription; it and an unsubscribe confirmation carry no reports.
func (s *sesSigned) reports(ctx context.Context, k keys) ([]report.Report, error) {
	switch s.m.Type {
	case snsSubscribe:
		return nil, s.h.confirmSubscription(ctx, s.m, k)
	case snsUnsubscribe:
		// Someone unsubscribed the topic; subscribing again is theirs to do.
		s.h.cfg.Logger.InfoContext(ctx, "SNS subscription ended: SES events from the topic stop",
			"topic", s.m.TopicArn, "tenant", k.tenant, "account", k.account)
		return nil, nil
	}
	return s.h.sesNotification(ctx, s.m, s.sent)
}

// whoseTopics names the topics k holds: the platform's or a tenant's account's.
func whoseTopics(k keys) string {
	if k.tenant == "" {
		return "the platform's topics"
	}
	return "tenant " + k.tenant + "'s account " + k.account + "'s topics"
}

// confirmSubscription confirms a verified SubscriptionConfirmation by
// visiting its SubscribeURL, as SNS asks. Until then the topic sends
// nothing here; if AWS cannot be reached, 503 has SNS send the
// confirmation again.
func (h *Handler) confirmSubscription(ctx context.Context, m *snsMessage, k keys) error {
	u, err := checkSNSURL("SubscribeURL", m.SubscribeURL)
	if err != nil {
		return err
	}
	if _, err := h.sns.get(ctx, u.String()); err != nil {
		return refuse(http.StatusServiceUnavailable, "confirming the subscription to %s: %v", m.TopicArn, err)
	}
	h.cfg.Logger.InfoContext(ctx, "SNS subscription confirmed", "topic", m.TopicArn, "tenant", k.tenant, "account", k.account)
	return nil
}

// sesNotification returns the reports of the SES event a verified SNS
// notification, sent at sent, carries. Events Herald keeps no report of
// are dropped.
func (h *Handler) sesNotification(ctx context.Context, m *snsMessage, sent time.Time) ([]report.Report, error) {
	e, err := readSESEvent(m.Message)
	if err != nil {
		return nil, err
	}
	if !e.reported() {
		h.cfg.Logger.DebugContext(ctx, "SES event without reports dropped", "type", e.kind(), "topic", m.TopicArn)
		return nil, nil
	}
	return e.reports(m.MessageID, sent)
}

// sesEvent is what Herald reads of an SES event: SES's event publishing
// (eventType) or its older notifications (notificationType), which share
// the mail and per-kind objects
// (https://docs.aws.amazon.com/ses/latest/dg/event-publishing-retrieving-sns-contents.html,
// https://docs.aws.amazon.com/ses/latest/dg/notification-contents.html).
type sesEvent struct {
	EventType        string `json:"eventType"`
	NotificationType string `json:"notificationType"`
	Mail             struct {
		MessageID   string   `json:"messageId"`
		Destination []string `json:"destination"`
		// Tags are the message's tags, in SES event publishing: Herald
		// tags every message it sends with its notification id.
		Tags map[string][]string `json:"tags"`
	} `json:"mail"`
	Bounce struct {
		BounceType        string `json:"bounceType"`
		BounceSubType     string `json:"bounceSubType"`
		BouncedRecipients []struct {
			EmailAddress   string `json:"emailAddress"`
			DiagnosticCode string `json:"diagnosticCode"`
		} `json:"bouncedRecipients"`
		Timestamp string `json:"timestamp"`
	} `json:"bounce"`
	Complaint struct {
		ComplainedRecipients []struct {
			EmailAddress string `json:"emailAddress"`
		} `json:"complainedRecipients"`
		ComplaintFeedbackType string `json:"complaintFeedbackType"`
		Timestamp             string `json:"timestamp"`
	} `json:"complaint"`
	Delivery struct {
		Recipients   []string `json:"recipients"`
		SMTPResponse string   `json:"smtpResponse"`
		Timestamp    string   `json:"timestamp"`
	} `json:"delivery"`
	Open struct {
		Timestamp string `json:"timestamp"`
	} `json:"open"`
	Click struct {
		Link      string `json:"link"`
		Timestamp string `json:"timestamp"`
	} `json:"click"`
	Subscription struct {
		Timestamp string `json:"timestamp"`
	} `json:"subscription"`
}

// readSESEvent reads an SNS notification's Message as an SES event.
func readSESEvent(message string) (*sesEvent, error) {
	var e sesEvent
	if err := json.Unmarshal([]byte(message), &e); err != nil {
		return nil, refuse(http.StatusBadRequest, "the notification's Message is not SES JSON")
	}
	if e.kind() == "" {
		return nil, refuse(http.StatusBadRequest,
			"the notification's Message has neither eventType nor notificationType: not an SES event")
	}
	return &e, nil
}

// kind is the event's type, under either name.
func (e *sesEvent) kind() string { return cmp.Or(e.EventType, e.NotificationType) }

// sesReported are the SES event types Herald keeps reports of. The others
// — a send, a reject, a rendering failure, a delivery delay, SES's test of
// a topic (AmazonSnsSubscriptionSucceeded), a type SES added since — are
// dropped.
var sesReported = []string{"Bounce", "Complaint", "Delivery", "Open", "Click", "Subscription"}

// reported says whether Herald keeps reports of e.
func (e *sesEvent) reported() bool {
	return slices.Contains(sesReported, e.kind()) && e.herald()
}

// herald says whether the message is one Herald sent: the events of a
// configuration set or an identity that others send through too are not
// Herald's to join — they would wait for a notification that never comes,
// then fill the DLQ. Event publishing carries the message's tags; SES's
// older notifications carry none, and are taken.
func (e *sesEvent) herald() bool {
	return e.Mail.Tags == nil || len(e.Mail.Tags[sesTagNotificationID]) > 0
}

// sesTagNotificationID is the tag Herald's SES provider gives every
// message (ses.TagNotificationID).
const sesTagNotificationID = "herald_notification_id"

// reports are e's reports, one per recipient it is about, if e is
// reported. Their event ids are the SNS message's id and the recipient:
// each recipient of a bounce has its own, and SNS sending the message again
// repeats them.
func (e *sesEvent) reports(snsID string, snsTime time.Time) ([]report.Report, error) {
	kind := e.kind()
	if !e.reported() {
		return nil, nil
	}
	if e.Mail.MessageID == "" {
		return nil, refuse(http.StatusBadRequest, "the SES %s event has no mail.messageId", kind)
	}
	r := reporter{event: e, snsID: snsID, snsTime: snsTime}
	switch kind {
	case "Bounce":
		return r.bounces()
	case "Complaint":
		return r.complaints()
	case "Delivery":
		return r.deliveries()
	case "Open":
		return []report.Report{r.engagement(report.Opened, "", e.Open.Timestamp)}, nil
	case "Click":
		return []report.Report{r.engagement(report.Clicked, e.Click.Link, e.Click.Timestamp)}, nil
	default: // Subscription
		return r.unsubscribes(), nil
	}
}

// reporter makes the reports of one SES event.
type reporter struct {
	event   *sesEvent
	snsID   string
	snsTime time.Time
}

// report is one report about recipient, at the event's timestamp — or, if
// it has none, when SNS sent it.
func (r reporter) report(kind report.Kind, recipient, detail, timestamp string) report.Report {
	at, err := time.Parse(time.RFC3339, timestamp)
	if err != nil {
		at = r.snsTime
	}
	id := r.snsID
	if recipient != "" {
		id += ":" + strings.ToLower(recipient)
	}
	return report.Report{MessageID: r.event.Mail.MessageID, EventID: id, Kind: kind, Recipient: recipient,
		Detail: detail, Time: at}
}

// bounces reports a bounce for each bounced recipient: hard if SES calls
// it permanent. A transient or undetermined bounce may yet be delivered.
func (r reporter) bounces() ([]report.Report, error) {
	b := r.event.Bounce
	if len(b.BouncedRecipients) == 0 {
		return nil, refuse(http.StatusBadRequest, "the SES Bounce event has no bounce.bouncedRecipients")
	}
	var out []report.Report
	for i, to := range b.BouncedRecipients {
		if to.EmailAddress == "" {
			return nil, refuse(http.StatusBadRequest, "bounce.bouncedRecipients[%d] has no emailAddress", i)
		}
		detail := cmp.Or(to.DiagnosticCode, b.BounceType+"/"+b.BounceSubType)
		rep := r.report(report.Bounced, to.EmailAddress, detail, b.Timestamp)
		rep.Hard = b.BounceType == "Permanent"
		out = append(out, rep)
	}
	return out, nil
}

// complaints reports a complaint for each recipient who complained, with
// their feedback type ("abuse") when their mailbox provider gave one.
func (r reporter) complaints() ([]report.Report, error) {
	c := r.event.Complaint
	if len(c.ComplainedRecipients) == 0 {
		return nil, refuse(http.StatusBadRequest, "the SES Complaint event has no complaint.complainedRecipients")
	}
	var out []report.Report
	for i, to := range c.ComplainedRecipients {
		if to.EmailAddress == "" {
			return nil, refuse(http.StatusBadRequest, "complaint.complainedRecipients[%d] has no emailAddress", i)
		}
		out = append(out, r.report(report.Complained, to.EmailAddress, c.ComplaintFeedbackType, c.Timestamp))
	}
	return out, nil
}

// deliveries reports a delivery for each recipient whose server took the
// message, with what that server answered.
func (r reporter) deliveries() ([]report.Report, error) {
	d := r.event.Delivery
	if len(d.Recipients) == 0 {
		return nil, refuse(http.StatusBadRequest, "the SES Delivery event has no delivery.recipients")
	}
	var out []report.Report
	for i, to := range d.Recipients {
		if to == "" {
			return nil, refuse(http.StatusBadRequest, "delivery.recipients[%d] is empty", i)
		}
		out = append(out, r.report(report.Delivered, to, d.SMTPResponse, d.Timestamp))
	}
	return out, nil
}

// engagement is an open or a click. SES does not say whose: the message's
// only recipient, if it had one.
func (r reporter) engagement(kind report.Kind, detail, timestamp string) report.Report {
	recipient := ""
	if to := r.event.Mail.Destination; len(to) == 1 {
		recipient = to[0]
	}
	return r.report(kind, recipient, detail, timestamp)
}

// unsubscribes reports each of the message's recipients unsubscribed:
// SES's subscription event is about the message's recipients, through its
// unsubscribe link or header.
func (r reporter) unsubscribes() []report.Report {
	var out []report.Report
	for _, to := range r.event.Mail.Destination {
		if to != "" {
			out = append(out, r.report(report.Unsubscribed, to, "", r.event.Subscription.Timestamp))
		}
	}
	return out
}
