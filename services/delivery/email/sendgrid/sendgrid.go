// Package sendgrid sends email through SendGrid's v3 Mail Send API.
//
// Every Send is exactly one HTTP request. sendgrid-go's rate-limit retries
// are bypassed on purpose: whether to wait, retry or move on to the next
// provider is the delivery chain's decision, made from the classified error
// (permanent, transient with Retry-After, ambiguous) that Send returns.
//
// The notification id, dedupe key and tenant travel as custom_args, which
// SendGrid echoes in its event webhooks, so that delivered, bounced and
// opened events can be matched to Herald's ledger.
package sendgrid

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	netmail "net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sendgrid/rest"
	sg "github.com/sendgrid/sendgrid-go"
	"github.com/sendgrid/sendgrid-go/helpers/mail"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/provider"
)

// Name is the provider's name in receipts, logs and metrics.
const Name = "sendgrid"

const (
	defaultEndpoint = "https://api.sendgrid.com"
	sendPath        = "/v3/mail/send"
)

// Custom argument names, as they appear in SendGrid's event webhooks.
const (
	ArgDedupeKey      = "herald_dedupe_key"
	ArgNotificationID = "herald_notification_id"
	ArgTenant         = "herald_tenant"
)

// Config configures the SendGrid provider.
type Config struct {
	// APIKey authenticates every request. Required. It is a secret: it
	// goes only into the Authorization header, never into an error.
	APIKey string
	// Endpoint replaces the API's base URL, https://api.sendgrid.com, e.g.
	// with http://127.0.0.1:3000 for a local emulator or a test fake.
	Endpoint string
}

// Format keeps the API key out of any log line that prints the config.
func (c Config) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "sendgrid.Config{APIKey: [redacted], Endpoint: %q}", c.Endpoint)
}

// LogValue keeps the key out of structured logs, which would otherwise
// print the exported field.
func (c Config) LogValue() slog.Value { return slog.StringValue(fmt.Sprint(c)) }

// Provider sends email through SendGrid.
type Provider struct {
	key      string
	endpoint string
	// client is this provider's own: sendgrid-go's default shares
	// http.DefaultTransport with the whole process, whose idle connections
	// anything may close under it.
	client *rest.Client
}

// New checks cfg and returns a provider. It makes no request: a rejected key
// shows up as a permanent error on the first Send.
func New(cfg Config) (*Provider, error) {
	// Keys are often read from files or environment variables that end in
	// a newline; SendGrid's keys never contain whitespace.
	key := strings.TrimSpace(cfg.APIKey)
	if key == "" {
		return nil, errors.New("sendgrid: an API key is required")
	}
	if strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		// Such a key would only fail later, inside net/http; say so now,
		// without quoting it.
		return nil, errors.New("sendgrid: the API key contains whitespace or control characters")
	}
	endpoint := strings.TrimRight(cfg.Endpoint, "/")
	if endpoint == "" {
		endpoint = defaultEndpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		// The endpoint is not a secret, but a key pasted into the wrong
		// field would be.
		return nil, fmt.Errorf("sendgrid: endpoint %q is not a base URL such as https://api.sendgrid.com",
			strings.ReplaceAll(cfg.Endpoint, key, "[redacted]"))
	}
	return &Provider{key: key, endpoint: endpoint, client: &rest.Client{HTTPClient: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}}, nil
}

// Format keeps the API key out of any log line that prints the provider,
// including a config struct that holds it.
func (p *Provider) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "sendgrid.Provider{Endpoint: %q}", p.endpoint)
}

