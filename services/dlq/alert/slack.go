package alert

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Slack posts to a Slack incoming webhook, or to anything that accepts the
// same request: POST {"text": "..."} as JSON (Mattermost, Rocket.Chat,
// Discord's /slack endpoint…). The text is meant for a phone:
//
//	:rotating_light: Herald gave up on 10,000 messages in the last 1m0s
//	*Streams*
//	• NOTIFY > email-normal: 9,000
//	• DOCS > render: 1,000
//	*Top reasons*
//	• 6,000 × `faulty: permanent: HTTP 400: Illegal address (request id {id})`
//	• 4,000 × `render failed after {n} tries: rendering {path}: template: missing`
//	*Tenants*: acme 7,000 · globex 3,000
//	*Example*: `notify.email.normal.acme` at 2026-05-04 10:00:00 UTC
//
// and, when tenants reached a monthly quota threshold since the last alert
// (alone, if nothing failed):
//
//	:warning: 2 monthly quota thresholds reached
//	• acme email 2026-05: 100 % — 1,000/1,000, the rest of the month is refused
//	• globex sms 2026-05: 80 % — 400/500
type Slack struct {
	// URL is the incoming webhook's URL, a secret. Required.
	URL string
	// Client defaults to a client with a transport of its own.
	Client *http.Client
}

// Send posts s to the webhook.
func (sl Slack) Send(ctx context.Context, s Summary) error {
	body, err := json.Marshal(struct {
		Text string `json:"text"`
	}{slackText(s)})
	if err != nil {
		return fmt.Errorf("encoding the alert for the slack webhook: %w", err)
	}
	return post(ctx, sl.Client, sl.URL, "the slack webhook", nil, body)
}

func (Slack) kind() string { return "slack" }

// How many streams and tenants an alert lists; the rest are counted.
const (
	slackStreams = 10
	slackTenants = 5
)

// slackQuotas is how many quota thresholds an alert lists; the rest are
// counted.
const slackQuotas = 20

func slackText(s Summary) string {
	var b strings.Builder
	if s.Count > 0 {
		writeFailures(&b, s)
	}
	if len(s.Quotas) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		writeQuotas(&b, s)
	}
	return b.String()
}

func writeQuotas(b *strings.Builder, s Summary) {
	all := len(s.Quotas) + s.QuotasLeftOut
	fmt.Fprintf(b, ":warning: %s reached", plural(all, "monthly quota threshold"))
	for _, q := range s.Quotas[:min(slackQuotas, len(s.Quotas))] {
		fmt.Fprintf(b, "\n• %s %s %s: %d %% — %s/%s", slackEscape(q.Tenant), slackEscape(q.Channel), slackEscape(q.Month),
			q.Threshold, thousands(int(q.Used)), thousands(int(q.Quota)))
		if q.Threshold >= 100 {
			b.WriteString(", the rest of the month is refused")
		}
	}
	if more := all - slackQuotas; more > 0 {
		fmt.Fprintf(b, "\n• …and %s more", thousands(more))
	}
}

func writeFailures(b *strings.Builder, s Summary) {
	fmt.Fprintf(b, ":rotating_light: Herald gave up on %s%s", plural(s.Count, "message"), lately(s))
	b.WriteString("\n*Streams*")
	for _, st := range ranked(s.ByStream, slackStreams) {
		fmt.Fprintf(b, "\n• %s: %s", slackEscape(st.key), thousands(st.n))
	}
	if more := len(s.ByStream) - slackStreams; more > 0 {
		fmt.Fprintf(b, "\n• …and %s more", plural(more, "stream"))
	}
	b.WriteString("\n*Top reasons*")
	listed := 0
	for _, r := range s.TopReasons {
		fmt.Fprintf(b, "\n• %s × %s", thousands(r.Count), slackCode(r.Reason))
		listed += r.Count
	}
	if other := s.Count - listed; other > 0 {
		fmt.Fprintf(b, "\n• %s × other reasons", thousands(other))
	}
	var tenants []string
	for _, t := range ranked(s.ByTenant, slackTenants) {
		tenants = append(tenants, slackEscape(t.key)+" "+thousands(t.n))
	}
	if more := len(s.ByTenant) - slackTenants; more > 0 {
		tenants = append(tenants, strconv.Itoa(more)+" more")
	}
	fmt.Fprintf(b, "\n*Tenants*: %s", strings.Join(tenants, " · "))
	fmt.Fprintf(b, "\n*Example*: %s at %s", slackCode(s.Example.Subject), s.Example.Time.UTC().Format("2006-01-02 15:04:05 MST"))
}

// lately says how long the summary covers, unless that rounds to nothing,
// as it does for the first alert of a burst.
func lately(s Summary) string {
	d := s.Until.Sub(s.Since).Round(time.Second)
	if d <= 0 {
		return ""
	}
	return " in the last " + d.String()
}

// slackEscape escapes what Slack reads as markup: "<!channel>" in a reason
// must not notify a whole channel.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

// slackCode shows s as inline code, so its *, _ and ~ stay as they are.
func slackCode(s string) string {
	if s == "" {
		return "(none)"
	}
	return "`" + slackEscape(strings.ReplaceAll(s, "`", "'")) + "`"
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return thousands(n) + " " + noun + "s"
}

// thousands writes a count as people read it: 2,319.
func thousands(n int) string { return english.Sprintf("%d", n) }

var english = message.NewPrinter(language.English)