// Send posts msg to SendGrid. The receipt's message id is SendGrid's
// X-Message-Id, which begins the sg_message_id of its event webhooks.
func (p *Provider) Send(ctx context.Context, msg email.Message) (provider.Receipt, error) {
	body, err := requestBody(msg)
	if err != nil {
		return provider.Receipt{}, err
	}
	// Nothing has been sent yet, so an expired deadline here is a plain
	// transient failure, not an ambiguous one.
	if err := ctx.Err(); err != nil {
		return provider.Receipt{}, fmt.Errorf("not sent: %w", err)
	}

	req := sg.GetRequest(p.key, sendPath, p.endpoint)
	req.Method = rest.Post
	req.Body = body
	// SendWithContext is a single attempt, and the request carries ctx: the
	// client has no timeout of its own, so ctx is what bounds the call.
	resp, err := p.client.SendWithContext(ctx, req)
	if resp == nil {
		if err == nil {
			err = errors.New("no response")
		}
		return provider.Receipt{}, provider.NetworkError(err)
	}
	// A non-nil error alongside a response means the body could not be read
	// in full; the status and headers still say what SendGrid decided.
	header := http.Header(resp.Headers)

	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if id := header.Get("X-Message-Id"); id != "" {
			return provider.Receipt{MessageID: id}, nil
		}
		// SendGrid said it accepted the message, so it may well go out;
		// without an id there is no receipt, and a retry may duplicate it.
		return provider.Receipt{}, &provider.TransientError{
			Err:       fmt.Errorf("HTTP %d without an X-Message-Id header", resp.StatusCode),
			Ambiguous: true,
		}
	}

	words := strings.ReplaceAll(providerWords(resp.Body), p.key, "[redacted]")
	if err != nil {
		words += " (reading the response: " + err.Error() + ")"
	}
	err = provider.HTTPError(resp.StatusCode, header, words)
	if resp.StatusCode == http.StatusTooManyRequests {
		// SendGrid's Mail Send API announces the end of the rate-limit
		// window in X-RateLimit-Reset rather than Retry-After.
		var t *provider.TransientError
		if errors.As(err, &t) && t.RetryAfter == 0 {
			t.RetryAfter = rateLimitReset(header, time.Now())
		}
	}
	return provider.Receipt{}, err
}

// requestBody renders msg as a v3 mail/send request.
func requestBody(msg email.Message) ([]byte, error) {
	to, err := netmail.ParseAddress(msg.To)
	if err != nil {
		return nil, provider.Permanentf("recipient %q: %w", msg.To, err)
	}
	from, err := netmail.ParseAddress(msg.From)
	if err != nil {
		return nil, provider.Permanentf("sender %q: %w", msg.From, err)
	}

	m := mail.NewV3Mail()
	m.SetFrom(mail.NewEmail(from.Name, from.Address))
	m.Subject = msg.Subject
	p := mail.NewPersonalization()
	p.AddTos(mail.NewEmail(msg.ToName, to.Address))
	m.AddPersonalizations(p)
	m.AddContent(mail.NewContent("text/plain", msg.Text))
	if msg.HTML != "" { // SendGrid wants text/plain first, then text/html
		m.AddContent(mail.NewContent("text/html", msg.HTML))
	}
	for _, a := range msg.Attachments {
		m.AddAttachment(mail.NewAttachment().
			SetContent(base64.StdEncoding.EncodeToString(a.Data)).
			SetType(a.ContentType).
			SetFilename(a.Filename).
			SetDisposition("attachment"))
	}
	m.SetCustomArg(ArgDedupeKey, msg.DedupeKey)
	m.SetCustomArg(ArgNotificationID, msg.ID)
	m.SetCustomArg(ArgTenant, msg.Tenant)
	// The same Message-ID on every resend lets mail clients thread, and
	// recipients' servers drop, a duplicate that slips through.
	m.SetHeader("Message-ID", "<"+msg.MessageID()+">")
	for _, h := range msg.Headers() {
		m.SetHeader(h[0], h[1])
	}

	// mail.GetRequestBody logs and swallows marshalling errors.
	body, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("sendgrid: encoding the request: %w", err)
	}
	return body, nil
}

// providerWords is what SendGrid said in an error body — each message with
// the field it concerns — or the body itself when it is not SendGrid's
// error format.
func providerWords(body string) string {
	var parsed struct {
		Errors []struct {
			Message string `json:"message"`
			Field   string `json:"field"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &parsed); err != nil {
		return body
	}
	var words []string
	for _, e := range parsed.Errors {
		switch {
		case e.Message != "" && e.Field != "":
			words = append(words, e.Message+" ("+e.Field+")")
		case e.Message != "":
			words = append(words, e.Message)
		}
	}
	if len(words) == 0 {
		return body
	}
	return strings.Join(words, "; ")
}

// rateLimitReset is how long until the X-RateLimit-Reset time (unix
// seconds), or 0 when there is none or it has passed.
func rateLimitReset(header http.Header, now time.Time) time.Duration {
	secs, err := strconv.ParseInt(strings.TrimSpace(header.Get("X-RateLimit-Reset")), 10, 64)
	if err != nil {
		return 0
	}
	if reset := time.Unix(secs, 0); reset.After(now) {
		return reset.Sub(now)
	}
	return 0
}
